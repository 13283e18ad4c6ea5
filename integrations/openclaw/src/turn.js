// One finished OpenClaw run -> one body for Reflection's POST /api/v1/turns.
//
// The rules match Reflection's importer (sessions_app/openclaw_import.py) so that a turn sent live and the
// same turn imported later are one turn: the session is the session key, the user message id is the run id,
// the user message is the run's user messages' text and the reply the assistant's text, joined the same way.

export const TOOL_TEXT_LIMIT = 4000; // Characters of a tool result kept (the importer keeps the same).

const SCOPES = new Set(["direct", "dm", "group", "channel", "thread"]);

/** The Reflection session id of an OpenClaw session key (the importer's reflection_session_id). */
export function reflectionSessionId(sessionKey) {
  return sessionKey.trim().replaceAll("%", "%25").replaceAll("/", "%2F").slice(0, 255);
}

/** `agent:<id>:<channel>:direct:<peer>` -> {agentId, channel, scope, peer}; `agent:<id>:main` -> {agentId}. */
export function parseSessionKey(sessionKey) {
  const parts = String(sessionKey).split(":");
  const out = { agentId: null, channel: null, scope: null, peer: null };
  let rest = parts;
  if (parts.length >= 2 && parts[0] === "agent") {
    out.agentId = parts[1];
    rest = parts.slice(2);
  }
  for (let index = 1; index < rest.length; index += 1) {
    if (SCOPES.has(rest[index])) {
      out.channel = rest[index - 1];
      out.scope = rest[index];
      out.peer = rest.slice(index + 1).join(":") || null;
      break;
    }
  }
  return out;
}

/** The text parts of a message, joined and trimmed (the importer's message_text). */
export function messageText(message) {
  const content = message?.content;
  if (typeof content === "string") return content.trim();
  if (!Array.isArray(content)) return "";
  return content
    .filter((part) => part && typeof part === "object" && part.type === "text")
    .map((part) => String(part.text ?? ""))
    .filter(Boolean)
    .join("\n")
    .trim();
}

function partKinds(message) {
  const content = message?.content;
  if (!Array.isArray(content)) return [];
  return content
    .filter((part) => part && typeof part === "object" && part.type && part.type !== "text")
    .map((part) => String(part.type));
}

/** A turn's user message: the texts of its user messages; a message without text names its parts. */
export function userText(messages) {
  return messages
    .map((message) => messageText(message) || `[${partKinds(message).join(", ") || "empty"} message]`)
    .join("\n\n");
}

export function toolResult(message) {
  const text = messageText(message);
  const out = {
    tool_call_id: message.toolCallId ?? null,
    tool_name: message.toolName ?? null,
    is_error: Boolean(message.isError),
    content: text.slice(0, TOOL_TEXT_LIMIT),
  };
  if (text.length > TOOL_TEXT_LIMIT) out.truncated_from = text.length;
  return out;
}

function isoTime(value, fallback) {
  if (typeof value === "number" && Number.isFinite(value)) return new Date(value).toISOString();
  if (typeof value === "string" && !Number.isNaN(Date.parse(value))) return new Date(value).toISOString();
  return fallback;
}

function replyMetadata(messages, event) {
  const meta = { run_id: event.runId ?? null };
  for (const message of messages) {
    if (message?.role === "toolResult") {
      (meta.tool_results ??= []).push(toolResult(message));
      continue;
    }
    if (message?.role !== "assistant") continue;
    for (const part of Array.isArray(message.content) ? message.content : []) {
      if (part?.type === "toolCall") {
        (meta.tool_calls ??= []).push({ id: part.id ?? null, name: part.name ?? null, arguments: part.arguments ?? null });
      } else if (part?.type === "thinking" && part.thinking) {
        (meta.thinking ??= []).push(String(part.thinking));
      }
    }
    if (message.model) meta.model = message.model;
    if (message.provider) meta.provider = message.provider;
    if (message.stopReason) meta.stop_reason = message.stopReason;
    if (message.errorMessage) meta.error = message.errorMessage;
    if (message.usage && typeof message.usage === "object") (meta.usage ??= []).push(message.usage);
  }
  if (typeof event.durationMs === "number") meta.duration_ms = event.durationMs;
  return meta;
}

