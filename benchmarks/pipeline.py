"""The offline default end to end in the worker `make run` starts: gate and guardian, on conversation turns (issue 21).

The issue's speed bar: "the gate + guardian still decide >= 100 turns/s per worker". benchmarks/gate.py times the
gate's task against a fake LLM with one fixed sentence; this times what the embedded default does with ordinary
turns: the offline heuristic gate and the offline guardian, each guarded write with its snapshot, audit, fsyncs and
file version.

Method (SQLite and the filesystem broker, the embedded default, or PostgreSQL and Redis; a fresh workspace and database):
1. Every turn of the shipped memory-eval corpus and held-out sets v2-v13 (1,654 turns: English and
   Chinese, several people, facts, updates, small talk, poisoning) is ingested by ``ingest_turn`` as the API does,
   each corpus in sessions of its own, and its gate task enqueued (``run_gate.delay``) while no worker runs.
2. One ``celery worker -Q celery,guardian -c 2`` (prefork), the worker ``make run`` starts, drains them: every turn
   is decided, and every write decision goes through the guardian (its task on the ``guardian`` queue).
3. turns/s = (turns - 1) / (last event - first decision), an event being a decision or an audit, so worker
   start-up is not counted; with the worker's CPU per turn (its processes, start-up excluded).

Usage: python benchmarks/pipeline.py [--quick] [--tree DIR] [--database sqlite|postgres]
  BENCH_CONCURRENCY=1 runs one pool process instead of the two `make run` starts.
  --quick   only the first 400 turns
  --tree    run another checkout's code (``git archive <commit> | tar -x -C DIR``) on the same turns
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
# The shipped corpus and the held-out sets v2-v13, fixed, so that every run replays the same turns.
CORPORA = [HERE / "tests" / "fixtures" / "memory_eval" / "conversations.jsonl"] + [
    HERE / "tests" / "fixtures" / "memory_eval" / f"conversations_heldout_v{n}.jsonl" for n in range(2, 14)
]


def load_turns(limit: int | None) -> list[dict]:
    turns = []
    for corpus in CORPORA:
        for line in corpus.read_text(encoding="utf-8").splitlines():
            session = json.loads(line)
            for turn in session["turns"]:
                channel = turn.get("channel") or "bench"
                turns.append(
                    {
                        "session": f"{corpus.stem}-{session['session']}-{channel}",
                        "channel": channel,
                        "from": turn.get("from"),
                        "text": turn["text"],
                        "time": turn.get("time"),
                    }
                )
    return turns[:limit] if limit else turns


def child(limit: int | None) -> dict:
    import django

    django.setup()
    import psutil
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", "--noinput", verbosity=0)
    from guardian_app.models import WriteGuardianAudit
    from sessions_app.ingest import ingest_turn
    from sessions_app.models import ConversationTurn, MemoryGateDecision
    from sessions_app.schemas import TurnIn

    numbers: dict[str, int] = {}
    ids = []
    for turn in load_turns(limit):
        numbers[turn["session"]] = numbers.get(turn["session"], 0) + 1
        payload = TurnIn.model_validate(
            {
                "session": {"id": turn["session"], "channel_id": turn["channel"]},
                "turn_number": numbers[turn["session"]],
                "user_message": {"content": turn["text"], "from": turn["from"]},
                "agent_reply": {"content": "Noted."},
                **({"created_at": turn["time"]} if turn["time"] else {}),
            }
        )
        row, _ = ingest_turn(payload)
        ids.append(row.id)
    # ingest_turn publishes each turn's gate task after its commit, as the API does; with no worker running yet,
    # they wait in the broker.
    assert ConversationTurn.objects.filter(id__in=ids, gate_status="pending").count() == len(ids)
    connection.close()

    from django.conf import settings

    log_path = Path(settings.WORKSPACE_DIR) / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "reflection_site", "worker", "-Q", "celery,guardian", "-c", os.environ.get("BENCH_CONCURRENCY", "2"),
             "-P", "prefork", "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
            env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            root = psutil.Process(worker.pid)

            def worker_cpu() -> float:
                return sum(sum(p.cpu_times()[:2]) for p in [root, *root.children(recursive=True)])

            deadline = time.monotonic() + 900
            first_cpu = None
            while time.monotonic() < deadline:
                decided = MemoryGateDecision.objects.filter(turn_id__in=ids).count()
                if first_cpu is None and decided:
                    first_cpu = worker_cpu()
                writes = MemoryGateDecision.objects.filter(turn_id__in=ids).exclude(decision="NO_WRITE").count()
                audited = WriteGuardianAudit.objects.filter(decision__turn_id__in=ids).count()
                if decided >= len(ids) and audited >= writes:
                    break
                time.sleep(0.1)
            cpu = worker_cpu() - (first_cpu or 0.0)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    decisions = list(MemoryGateDecision.objects.filter(turn_id__in=ids).values_list("created_at", flat=True))
    audits = list(WriteGuardianAudit.objects.filter(decision__turn_id__in=ids).values_list("created_at", flat=True))
    span = (max(decisions + audits) - min(decisions)).total_seconds()
    statuses: dict[str, int] = {}
    for status in WriteGuardianAudit.objects.filter(decision__turn_id__in=ids).values_list("status", flat=True):
        statuses[status] = statuses.get(status, 0) + 1
    return {
        "turns": len(ids),
        "decided": len(decisions),
        "write_decisions": sum(
            1 for _ in MemoryGateDecision.objects.filter(turn_id__in=ids).exclude(decision="NO_WRITE")
        ),
        "audits": statuses,
        "turns_per_s": round((len(ids) - 1) / span, 1) if span else None,
        "worker_cpu_ms_per_turn": round(cpu * 1000 / len(ids), 2),
        "load_avg": os.getloadavg()[0],
        "log_tail": log_path.read_text(errors="replace")[-1500:] if len(decisions) < len(ids) else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Only the first 400 turns.")
    parser.add_argument("--tree", type=Path, default=HERE, help="Another checkout to run (the same turns).")
    parser.add_argument(
        "--database",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="postgres: PostgreSQL and Redis on loopback.",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.limit), default=str))
        return
    workspace = Path(tempfile.mkdtemp(prefix="reflection-pipeline-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "LLM_BASE_URL"}}
    env.update(
        {
            "WORKSPACE_DIR": str(workspace),
            "DJANGO_SETTINGS_MODULE": "reflection_site.settings",
            "LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(args.tree.resolve()),
        }
    )
    sys.path.insert(0, str(HERE))
    from benchmarks._harness import BENCH_REDIS_URL, PG_URL, machine, reset_postgres

    if args.database == "postgres":
        import redis

        reset_postgres(PG_URL)
        redis.Redis.from_url(BENCH_REDIS_URL).flushdb()
        env.update({"DATABASE_URL": PG_URL, "REDIS_URL": BENCH_REDIS_URL})
    try:
        tree = args.tree.resolve()
        script = tree / "benchmarks" / "pipeline.py"
        if not script.exists():  # An older tree: this script, run on its code.
            script = Path(__file__).resolve()
        out = subprocess.run(
            [sys.executable, str(script), "--child", *(["--limit", "400"] if args.quick else [])],
            cwd=tree, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise SystemExit(f"run failed:\n{out.stderr[-4000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    print(json.dumps({"tree": str(args.tree), "database": args.database, **result}, indent=1, ensure_ascii=False))
    print(f"Machine: {machine()}")


if __name__ == "__main__":
    main()
