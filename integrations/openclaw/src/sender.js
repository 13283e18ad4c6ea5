// Posting turns to Reflection, with a local retry queue: an unreachable Reflection never blocks or breaks the
// agent. A turn that cannot be delivered now (network error, timeout, 408, 429, 5xx) is appended to a JSONL
// file and sent again, oldest first, before the next turn. Reflection answers a resent turn with the stored
// one (200), so a turn delivered twice is stored once. A refusal (another 4xx) is logged and dropped: sending
// it again would get the same answer.

import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

export function isRetryable(status) {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

export class TurnSender {
  /**
   * @param {{baseUrl: string, apiKey?: string, timeoutMs?: number, queueFile: string, maxQueuedTurns?: number,
   *          logger?: {info?: Function, warn?: Function}, fetch?: typeof fetch}} options
   */
  constructor(options) {
    this.endpoint = `${options.baseUrl.replace(/\/+$/, "")}/api/v1/turns`;
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.queueFile = options.queueFile;
    this.maxQueuedTurns = options.maxQueuedTurns ?? 10000;
    // OpenClaw gives an agent_end handler 30 s: a long queue is sent a slice per turn, within this budget.
    this.flushBudgetMs = options.flushBudgetMs ?? 10000;
    this.logger = options.logger ?? {};
    this.fetch = options.fetch ?? globalThis.fetch;
    this.flushing = null;
  }

  /** One POST: "sent", "refused" (a 4xx that will not change) or "retry". Never throws. */
  async post(body) {
    const headers = { "Content-Type": "application/json" };
    if (this.apiKey) headers.Authorization = `Bearer ${this.apiKey}`;
    try {
      const response = await this.fetch(this.endpoint, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      if (response.ok) return "sent";
      const detail = await response.text().catch(() => "");
      if (isRetryable(response.status)) {
        this.logger.warn?.(`reflection: ${response.status} from ${this.endpoint}; turn queued`);
        return "retry";
      }
      this.logger.warn?.(`reflection: turn ${body?.user_message?.id} refused (${response.status}): ${detail.slice(0, 300)}`);
      return "refused";
    } catch (error) {
      this.logger.warn?.(`reflection: cannot reach ${this.endpoint} (${error?.name ?? "error"}: ${error?.message}); turn queued`);
      return "retry";
    }
  }

  /** Send queued turns first (oldest first), then this one; queue it if Reflection cannot take it now. */
  async send(body) {
    try {
      const blocked = await this.flush();
      if (blocked) {
        this.enqueue(body); // Keep the order: an older turn is still waiting.
        return "queued";
      }
      const outcome = await this.post(body);
      if (outcome === "retry") {
        this.enqueue(body);
        return "queued";
      }
      return outcome;
    } catch (error) {
      this.logger.warn?.(`reflection: turn not sent: ${error?.message}`);
      return "error";
    }
  }

  readQueue() {
    if (!existsSync(this.queueFile)) return [];
    const items = [];
    for (const line of readFileSync(this.queueFile, "utf8").split("\n")) {
      if (!line.trim()) continue;
      try {
        items.push(JSON.parse(line));
      } catch {
        this.logger.warn?.(`reflection: skipped an unreadable line of ${this.queueFile}`);
      }
    }
    return items;
  }

  enqueue(body) {
    mkdirSync(dirname(this.queueFile), { recursive: true });
    appendFileSync(this.queueFile, `${JSON.stringify({ queued_at: new Date().toISOString(), body })}\n`);
    const items = this.readQueue();
    if (items.length > this.maxQueuedTurns) {
      this.logger.warn?.(`reflection: queue over ${this.maxQueuedTurns} turns; dropping the oldest`);
      this.writeQueue(items.slice(-this.maxQueuedTurns));
    }
  }

  writeQueue(items) {
    mkdirSync(dirname(this.queueFile), { recursive: true });
    const temporary = `${this.queueFile}.${process.pid}.tmp`;
    writeFileSync(temporary, items.map((item) => `${JSON.stringify(item)}\n`).join(""));
    renameSync(temporary, this.queueFile); // Atomic: a crash leaves the old queue or the new one.
  }

  /** Send what is queued until the first turn that still cannot go or the budget is spent; true when some are
   * left. */
  async flush() {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      const items = this.readQueue();
      if (items.length === 0) return false;
      const deadline = Date.now() + this.flushBudgetMs;
      let done = 0;
      for (const item of items) {
        if (done > 0 && Date.now() > deadline) break; // At least one per turn, so the queue always moves.
        const outcome = await this.post(item.body);
        if (outcome === "retry") break;
        done += 1;
      }
      if (done > 0) {
        // Turns queued while this flush ran were appended after the ones read here: keep them.
        const now = this.readQueue();
        this.writeQueue(now.slice(done));
        this.logger.info?.(`reflection: sent ${done} queued turn(s)`);
      }
      return done < items.length;
    })();
    try {
      return await this.flushing;
    } finally {
      this.flushing = null;
    }
  }
}