/**
 * The body for POST /api/v1/turns, or null when the run holds no turn to send.
 *
 * @param {{runId?: string, messages: unknown[], success: boolean, durationMs?: number}} event  agent_end's event
 * @param {{agentId?: string, sessionKey?: string, sessionId?: string, channel?: string, messageProvider?: string,
 *          accountId?: string, chatId?: string, senderId?: string, trigger?: string, runId?: string}} ctx
 * @param {object | undefined} received  what message_received saw for this run (sender, message id)
 * @param {{contextWindow?: number, now?: Date}} options
 */
export function buildTurn(event, ctx, received, options = {}) {
  const messages = Array.isArray(event?.messages) ? event.messages.filter((m) => m && typeof m === "object") : [];
  let last = -1;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    if (messages[index].role === "user") {
      last = index;
      break;
    }
  }
  if (last < 0) return null;
  let first = last;
  while (first > 0 && messages[first - 1].role === "user") first -= 1;
  const users = messages.slice(first, last + 1);
  const after = messages.slice(last + 1);

  const sessionKey = ctx?.sessionKey || (ctx?.sessionId ? `openclaw:${ctx.sessionId}` : null);
  const runId = event.runId || ctx?.runId;
  if (!sessionKey || !runId) return null;
  const parsed = ctx?.sessionKey ? parseSessionKey(ctx.sessionKey) : {};
  const now = (options.now ?? new Date()).toISOString();
  const windowSize = options.contextWindow ?? 10;

  const replies = after.filter((m) => m.role === "assistant").map(messageText).filter(Boolean);
  const lastAssistant = after.filter((m) => m.role === "assistant").at(-1);
  const context = messages
    .slice(0, first)
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => ({ role: m.role === "user" ? "user" : "agent", message: messageText(m), timestamp: isoTime(m.timestamp, now) }))
    .filter((item) => item.message);
  const direct = parsed.scope === "direct" || parsed.scope === "dm";
  const sender = received?.senderName || received?.from || received?.senderId || ctx?.senderId || (direct ? parsed.peer : null);
  const channel = ctx?.channel || ctx?.messageProvider || received?.channel || parsed.channel || "openclaw";
  const target = parsed.peer || ctx?.chatId || received?.conversationId || null;
  const account = ctx?.accountId || received?.accountId || null;

  const userMeta = {
    openclaw: {
      agent_id: ctx?.agentId ?? parsed.agentId ?? null,
      session_id: ctx?.sessionId ?? null,
      trigger: ctx?.trigger ?? null,
    },
  };
  if (received?.messageId) userMeta.openclaw.message_id = received.messageId;
  if (received?.senderId) userMeta.openclaw.sender_id = received.senderId;
  if (received?.threadId !== undefined) userMeta.openclaw.thread_id = received.threadId;

  return {
    session: {
      id: reflectionSessionId(sessionKey),
      channel_id: String(channel).slice(0, 255),
      conversation_target: target ? String(target).slice(0, 255) : null,
      account_id: account ? String(account).slice(0, 255) : null,
      metadata: {
        source: "openclaw_plugin",
        session_key: ctx?.sessionKey ?? null,
        agent_id: ctx?.agentId ?? parsed.agentId ?? null,
      },
    },
    user_message: {
      id: String(runId).slice(0, 255),
      content: userText(users),
      from: sender ? String(sender).slice(0, 255) : null,
      metadata: userMeta,
    },
    agent_reply: {
      id: lastAssistant?.responseId ? String(lastAssistant.responseId).slice(0, 255) : null,
      content: replies.join("\n\n"),
      metadata: replyMetadata(after, { ...event, runId }),
    },
    context: windowSize > 0 ? context.slice(-windowSize) : [],
    created_at: isoTime(users[0].timestamp, now),
  };
}
