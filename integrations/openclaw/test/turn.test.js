import assert from "node:assert/strict";
import { test } from "node:test";

import { buildTurn, messageText, parseSessionKey, reflectionSessionId, TOOL_TEXT_LIMIT } from "../src/turn.js";

// The shapes below are those of a captured agent_end of openclaw@2026.9.6 (a read tool call and its result).
const HISTORY = [
  { role: "user", content: "Hello there", timestamp: 1795593832685, idempotencyKey: "e624:user" },
  {
    role: "assistant",
    content: [{ type: "text", text: "Hello from fake" }],
    responseId: "chatcmpl-1",
    timestamp: 1795593837039,
    __openclaw: { runId: "09c4" },
  },
];
const RUN = [
  { role: "user", content: [{ type: "text", text: "请读一下 notes.txt" }], timestamp: 1795593990829 },
  {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "I should read it." },
      { type: "toolCall", id: "call_5eb", name: "read", arguments: { path: "notes.txt" } },
    ],
    model: "fake-model-1",
    provider: "fake",
    stopReason: "toolUse",
    usage: { input: 11, output: 7 },
  },
  {
    role: "toolResult",
    toolCallId: "call_5eb",
    toolName: "read",
    content: [{ type: "text", text: "Line 0: Tokyo" }],
    isError: false,
  },
  {
    role: "assistant",
    content: [{ type: "text", text: "The file says: Line 0: Tokyo " }],
    responseId: "chatcmpl-2",
    stopReason: "stop",
    usage: { input: 12, output: 8 },
  },
];
const EVENT = { runId: "eee7", messages: [...HISTORY, ...RUN], success: true, durationMs: 529 };
const CTX = { runId: "eee7", agentId: "main", sessionKey: "agent:main:main", sessionId: "48a7", trigger: "user" };

test("a run becomes one turn keyed by its run id in the session of its key", () => {
  const body = buildTurn(EVENT, CTX, undefined, { now: new Date("2026-11-25T08:00:00Z") });
  assert.equal(body.session.id, "agent:main:main");
  assert.equal(body.session.channel_id, "openclaw");
  assert.equal(body.user_message.id, "eee7");
  assert.equal(body.user_message.content, "请读一下 notes.txt");
  assert.equal(body.agent_reply.content, "The file says: Line 0: Tokyo");
  assert.equal(body.agent_reply.id, "chatcmpl-2");
  assert.equal(body.created_at, new Date(1795593990829).toISOString());
  assert.equal(body.turn_number, undefined); // Reflection numbers it; a resend is found by the run id.
});

test("tool calls, results, thinking and usage go in the reply's metadata", () => {
  const meta = buildTurn(EVENT, CTX).agent_reply.metadata;
  assert.deepEqual(meta.tool_calls, [{ id: "call_5eb", name: "read", arguments: { path: "notes.txt" } }]);
  assert.deepEqual(meta.tool_results, [
    { tool_call_id: "call_5eb", tool_name: "read", is_error: false, content: "Line 0: Tokyo" },
  ]);
  assert.deepEqual(meta.thinking, ["I should read it."]);
  assert.equal(meta.usage.length, 2);
  assert.equal(meta.stop_reason, "stop");
  assert.equal(meta.run_id, "eee7");
  assert.equal(meta.duration_ms, 529);
});

test("a failed tool keeps isError and a long result is cut", () => {
  const long = "x".repeat(TOOL_TEXT_LIMIT + 10);
  const messages = [
    { role: "user", content: "go" },
    { role: "toolResult", toolCallId: "c", toolName: "exec", isError: true, content: [{ type: "text", text: long }] },
    { role: "assistant", content: [{ type: "text", text: "failed" }] },
  ];
  const [result] = buildTurn({ ...EVENT, messages }, CTX).agent_reply.metadata.tool_results;
  assert.equal(result.is_error, true);
  assert.equal(result.content.length, TOOL_TEXT_LIMIT);
  assert.equal(result.truncated_from, TOOL_TEXT_LIMIT + 10);
});

test("the messages before the run are its context window, the newest kept", () => {
  const body = buildTurn(EVENT, CTX, undefined, { contextWindow: 1 });
  assert.deepEqual(
    body.context.map((item) => [item.role, item.message]),
    [["agent", "Hello from fake"]],
  );
  assert.equal(buildTurn(EVENT, CTX, undefined, { contextWindow: 0 }).context.length, 0);
  assert.equal(buildTurn(EVENT, CTX).context.length, 2);
});

test("consecutive user messages are one turn; a message without text names its parts", () => {
  const messages = [
    { role: "user", content: [{ type: "image", data: "…" }] },
    { role: "user", content: "What is this?" },
    { role: "assistant", content: [{ type: "text", text: "A cat." }] },
  ];
  assert.equal(buildTurn({ ...EVENT, messages }, CTX).user_message.content, "[image message]\n\nWhat is this?");
});

test("channel, peer and sender come from the session key and message_received", () => {
  const ctx = { ...CTX, sessionKey: "agent:main:telegram:direct:4711", channel: "telegram", accountId: "bot" };
  const received = { from: "Ada", senderId: "4711", messageId: "m-99" };
  const body = buildTurn(EVENT, ctx, received);
  assert.equal(body.session.id, "agent:main:telegram:direct:4711");
  assert.equal(body.session.channel_id, "telegram");
  assert.equal(body.session.conversation_target, "4711");
  assert.equal(body.session.account_id, "bot");
  assert.equal(body.user_message.from, "Ada");
  assert.equal(body.user_message.metadata.openclaw.message_id, "m-99");
  // Without message_received, a direct chat's peer is the sender.
  assert.equal(buildTurn(EVENT, { ...ctx, channel: undefined }).user_message.from, "4711");
  assert.equal(buildTurn(EVENT, { ...ctx, channel: undefined }).session.channel_id, "telegram");
});

test("a run without a user message, a session or a run id is no turn", () => {
  assert.equal(buildTurn({ ...EVENT, messages: [HISTORY[1]] }, CTX), null);
  assert.equal(buildTurn(EVENT, { ...CTX, sessionKey: undefined, sessionId: undefined }), null);
  assert.equal(buildTurn({ ...EVENT, runId: undefined }, { ...CTX, runId: undefined }), null);
});

test("session keys: parsed, and made path-safe the importer's way", () => {
  assert.deepEqual(parseSessionKey("agent:ops:discord:group:123:456"), {
    agentId: "ops",
    channel: "discord",
    scope: "group",
    peer: "123:456",
  });
  assert.deepEqual(parseSessionKey("agent:main:main"), { agentId: "main", channel: null, scope: null, peer: null });
  assert.equal(reflectionSessionId(" agent:main:a/b%c "), "agent:main:a%2Fb%25c");
  assert.equal(messageText({ content: [{ type: "text", text: " a" }, { type: "thinking" }, { type: "text", text: "b " }] }), "a\nb");
});
