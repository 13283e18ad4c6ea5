import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import plugin, { resolveConfig, shouldSend } from "../index.js";
import { TurnSender } from "../src/sender.js";

const EVENT = {
  runId: "run-1",
  success: true,
  messages: [
    { role: "user", content: "Remember that I prefer green tea." },
    { role: "assistant", content: [{ type: "text", text: "Noted." }] },
  ],
};
const CTX = { runId: "run-1", agentId: "main", sessionKey: "agent:main:main", sessionId: "s1", trigger: "user" };

/** A Reflection stand-in: answers each POST with the next status of `statuses` (then 201), records bodies. */
async function fakeReflection(statuses = []) {
  const received = [];
  const server = createServer((request, response) => {
    let data = "";
    request.on("data", (chunk) => (data += chunk));
    request.on("end", () => {
      received.push({ url: request.url, auth: request.headers.authorization, body: JSON.parse(data) });
      const status = statuses.shift() ?? 201;
      response.writeHead(status, { "Content-Type": "application/json" });
      response.end(JSON.stringify(status < 300 ? { id: "t" } : { error: { code: "x", message: "no" } }));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}`, received, close: () => new Promise((r) => server.close(r)) };
}

function fakeApi(config) {
  const handlers = {};
  const warnings = [];
  return {
    api: {
      pluginConfig: config,
      logger: { warn: (m) => warnings.push(m), info: () => {} },
      runtime: { state: { resolveStateDir: () => mkdtempSync(join(tmpdir(), "oc-state-")) } },
      on: (name, handler) => (handlers[name] = handler),
    },
    handlers,
    warnings,
  };
}

test("agent_end posts the turn with the API key; message_received supplies the sender", async () => {
  const reflection = await fakeReflection();
  const { api, handlers } = fakeApi({ baseUrl: `${reflection.url}/`, apiKey: "k-1" });
  plugin.register(api);
  handlers.message_received({ from: "Ada", messageId: "m-1", runId: "run-1" }, { channelId: "telegram" });
  await handlers.agent_end(EVENT, CTX);
  await reflection.close();
  assert.equal(reflection.received.length, 1);
  const [{ url, auth, body }] = reflection.received;
  assert.equal(url, "/api/v1/turns");
  assert.equal(auth, "Bearer k-1");
  assert.equal(body.user_message.id, "run-1");
  assert.equal(body.user_message.from, "Ada");
  assert.equal(body.session.channel_id, "telegram");
});

test("failed runs, other triggers and agents outside the allow-list are not sent", () => {
  const config = resolveConfig({ baseUrl: "http://x", agents: ["main"] });
  assert.equal(shouldSend(EVENT, CTX, config), true);
  assert.equal(shouldSend({ ...EVENT, success: false }, CTX, config), false);
  assert.equal(shouldSend(EVENT, { ...CTX, trigger: "heartbeat" }, config), false);
  assert.equal(shouldSend(EVENT, { ...CTX, agentId: "ops" }, config), false);
  assert.equal(shouldSend(EVENT, { ...CTX, agentId: "ops" }, resolveConfig({ baseUrl: "http://x" })), true);
});

test("without a baseUrl the plugin registers nothing and says why", () => {
  const { api, handlers, warnings } = fakeApi({});
  plugin.register(api);
  assert.deepEqual(Object.keys(handlers), []);
  assert.match(warnings[0], /no baseUrl/);
});

test("an unreachable Reflection queues the turn; the next turn sends the queue first, in order", async () => {
  const queueFile = join(mkdtempSync(join(tmpdir(), "oc-q-")), "q", "turns.jsonl");
  const down = new TurnSender({ baseUrl: "http://127.0.0.1:9", timeoutMs: 500, queueFile, logger: {} });
  assert.equal(await down.send({ user_message: { id: "a" } }), "queued");
  assert.equal(await down.send({ user_message: { id: "b" } }), "queued");
  assert.equal(readFileSync(queueFile, "utf8").trim().split("\n").length, 2);

  const reflection = await fakeReflection();
  const up = new TurnSender({ baseUrl: reflection.url, timeoutMs: 2000, queueFile, logger: {} });
  assert.equal(await up.send({ user_message: { id: "c" } }), "sent");
  await reflection.close();
  assert.deepEqual(
    reflection.received.map((r) => r.body.user_message.id),
    ["a", "b", "c"],
  );
  assert.equal(readFileSync(queueFile, "utf8"), "");
});

test("5xx and 429 are retried later; a refusal (409, 422) is dropped, not queued", async () => {
  const queueFile = join(mkdtempSync(join(tmpdir(), "oc-q-")), "turns.jsonl");
  const reflection = await fakeReflection([503, 409, 429]);
  const sender = new TurnSender({ baseUrl: reflection.url, queueFile, logger: {} });
  assert.equal(await sender.post({ user_message: { id: "a" } }), "retry");
  assert.equal(await sender.send({ user_message: { id: "b" } }), "refused");
  assert.equal(existsSync(queueFile), false);
  assert.equal(await sender.send({ user_message: { id: "c" } }), "queued");
  await reflection.close();
  assert.equal(readFileSync(queueFile, "utf8").trim().split("\n").length, 1);
});

test("a slow Reflection costs at most timeoutMs, and the agent_end handler never throws", async () => {
  const server = createServer(() => {}); // Accepts and never answers.
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const queueFile = join(mkdtempSync(join(tmpdir(), "oc-q-")), "turns.jsonl");
  const { api, handlers } = fakeApi({ baseUrl: `http://127.0.0.1:${server.address().port}`, timeoutMs: 300, queueFile });
  plugin.register(api);
  const started = Date.now();
  await handlers.agent_end(EVENT, CTX);
  const elapsed = Date.now() - started;
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  assert.ok(elapsed < 3000, `took ${elapsed} ms`);
  assert.equal(readFileSync(queueFile, "utf8").trim().split("\n").length, 1);
  await handlers.agent_end({ messages: null, success: true }, CTX); // Malformed: ignored, no throw.
});

test("the queue keeps at most maxQueuedTurns, dropping the oldest", async () => {
  const queueFile = join(mkdtempSync(join(tmpdir(), "oc-q-")), "turns.jsonl");
  const sender = new TurnSender({ baseUrl: "http://127.0.0.1:9", queueFile, maxQueuedTurns: 2, logger: {} });
  for (const id of ["a", "b", "c"]) sender.enqueue({ user_message: { id } });
  assert.deepEqual(
    sender.readQueue().map((item) => item.body.user_message.id),
    ["b", "c"],
  );
});

test("a long queue is sent a slice per turn, within the flush budget", async () => {
  const queueFile = join(mkdtempSync(join(tmpdir(), "oc-q-")), "turns.jsonl");
  const reflection = await fakeReflection();
  const sender = new TurnSender({ baseUrl: reflection.url, queueFile, flushBudgetMs: 0, logger: {} });
  for (const id of ["a", "b", "c"]) sender.enqueue({ user_message: { id } });
  assert.equal(await sender.send({ user_message: { id: "d" } }), "queued"); // One sent, the rest wait their turn.
  await reflection.close();
  assert.deepEqual(
    reflection.received.map((r) => r.body.user_message.id),
    ["a"],
  );
  assert.deepEqual(
    sender.readQueue().map((item) => item.body.user_message.id),
    ["b", "c", "d"],
  );
});
