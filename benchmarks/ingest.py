"""Ingest throughput and latency over real HTTP, on SQLite and PostgreSQL, beside raw sqlite3.

Method: a fresh workspace per database; the service under gunicorn (2 sync workers) on loopback;
every request is a ``POST /api/v1/turns`` with a 10-message context into one of 50 sessions (the turn
number is left to the server). Two loads from an asyncio client in this process:
- closed loop: 16 concurrent clients, 3,000 requests: turns/s and p50/p95/p99;
- open loop: a fixed 200 requests/s for 10 s: p50/p95/p99 counted from each request's scheduled time.
The physical limit: the same rows (session upsert, turn, 10 context rows, one transaction per turn)
through Python's ``sqlite3`` with the same PRAGMAs, single-threaded; reported as turns/s and a ratio.

Usage: python benchmarks/ingest.py [--quick] [--no-postgres] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._harness import (
    BENCH_REDIS_URL,
    ROOT,
    build_request,
    machine,
    run_closed_loop,
    run_open_loop,
    service,
    table,
)  # noqa: E402

CONTEXT = [
    {
        "role": "user" if i % 2 == 0 else "agent",
        "message": f"context message {i} " * 8,
        "timestamp": 1_700_000_000_000 + i,
    }
    for i in range(10)
]


def turn_body(i: int) -> dict:
    session = f"channel:bench:{i % 50}"
    return {
        "session": {"id": session, "channel_id": "bench"},
        "user_message": {"id": f"m-{uuid.uuid4().hex}", "content": f"I prefer summaries on Fridays, note {i}."},
        "agent_reply": {"content": "Noted, I will send summaries on Fridays."},
        "context": CONTEXT,
    }


def raw_sqlite(turns: int, synchronous: str = "FULL") -> float:
    """Turns/s for the same rows through plain sqlite3: the floor under any framework."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "raw.db", isolation_level=None)
        for pragma in [
            "journal_mode=WAL",
            f"synchronous={synchronous}",
            "cache_size=-2000",
            "mmap_size=268435456",
            "foreign_keys=ON",
        ]:
            conn.execute(f"PRAGMA {pragma}")
        conn.executescript(
            """
            CREATE TABLE sessions (id TEXT PRIMARY KEY, channel_id TEXT NOT NULL, last_activity_at TEXT NOT NULL, created_at TEXT NOT NULL);
            CREATE TABLE turns (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id), turn_number INTEGER NOT NULL,
                user_message_id TEXT, user_message_content TEXT NOT NULL, agent_message_content TEXT NOT NULL, created_at TEXT NOT NULL,
                UNIQUE(session_id, turn_number));
            CREATE UNIQUE INDEX turns_msg ON turns(session_id, user_message_id);
            CREATE TABLE contexts (id INTEGER PRIMARY KEY AUTOINCREMENT, turn_id TEXT NOT NULL REFERENCES turns(id), role TEXT NOT NULL,
                message TEXT NOT NULL, timestamp TEXT NOT NULL, sequence_number INTEGER NOT NULL, UNIQUE(turn_id, sequence_number));
            """
        )
        started = time.perf_counter()
        for i in range(turns):
            body = turn_body(i)
            now = dt.datetime.now(dt.UTC).isoformat()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET last_activity_at=excluded.last_activity_at",
                (body["session"]["id"], "bench", now, now),
            )
            n = conn.execute(
                "SELECT COALESCE(MAX(turn_number), 0) + 1 FROM turns WHERE session_id=?", (body["session"]["id"],)
            ).fetchone()[0]
            turn_id = uuid.uuid4().hex[:26]
            conn.execute(
                "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    turn_id,
                    body["session"]["id"],
                    n,
                    body["user_message"]["id"],
                    body["user_message"]["content"],
                    body["agent_reply"]["content"],
                    now,
                ),
            )
            conn.executemany(
                "INSERT INTO contexts (turn_id, role, message, timestamp, sequence_number) VALUES (?, ?, ?, ?, ?)",
                [(turn_id, c["role"], c["message"], now, k) for k, c in enumerate(body["context"])],
            )
            conn.execute("COMMIT")
        return turns / (time.perf_counter() - started)


def measure(database: str, total: int, seconds: float, label: str = "", **env: str) -> list[dict]:
    rows = []
    with service(database, **env) as svc:
        key = svc.api_key("ingest")
        svc.start_web(workers=2)
        headers = {"Authorization": f"Bearer {key}"}

        def make(i: int) -> bytes:
            return build_request("POST", "/api/v1/turns", headers, turn_body(i))

        run_closed_loop(svc.port, make, total=200, concurrency=8)  # Warm-up: imports, connections.
        for load, run in [
            ("closed loop, 16 clients", lambda: run_closed_loop(svc.port, make, total=total, concurrency=16)),
            ("open loop, 200 req/s", lambda: run_open_loop(svc.port, make, rate=200, seconds=seconds)),
        ]:
            server_cpu, client_cpu, load_before = svc.cpu_seconds(), time.process_time(), os.getloadavg()[0]
            result = run()
            n = len(result.latencies_ms)
            server_ms = (svc.cpu_seconds() - server_cpu) / n * 1000
            client_ms = (time.process_time() - client_cpu) / n * 1000
            rows.append(
                {
                    "database": label or database,
                    "load": load,
                    **result.row(),
                    "server_cpu_ms": round(server_ms, 2),
                    "client_cpu_ms": round(client_ms, 2),
                    # What this machine's cores, doing nothing else, would sustain at this CPU cost per turn.
                    "cpu_bound_turns_s": round((os.cpu_count() or 1) * 1000 / (server_ms + client_ms)),
                    "loadavg": f"{load_before:.1f}-{os.getloadavg()[0]:.1f}",
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs (for a smoke test)")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="do not append to BENCHMARKS.md")
    args = parser.parse_args()
    total, seconds = (300, 2) if args.quick else (3000, 10)

    rows = measure("sqlite", total, seconds, "sqlite, filesystem broker")
    # The same SQLite database with Redis as the broker: what the per-turn gate hand-off costs.
    rows += measure("sqlite", total, seconds, "sqlite, redis broker", REDIS_URL=BENCH_REDIS_URL)
    if not args.no_postgres:
        rows += measure("postgres", total, seconds)
    raw_full = raw_sqlite(total)
    sqlite_rate = rows[0]["rate"]
    print(table(rows))
    summary = (
        f"raw sqlite3, same rows, synchronous=FULL, 1 thread: {raw_full:,.0f} turns/s; "
        f"Reflection on SQLite reaches {sqlite_rate / raw_full:.0%} of it over HTTP."
    )
    print(summary)
    if args.no_write:
        return
    report = "\n".join(
        [
            "",
            f"## Ingest (`benchmarks/ingest.py`, {dt.date.today().isoformat()})",
            "",
            f"Machine: {machine()}. Load generator in the same machine (asyncio, one connection per request).",
            "Service: gunicorn, 2 sync workers, persistent DB connections; SQLite with `synchronous=FULL` and the",
            "filesystem broker; PostgreSQL 15 with Redis as broker. Each request: a turn with a 10-message context.",
            "",
            table(rows),
            "",
            summary,
            "",
            "Target: ≥ 500 turns/s on SQLite with synchronous FULL, p95 < 20 ms at 200 requests/s.",
            "",
        ]
    )
    with (ROOT / "BENCHMARKS.md").open("a") as fh:
        fh.write(report)
    print(json.dumps({"written": "BENCHMARKS.md"}))


if __name__ == "__main__":
    main()
