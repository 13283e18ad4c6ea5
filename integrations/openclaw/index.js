// The Reflection plugin for OpenClaw: every finished user turn goes to Reflection's POST /api/v1/turns.
//
// Hooks: `message_received` remembers who sent a channel message (sender, message id) for its run;
// `agent_end` builds the turn from the run's messages and sends it. Failed runs and runs not triggered by a
// user (heartbeats, cron, follow-ups) are skipped. A Reflection that is down costs at most `timeoutMs` per
// turn: the turn goes to a JSONL retry queue and is sent before the next one. OpenClaw needs
// `plugins.entries.reflection.hooks.allowConversationAccess: true` to give a plugin `agent_end`.

import { join } from "node:path";
import { homedir } from "node:os";

import { TurnSender } from "./src/sender.js";
import { buildTurn } from "./src/turn.js";

export { buildTurn, TurnSender };

const RECEIVED_KEPT = 200; // Sender facts kept for runs that have not ended yet.

export function resolveConfig(raw, { stateDir, env = process.env } = {}) {
  const config = raw && typeof raw === "object" ? raw : {};
  const baseUrl = typeof config.baseUrl === "string" && config.baseUrl.trim() ? config.baseUrl.trim() : null;
  const base = stateDir || env.OPENCLAW_STATE_DIR || join(homedir(), ".openclaw");
  return {
    baseUrl,
    apiKey: config.apiKey || env.REFLECTION_API_KEY || undefined,
    timeoutMs: Number.isInteger(config.timeoutMs) ? config.timeoutMs : 5000,
    agents: Array.isArray(config.agents) ? config.agents.map(String).filter(Boolean) : [],
    contextWindow: Number.isInteger(config.contextWindow) ? config.contextWindow : 10,
    queueFile: config.queueFile || join(base, "reflection", "turn-queue.jsonl"),
    maxQueuedTurns: Number.isInteger(config.maxQueuedTurns) ? config.maxQueuedTurns : 10000,
  };
}

/** Whether agent_end's run should be sent: a successful, user-triggered run of an allowed agent. */
export function shouldSend(event, ctx, config) {
  if (!event || event.success !== true) return false;
  if (ctx?.trigger && ctx.trigger !== "user") return false;
  if (config.agents.length > 0 && !config.agents.includes(ctx?.agentId ?? "")) return false;
  return true;
}

export function register(api) {
  const logger = api.logger ?? console;
  let stateDir;
  try {
    stateDir = api.runtime?.state?.resolveStateDir?.();
  } catch {
    stateDir = undefined;
  }
  const config = resolveConfig(api.pluginConfig, { stateDir });
  if (!config.baseUrl) {
    logger.warn?.("reflection: no baseUrl configured (plugins.entries.reflection.config.baseUrl); not sending turns");
    return;
  }
  const sender = new TurnSender({ ...config, logger });
  const received = new Map(); // runId or session key -> what message_received saw.

  api.on("message_received", (event, ctx) => {
    const facts = {
      from: event?.from,
      senderId: event?.senderId ?? ctx?.senderId,
      messageId: event?.messageId ?? ctx?.messageId,
      threadId: event?.threadId,
      channel: ctx?.channelId,
      accountId: ctx?.accountId,
      conversationId: ctx?.conversationId,
    };
    for (const key of [event?.runId ?? ctx?.runId, event?.sessionKey ?? ctx?.sessionKey]) {
      if (!key) continue;
      received.delete(key);
      received.set(key, facts);
    }
    while (received.size > RECEIVED_KEPT) received.delete(received.keys().next().value);
  });

  api.on("agent_end", async (event, ctx) => {
    try {
      if (!shouldSend(event, ctx, config)) return;
      const runId = event.runId ?? ctx?.runId;
      const facts = (runId && received.get(runId)) || (ctx?.sessionKey && received.get(ctx.sessionKey)) || undefined;
      if (runId) received.delete(runId);
      const body = buildTurn(event, ctx, facts, { contextWindow: config.contextWindow });
      if (!body) return;
      await sender.send(body);
    } catch (error) {
      logger.warn?.(`reflection: turn not sent: ${error?.message}`);
    }
  });
}

export default {
  id: "reflection",
  name: "Reflection",
  description: "Sends every finished agent turn to Reflection, which decides what the agent remembers.",
  register,
};
