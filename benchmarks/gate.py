"""Memory gate throughput and overhead per decision, with a fake LLM endpoint that answers at once.

Method, for each database (SQLite with the filesystem broker; PostgreSQL with Redis), in a fresh
workspace and a child process of its own:
1. In-process: N pending turns (10 context messages each) are decided one after another by calling the
   task body ``run_gate(turn_id)`` as a worker does, against the fake OpenAI-compatible server of
   tests/fake_llm.py over loopback through the real ``openai`` SDK. Half the replies are UPDATE_*, so half
   the decisions also hand off to the guardian queue (a real broker publish). Per decision: wall time,
   and overhead = wall time − the LLM latency the decision records (the HTTP round trip to the fake).
   The same with no LLM configured (the offline heuristic gate).
2. One real worker: N turns are enqueued with ``run_gate.delay`` while no worker runs; then one
   ``celery worker -c 1`` starts and drains them; decisions/s = (N − 1) / (last − first decision's
   ``created_at``), so worker start-up is not counted. Then the same with ``-c 2``, the worker that
   ``make run`` starts (one worker, two prefork processes).
Targets (issue 4): overhead < 10 ms per decision, >= 100 decisions/s per worker.

Usage: python benchmarks/gate.py [--quick] [--no-postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._harness import BENCH_REDIS_URL, PG_URL, PYTHON, ROOT, machine, reset_postgres, table  # noqa: E402

# The worker's pool: prefork, as `make run` starts it (BENCH_WORKER_POOL=solo|threads to compare).
POOL = os.environ.get("BENCH_WORKER_POOL", "prefork")
# One pool process, then the worker `make run` starts (WORKER_CONCURRENCY in the Makefile).
WORKER_CONCURRENCIES = (1, 2)
CONTEXT = [("user" if i % 2 == 0 else "agent", f"context message {i} " * 8) for i in range(10)]
REPLIES = [
    {"decision": "NO_WRITE", "reason": "Small talk.", "candidate_fact": None, "confidence": 0.9},
    {
        "decision": "UPDATE_USER",
        "reason": "A stable preference.",
        "candidate_fact": "Prefers summaries on Fridays.",
        "confidence": 0.8,
    },
]


def pct(data: list[float], p: float) -> float:
    data = sorted(data)
    return data[min(len(data) - 1, int(round(p / 100 * (len(data) - 1))))]


# --- Child: one database ------------------------------------------------------------------------------
def child(database: str, turns: int, worker_turns: int) -> dict:
    from tests.fake_llm import start_fake_llm

    counter = iter(range(10**9))
    fake = start_fake_llm()
    fake.set_default(lambda body: REPLIES[next(counter) % 2])
    os.environ["LLM_BASE_URL"] = fake.base_url
    os.environ["LLM_API_KEY"] = "bench"
    os.environ["LLM_MODEL"] = "fake-model-1"

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    call_command("migrate", "--noinput", verbosity=0)
    from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, MemoryGateDecision
    from sessions_app.tasks import run_gate

    def make_turns(n: int, prefix: str) -> list[str]:
        now = timezone.now()
        sessions = [ConversationSession(id=f"channel:bench:{prefix}{i}", channel_id="bench") for i in range(50)]
        ConversationSession.objects.bulk_create(sessions, ignore_conflicts=True)
        rows = [
            ConversationTurn(
                session_id=f"channel:bench:{prefix}{i % 50}",
                turn_number=i // 50 + 1,
                user_message_content=f"I prefer summaries on Fridays, note {i}.",
                agent_message_content="Noted, I will send summaries on Fridays.",
                gate_enqueued_at=now,
            )
            for i in range(n)
        ]
        ConversationTurn.objects.bulk_create(rows, batch_size=500)
        ConversationContext.objects.bulk_create(
            (
                ConversationContext(turn=turn, role=role, message=message, timestamp=now, sequence_number=seq)
                for turn in rows
                for seq, (role, message) in enumerate(CONTEXT)
            ),
            batch_size=2000,
        )
        return [t.id for t in rows]

    # CPU this thread spends inside the LLM client (the fake server's own threads are not counted anywhere).
    from reflection_site import llm

    llm_cpu = [0.0]
    real_complete_json = llm.complete_json

    def timed_complete_json(*args, **kwargs):
        started = time.thread_time()
        try:
            return real_complete_json(*args, **kwargs)
        finally:
            llm_cpu[0] += time.thread_time() - started

    llm.complete_json = timed_complete_json

    def in_process(ids: list[str], label: str) -> dict:
        walls, overheads, cpu_overheads = [], [], []
        for turn_id in ids[:20]:  # Warm-up: connections, the SDK client, templates.
            run_gate(turn_id)
        started_all = time.perf_counter()
        for turn_id in ids[20:]:
            llm_cpu[0] = 0.0
            started, started_cpu = time.perf_counter(), time.thread_time()
            decision_id = run_gate(turn_id)
            wall = (time.perf_counter() - started) * 1000
            cpu = (time.thread_time() - started_cpu - llm_cpu[0]) * 1000
            latency = MemoryGateDecision.objects.filter(id=decision_id).values_list("llm_latency_ms", flat=True)[0]
            walls.append(wall)
            overheads.append(wall - (latency or 0))
            cpu_overheads.append(cpu)
        elapsed = time.perf_counter() - started_all
        return {
            "database": database,
            "gate": label,
            "decisions": len(walls),
            "decisions_per_s": round(len(walls) / elapsed, 1),
            "wall_p50_ms": round(pct(walls, 50), 2),
            "overhead_mean_ms": round(statistics.fmean(overheads), 2),
            "overhead_p50_ms": round(pct(overheads, 50), 2),
            "overhead_p95_ms": round(pct(overheads, 95), 2),
            "overhead_cpu_mean_ms": round(statistics.fmean(cpu_overheads), 2),
            "load_avg": os.getloadavg()[0],
        }

    log_tails: list[str] = []

    def drain_with_worker(ids: list[str], concurrency: int) -> dict:
        for turn_id in ids:
            run_gate.delay(turn_id)
        connection.close()
        log_path = Path(settings.WORKSPACE_DIR) / "worker.log"
        env = dict(os.environ)
        with log_path.open("wb") as log:
            worker = subprocess.Popen(
                [PYTHON, "-m", "celery", "-A", "reflection_site", "worker", "-Q", "celery", "-c", str(concurrency), "-P", POOL,
                 "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            try:
                import psutil

                def worker_cpu() -> float:
                    # The worker's processes, its pool child included.
                    root = psutil.Process(worker.pid)
                    return sum(sum(p.cpu_times()[:2]) for p in [root, *root.children(recursive=True)])

                deadline = time.monotonic() + 300
                done, first_done, first_cpu = 0, None, 0.0
                while time.monotonic() < deadline:
                    done = MemoryGateDecision.objects.filter(turn_id__in=ids).count()
                    if first_done is None and done:
                        first_done, first_cpu = done, worker_cpu()  # Start-up is over.
                    if done >= len(ids):
                        break
                    time.sleep(0.05)
                cpu_per_decision = (worker_cpu() - first_cpu) / max(done - (first_done or 0), 1)
            finally:
                worker.terminate()
                worker.wait(timeout=30)
        times = sorted(MemoryGateDecision.objects.filter(turn_id__in=ids).values_list("created_at", flat=True))
        span = (times[-1] - times[0]).total_seconds() if len(times) > 1 else float("nan")
        if len(times) < len(ids):
            log_tails.append(log_path.read_text(errors="replace")[-1500:])
        processes = "1 worker process" if concurrency == 1 else f"1 worker, {concurrency} processes (make run)"
        return {
            "database": database,
            "gate": f"LLM (fake), {processes} ({POOL}, -c {concurrency})",
            "decisions": len(times),
            "decisions_per_s": round((len(times) - 1) / span, 1) if span else float("nan"),
            "wall_p50_ms": "",
            "overhead_mean_ms": "",
            "overhead_p50_ms": "",
            "overhead_p95_ms": "",
            "overhead_cpu_mean_ms": f"worker CPU {round(cpu_per_decision * 1000, 2)} ms/decision",
            "load_avg": os.getloadavg()[0],
        }

    rows = [in_process(make_turns(turns, "llm"), "LLM (fake, instant)")]
    settings.LLM_BASE_URL = ""
    rows.append(in_process(make_turns(turns, "off"), "offline heuristic"))
    settings.LLM_BASE_URL = fake.base_url

    # One real worker draining a queue filled beforehand: one pool process, then the worker `make run` starts.
    for concurrency in WORKER_CONCURRENCIES:
        rows.append(drain_with_worker(make_turns(worker_turns, f"wrk{concurrency}-"), concurrency))
    fake.stop()
    return {
        "rows": rows,
        "worker_log_tail": "\n".join(log_tails),
    }


def run_child(database: str, turns: int, worker_turns: int) -> dict:
    workspace = Path(tempfile.mkdtemp(prefix="reflection-gate-bench-"))
    env = dict(os.environ)
    for name in ("DATABASE_URL", "REDIS_URL", "LLM_BASE_URL"):
        env.pop(name, None)
    env.update(
        {"WORKSPACE_DIR": str(workspace), "DJANGO_SETTINGS_MODULE": "reflection_site.settings", "LOG_LEVEL": "WARNING"}
    )
    if database == "postgres":
        reset_postgres(PG_URL)
        env["DATABASE_URL"] = PG_URL
        env["REDIS_URL"] = BENCH_REDIS_URL
        import redis

        redis.Redis.from_url(BENCH_REDIS_URL).flushdb()
    try:
        out = subprocess.run(
            [PYTHON, __file__, "--child", database, "--turns", str(turns), "--worker-turns", str(worker_turns)],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise RuntimeError(f"{database} run failed:\n{out.stderr[-4000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Fewer decisions (a smoke run).")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--turns", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker-turns", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.turns, args.worker_turns), default=str))
        return

    turns, worker_turns = (220, 200) if args.quick else (520, 500)
    databases = ["sqlite"] if args.no_postgres else ["sqlite", "postgres"]
    rows = []
    for database in databases:
        print(f"== {database}", file=sys.stderr, flush=True)
        result = run_child(database, turns, worker_turns)
        rows += result["rows"]
        if result["worker_log_tail"]:
            print(result["worker_log_tail"], file=sys.stderr)
    print(table(rows))
    print(f"\nMachine: {machine()}")


if __name__ == "__main__":
    main()
