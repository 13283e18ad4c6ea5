"""Learning guardrails overhead on the conversation path: ingest plus feedback, guardrails on and off.

The seed's criterion (002 §7): "the P95 of the normal conversation path rises < 10 %"; the issue's
target is < +5 %.

Method, per database (SQLite with the filesystem broker; PostgreSQL with Redis as broker, cache and
rate-limit counter), in one run of this script:
- two services side by side in fresh workspaces, each under gunicorn with 2 sync workers: ON
  (``LEARNING_GUARDRAILS_ENABLED=true``, ``LEARNING_SHADOW_MODE=false``: every guard runs and applies,
  accepted facts are handed to the guardian queue) and OFF (``LEARNING_GUARDRAILS_ENABLED=false``: the
  feedback is only stored on the turn). No Celery worker runs, so neither the gate nor the guardian
  competes for the two cores; the tasks are only published.
- each service first receives 400 turns (the feedback targets).
- then both receive the same open-loop load at the same time, interleaved request by request (so that
  whatever else the machine is doing hits both alike): a fixed rate per service, 4 of 5 requests
  ``POST /api/v1/turns`` (a 10-message context), 1 of 5 ``POST /api/v1/traces/{id}/feedback`` from one
  of 50 users (2/3 up, 1/3 down with a reason that becomes a rule, conflicts with one, or is junk).
  Latency counts from each request's scheduled send time. Because the two services share the cores,
  the extra CPU of ON also slows OFF a little, so the difference understates ON's cost slightly.
- reported: p50/p95/p99 of the ingest requests (the conversation path), of the feedback requests, and
  of all requests, ON vs OFF, and the p95 overhead of ON over OFF; and, measured before the load, the
  median time of a request sent alone (no queue), which the machine's other work disturbs far less.

Usage: python benchmarks/guardrails.py [--quick] [--no-postgres] [--rate 20] [--pg-rate 10] [--rounds 3]
       [--seconds 10] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import statistics
import sys
import time
import urllib.request
import uuid
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._harness import ROOT, _request, build_request, machine, service, table  # noqa: E402

TOKEN = "bench-learning-token"
REDIS_URL = os.environ.get("BENCH_GUARDRAILS_REDIS_URL", "redis://127.0.0.1:6379/11")
USERS = 50
TARGETS = 400
CONTEXT = [
    {
        "role": "user" if i % 2 == 0 else "agent",
        "message": f"context message {i} " * 8,
        "timestamp": 1_700_000_000_000 + i,
    }
    for i in range(10)
]
REASONS = [
    "Never use emoji in replies",
    "Use more emoji in replies, it feels friendlier",
    "Replies are too long, keep them shorter",
    "Send deploy questions to the ops channel",
    "Never paste tokens or passwords into the chat",
    "ok",
]


def turn_body(i: int, tag: str) -> dict:
    session = f"channel:bench:{i % 50}"
    return {
        "session": {"id": session, "channel_id": "bench"},
        "user_message": {
            "id": f"m-{tag}-{i}-{uuid.uuid4().hex[:8]}",
            "content": f"I prefer the weekly report for project {i} on Fridays at 09:00 UTC, as bullet points.",
        },
        "agent_reply": {"content": f"Noted: project {i} reports on Fridays at 09:00 UTC, in bullet points."},
        "context": CONTEXT,
    }


def feedback_body(k: int) -> dict:
    """The k-th feedback: users in turn, 2 of 3 up, 1 of 3 down with one of the reasons."""
    user = f"user-{k % USERS}"
    if k % 3 == 2:
        return {"user_id": user, "feedback": "down", "reason": REASONS[(k // 3) % len(REASONS)]}
    return {"user_id": user, "feedback": "up"}


def ingest_targets(port: int, key: str, n: int) -> list[str]:
    ids = []
    for i in range(n):
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v1/turns",
            data=json.dumps(turn_body(i, "target")).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as response:
            ids.append(json.loads(response.read())["id"])
    return ids


class Target:
    def __init__(self, label: str, port: int, key: str, turn_ids: list[str]):
        self.label, self.port, self.key, self.turn_ids = label, port, key, turn_ids
        self.latencies: dict[str, list[float]] = {"ingest": [], "feedback": []}
        self.statuses: dict[int, int] = {}
        self.sent = 0

    def make(self, i: int) -> tuple[str, bytes]:
        n = self.sent + i
        if n % 5 == 4:
            k = n // 5
            turn_id = self.turn_ids[k % len(self.turn_ids)]
            headers = {"X-Learning-Token": TOKEN}
            return "feedback", build_request("POST", f"/api/v1/traces/{turn_id}/feedback", headers, feedback_body(k))
        headers = {"Authorization": f"Bearer {self.key}"}
        return "ingest", build_request("POST", "/api/v1/turns", headers, turn_body(n, self.label))


def open_loop_round(targets: list[Target], *, rate: float, seconds: float) -> None:
    """Each target gets ``rate`` requests/s for ``seconds``, interleaved: target j's i-th request is
    scheduled at ``start + (i + j / len(targets)) / rate``, so both configurations share the machine's
    conditions from moment to moment (a shared CI machine is never quiet for long)."""
    total = int(rate * seconds)
    plan = [(t, j, i, *t.make(i)) for j, t in enumerate(targets) for i in range(total)]

    async def main() -> None:
        start = time.perf_counter()

        async def one(target: Target, j: int, i: int, kind: str, raw: bytes) -> None:
            scheduled = start + (i + j / len(targets)) / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            status = await _request(target.port, raw)
            target.latencies[kind].append((time.perf_counter() - scheduled) * 1000)
            target.statuses[status] = target.statuses.get(status, 0) + 1

        await asyncio.gather(*(one(*step) for step in plan))

    asyncio.run(main())
    for target in targets:
        target.sent += total


def service_times(targets: list[Target], *, count: int = 100) -> dict[tuple[str, str], float]:
    """Median time of one request at a time (no queue), alternating the targets request by request."""
    times: dict[tuple[str, str], list[float]] = {}

    async def main() -> None:
        for i in range(count):
            for target in targets:
                kind, raw = target.make(i)
                started = time.perf_counter()
                await _request(target.port, raw)
                times.setdefault((target.label, kind), []).append((time.perf_counter() - started) * 1000)

    asyncio.run(main())
    for target in targets:
        target.sent += count
    return {key: round(statistics.median(values), 2) for key, values in times.items()}


def pct(data: list[float], p: float) -> float:
    data = sorted(data)
    return data[min(len(data) - 1, int(round(p / 100 * (len(data) - 1))))] if data else float("nan")


def measure(database: str, *, rate: float, seconds: float, rounds: int) -> tuple[list[dict], dict]:
    from benchmarks import _harness

    common = {"LEARNING_FEEDBACK_TOKEN": TOKEN, "LEARNING_RATE_LIMIT_PER_MIN": "20", "LOG_LEVEL": "ERROR"}
    configs = {
        "on": {**common, "LEARNING_GUARDRAILS_ENABLED": "true", "LEARNING_SHADOW_MODE": "false"},
        "off": {**common, "LEARNING_GUARDRAILS_ENABLED": "false"},
    }
    targets: dict[str, Target] = {}
    base_pg, base_redis = _harness.PG_URL, _harness.BENCH_REDIS_URL
    with ExitStack() as stack:
        for label, env in configs.items():
            # On PostgreSQL each service gets a database of its own (Redis, with no worker, is shared); the
            # Redis database is this benchmark's own, so that other benchmarks' flushes do not meet it.
            _harness.PG_URL, _harness.BENCH_REDIS_URL = f"{base_pg}_{label}", REDIS_URL
            try:
                svc = stack.enter_context(service(database, **env))
            finally:
                _harness.PG_URL, _harness.BENCH_REDIS_URL = base_pg, base_redis
            key = svc.api_key("ingest", "read")
            svc.start_web(workers=2)
            targets[label] = Target(label, svc.port, key, ingest_targets(svc.port, key, TARGETS))
        name = "postgres + redis" if database == "postgres" else "sqlite"
        return run_rounds(targets, name, rate=rate, seconds=seconds, rounds=rounds)


def run_rounds(targets: dict[str, Target], database: str, *, rate: float, seconds: float, rounds: int):
    open_loop_round(list(targets.values()), rate=rate, seconds=2)  # Warm-up: imports, connections.
    alone = service_times(list(targets.values()))
    for target in targets.values():
        target.latencies = {"ingest": [], "feedback": []}
        target.statuses = {}
    for _ in range(rounds):
        open_loop_round(list(targets.values()), rate=rate, seconds=seconds)
    rows = []
    for label, target in targets.items():
        everything = target.latencies["ingest"] + target.latencies["feedback"]
        for kind, data in (("ingest", target.latencies["ingest"]), ("feedback", target.latencies["feedback"]),
                           ("all", everything)):  # fmt: skip
            rows.append(
                {
                    "database": database,
                    "rate": rate,
                    "guardrails": label,
                    "requests": kind,
                    "n": len(data),
                    "p50_ms": round(pct(data, 50), 2),
                    "p95_ms": round(pct(data, 95), 2),
                    "p99_ms": round(pct(data, 99), 2),
                    "errors": sum(v for k, v in target.statuses.items() if k >= 500),
                    "429s": target.statuses.get(429, 0) if kind != "ingest" else 0,
                }
            )
    p95 = {(r["guardrails"], r["requests"]): r["p95_ms"] for r in rows}
    overhead = {
        kind: round((p95[("on", kind)] - p95[("off", kind)]) / p95[("off", kind)] * 100, 1)
        for kind in ("ingest", "feedback", "all")
    }
    summary = {
        "database": database,
        "rate": rate,
        **{f"p95_overhead_{k}_pct": v for k, v in overhead.items()},
        **{
            f"alone_{kind}_ms_{label}": alone.get((label, kind)) for kind in ("ingest", "feedback") for label in targets
        },
    }
    return rows, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short round (a smoke test)")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--rate", type=float, default=20.0, help="requests per second per service (default 20)")
    parser.add_argument("--pg-rate", type=float, default=10.0, help="the same on PostgreSQL (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per round (default 10)")
    parser.add_argument("--no-write", action="store_true", help="do not append to BENCHMARKS.md")
    args = parser.parse_args()
    rounds, seconds = (1, 3.0) if args.quick else (args.rounds, args.seconds)

    load_before = os.getloadavg()[0]
    rows, summaries = [], []
    rates = {"sqlite": args.rate, "postgres": args.pg_rate}
    for database in ("sqlite",) if args.no_postgres else ("sqlite", "postgres"):
        got, summary = measure(database, rate=rates[database], seconds=seconds, rounds=rounds)
        rows += got
        summaries.append(summary)
    load_note = (
        f"Load average (1 min) of the machine: {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
        f" ({os.cpu_count()} cores); above the core count, other processes competed for the CPU."
    )
    print(table(rows))
    print(table(summaries))
    print(load_note)
    if args.no_write or args.quick:
        return
    lines = [
        "",
        f"## Learning guardrails overhead (`benchmarks/guardrails.py`, {dt.date.today().isoformat()})",
        "",
        f"Machine: {machine()}. Load generator in the same machine (asyncio, one connection per request).",
        "Two services side by side per database, gunicorn with 2 sync workers each, no Celery worker (tasks are",
        "only published): guardrails ON (`LEARNING_GUARDRAILS_ENABLED=true`, `LEARNING_SHADOW_MODE=false`, every",
        "guard runs and applies) and OFF (`LEARNING_GUARDRAILS_ENABLED=false`, feedback only stored on the turn).",
        f"Both under the same open loop at the same time, interleaved, {args.rate:g} requests/s each on SQLite and",
        f"{args.pg_rate:g} on PostgreSQL (the rate column), {rounds} x",
        f"{seconds:g} s: 4 of 5 requests ingest a turn (10-message context), 1 of 5 is feedback on one of 400",
        "earlier turns from one of 50 users (2/3 up, 1/3 down with a reason). Latency from each request's",
        "scheduled send time.",
        "",
        table(rows),
        "",
        table(summaries),
        "",
        load_note,
        "",
        "Target (issue 7): the p95 of the conversation path (ingest) rises < 5 % with the guardrails on",
        "(seed 002 §7: < 10 %).",
        "",
    ]
    with (ROOT / "BENCHMARKS.md").open("a") as fh:
        fh.write("\n".join(lines))
    print(json.dumps({"written": "BENCHMARKS.md"}))


if __name__ == "__main__":
    main()
