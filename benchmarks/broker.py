"""The embedded broker before and after issue 16, in one run: burst ingest and a worker's drain, alternately.

"Before" is reflection_site/broker.py as it was (kept as benchmarks/_broker_before.py): kombu's channel, which creates
the message file in the queue folder and then writes it. "After" is the current one: the message written and fsynced
under broker/tmp, then renamed into the queue; and the same with ``CELERY_BROKER_FSYNC=false``. Each round, for each of the two (in alternating order, so that a
slower minute of this shared virtual machine does not land on one of them only), in a fresh workspace on SQLite:
1. Burst ingest: gunicorn (2 sync workers, as make run starts it) takes ``--turns`` turns (10 context messages each)
   from 16 concurrent clients as fast as it answers (closed loop, after 200 warm-up turns); each turn publishes its
   gate message to the broker. Turns/s.
2. Drain: then a Celery worker (prefork -c 2, as make run starts it, offline heuristic gate) takes the queued gate
   messages; decisions/s over the ``--drain`` first decisions after the first (start-up not counted).

``--micro``: the broker alone, in this process, for the two and for kombu's SQLAlchemy transport on a SQLite file in
WAL mode with ``synchronous=FULL`` (the maintained alternative the issue named; needs ``sqlalchemy``, not a
requirement): ``--messages`` gate-sized messages published one by one, then consumed and acknowledged one by one;
ms per message for each side.

Usage: python benchmarks/broker.py [--rounds 3] [--turns 3000] [--drain 1000] | --micro [--messages 2000]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._harness import PYTHON, ROOT, build_request, machine, run_closed_loop, service, table  # noqa: E402
from benchmarks.ingest import turn_body  # noqa: E402  (the same turns as the ingest benchmark)

BEFORE = "benchmarks._broker_before:FilesystemTransport"
AFTER = "reflection_site.broker:FilesystemTransport"
# name -> (transport class, CELERY_BROKER_FSYNC)
TRANSPORTS = {
    "before (kombu's write in place)": (BEFORE, True),
    "after (tmp + fsync + rename)": (AFTER, True),
    "after, CELERY_BROKER_FSYNC=false (tmp + rename)": (AFTER, False),
}


def measure(transport: tuple[str, bool], turns: int, drain: int) -> dict:
    path, fsync = transport
    with service(CELERY_BROKER_TRANSPORT=path, CELERY_BROKER_FSYNC=str(fsync).lower(), LLM_BASE_URL="") as svc:
        svc.start_web(2)
        headers = {"Authorization": f"Bearer {svc.api_key('ingest')}"}

        def make(i: int) -> bytes:
            return build_request("POST", "/api/v1/turns", headers, turn_body(i))

        run_closed_loop(svc.port, make, total=200, concurrency=8)  # Warm-up: imports, connections.
        load = run_closed_loop(svc.port, make, total=turns, concurrency=16)
        svc.stop()
        db = svc.workspace / ".openclaw-reflection" / "reflection.db"
        worker = subprocess.Popen(
            [PYTHON, "-m", "celery", "-A", "reflection_site", "worker", "-Q", "celery", "-c", "2",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
            cwd=ROOT, env=svc.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                with sqlite3.connect(db, timeout=10) as conn:
                    done = conn.execute("SELECT COUNT(*) FROM memory_gate_decisions").fetchone()[0]
                if done >= drain + 1:
                    break
                time.sleep(0.2)
            with sqlite3.connect(db, timeout=10) as conn:
                times = [
                    row[0]
                    for row in conn.execute(
                        "SELECT created_at FROM memory_gate_decisions ORDER BY created_at LIMIT ?", (drain + 1,)
                    )
                ]
        finally:
            worker.terminate()
            worker.wait(timeout=60)
        from datetime import datetime

        first, last = (datetime.fromisoformat(t) for t in (times[0], times[-1]))
        errors = sum(n for code, n in load.statuses.items() if code >= 400)
        return {
            "ingest_turns_per_s": round(load.rate, 1),
            "ingest_p95_ms": round(load.pct(95), 1),
            "ingest_errors": errors,
            "drain_decisions_per_s": round((len(times) - 1) / (last - first).total_seconds(), 1),
            "load_avg": round(os.getloadavg()[0], 2),
        }


def micro(messages: int, rounds: int) -> None:
    import tempfile

    from kombu import Connection, Exchange, Queue

    def filesystem(transport: type, fsync: bool) -> Callable[[Path], Connection]:
        def connect(folder: Path) -> Connection:
            for sub in ("queue", "processed", "tmp", "bad"):
                (folder / sub).mkdir(parents=True, exist_ok=True)
            options = {f"{k}": str(folder / v) for k, v in (("data_folder_in", "queue"), ("data_folder_out", "queue"),
                       ("processed_folder", "processed"), ("tmp_folder", "tmp"), ("bad_folder", "bad"))}  # fmt: skip
            options.update(polling_interval=0.001, fsync=fsync)
            return Connection("filesystem://", transport=transport, transport_options=options)

        return connect

    def sqlalchemy(folder: Path) -> Connection:
        from sqlalchemy import event

        url = f"sqla+sqlite:///{folder / 'broker.db'}"
        conn = Connection(url)  # (Its transport options go to create_engine.)

        channel = conn.default_channel
        engine = channel._open()[0]

        @event.listens_for(engine, "connect")
        def pragmas(dbapi_connection, record):  # noqa: ANN001, ARG001
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            dbapi_connection.execute("PRAGMA synchronous=FULL")

        engine.dispose()
        return conn

    kinds: dict[str, Callable[[Path], Connection]] = {
        name: filesystem(_import(path), fsync) for name, (path, fsync) in TRANSPORTS.items()
    }
    try:
        import sqlalchemy as _  # noqa: F401

        kinds["kombu SQLAlchemy transport, SQLite (WAL, FULL)"] = sqlalchemy
    except ImportError:
        print("(sqlalchemy is not installed: its transport is left out)", file=sys.stderr)
    body = {"task": "sessions_app.tasks.run_gate", "args": ["01" + "X" * 24], "pad": "x" * 1500}
    rows = []
    for round_number in range(rounds):
        for name, connect in kinds.items():
            with tempfile.TemporaryDirectory(prefix="broker-micro-") as folder, connect(Path(folder)) as conn:
                queue = Queue("celery", Exchange("celery", type="direct"), routing_key="celery")
                producer = conn.Producer()
                producer.publish(body, exchange=queue.exchange, routing_key="celery", declare=[queue])
                started = time.perf_counter()
                for _ in range(messages):
                    producer.publish(body, exchange=queue.exchange, routing_key="celery")
                put_ms = (time.perf_counter() - started) * 1000 / messages
                received: list[int] = []
                with conn.Consumer(queue, callbacks=[lambda b, m, seen=received: (seen.append(1), m.ack())]):
                    conn.drain_events(timeout=5)  # The warm-up message.
                    started = time.perf_counter()
                    while len(received) < messages + 1:
                        conn.drain_events(timeout=5)
                    get_ms = (time.perf_counter() - started) * 1000 / messages
            rows.append({"round": round_number + 1, "broker": name, "publish ms/message": round(put_ms, 3),
                         "consume ms/message": round(get_ms, 3)})  # fmt: skip
    print(table(rows))
    print(f"\nMachine: {machine()}")


def _import(path: str) -> type:
    from kombu.utils.imports import symbol_by_name

    return symbol_by_name(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--drain", type=int, default=1000)
    parser.add_argument("--micro", action="store_true")
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()
    if args.micro:
        micro(args.messages, args.rounds)
        return
    results: dict[str, list[dict]] = {name: [] for name in TRANSPORTS}
    rows = []
    for round_number in range(args.rounds):
        order = list(TRANSPORTS) if round_number % 2 == 0 else list(reversed(TRANSPORTS))
        for name in order:
            print(f"== round {round_number + 1}: {name}", file=sys.stderr, flush=True)
            result = measure(TRANSPORTS[name], args.turns, args.drain)
            results[name].append(result)
            rows.append({"round": round_number + 1, "broker": name, **result})
    print(table(rows))
    summary = []
    for name, runs in results.items():
        summary.append(
            {
                "broker": name,
                "ingest turns/s (median)": statistics.median(r["ingest_turns_per_s"] for r in runs),
                "ingest turns/s (range)": f"{min(r['ingest_turns_per_s'] for r in runs)}-"
                f"{max(r['ingest_turns_per_s'] for r in runs)}",
                "drain decisions/s (median)": statistics.median(r["drain_decisions_per_s"] for r in runs),
            }
        )
    print()
    print(table(summary))
    before, *afters = (statistics.median(r["ingest_turns_per_s"] for r in runs) for runs in results.values())
    for name, after in zip(list(TRANSPORTS)[1:], afters, strict=True):
        print(f"\n{name} / before, ingest: {after / before:.3f}")
    print(f"\nMachine: {machine()}")


if __name__ == "__main__":
    main()
