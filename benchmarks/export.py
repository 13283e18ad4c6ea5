"""Dataset export throughput and memory: 100,000 samples through each exporter.

Method: a fresh migrated workspace (SQLite by default, PostgreSQL with --database postgres); a child process
inserts N samples (a realistic mix of the four types: conversations with a 6-message context window,
guardian samples with a 1 KB file, 10 % with PII and a redacted copy, 5 % rejected). Then, for each
format, new child processes (3 by default; the fastest counts) run the whole export (``create_export`` + ``write_export``, the code the
Celery task and ``manage.py dataset export`` run: the count, the server-side iterator, conversion,
hashing, both files, the row update) and reports its wall time and its own peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which includes Python and Django, ~60 MB, as loaded
before the export starts). Target: >= 20,000 samples/s and peak RSS < 200 MB.

Usage: python benchmarks/export.py [--samples 100000] [--formats openai,alpaca,...] [--database sqlite|postgres|both]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._harness import PYTHON, ROOT, machine, service, table  # noqa: E402

TARGET_RATE = 20_000
TARGET_RSS_MB = 200
FORMATS = ["openai", "alpaca", "sharegpt", "raw", "csv"]


# --- Child process: seed -----------------------------------------------------------------------------


def seed(count: int) -> None:
    import django

    django.setup()
    from django.utils import timezone

    from dataset_app.models import DatasetSample
    from reflection_site.ids import new_ulid
    from sessions_app.models import ConversationSession

    sessions = [ConversationSession(id=f"channel:bench:{i}", channel_id="bench") for i in range(100)]
    ConversationSession.objects.bulk_create(sessions, ignore_conflicts=True)
    context = [
        {
            "role": "user" if i % 2 == 0 else "agent",
            "message": f"Earlier message {i} about the weekly plan and the team.",
        }
        for i in range(6)
    ]
    file_text = "# User\n\n" + "".join(f"- A remembered fact number {i} about the user.\n" for i in range(25))
    now = timezone.now()
    batch: list[DatasetSample] = []
    for n in range(count):
        kind = ("memory_gate_positive", "memory_gate_negative", "write_guardian_decision", "annotated_turn")[n % 4]
        pii = n % 10 == 0
        user = f"I prefer morning check-ins, note {n}." + (" Mail me at bench.user@example.com." if pii else "")
        if kind == "memory_gate_positive":
            content = {
                "type": kind,
                "conversation": [*context, {"role": "user", "message": user}, {"role": "agent", "message": "Noted."}],
                "correctDecision": "UPDATE_USER",
                "correctFact": f"Prefers morning check-ins ({n}).",
                "reason": "A stable preference about collaboration cadence.",
                "targetFile": "USER.md",
                "evidence": {"wasWritten": True, "userFeedback": None},
            }
        elif kind == "memory_gate_negative":
            content = {
                "type": kind,
                "conversation": [*context, {"role": "user", "message": user}, {"role": "agent", "message": "OK."}],
                "incorrectDecision": "UPDATE_MEMORY",
                "incorrectFact": f"Said something ({n}).",
                "correctDecision": "NO_WRITE",
                "correctFact": None,
                "rejectionReason": "Small talk, nothing durable.",
                "evidence": {"guardianRefused": True, "rolledBack": False, "correctionId": None},
            }
        elif kind == "write_guardian_decision":
            content = {
                "type": kind,
                "candidateFact": f"Prefers morning check-ins ({n}).",
                "targetFile": "USER.md",
                "currentFileContent": file_text,
                "decision": "written",
                "reason": "New preference.",
                "diff": "@@ -1,2 +1,3 @@\n # User\n \n+- Prefers morning check-ins.\n",
                "edits": [{"op": "append", "section": "# User", "text": "Prefers morning check-ins."}],
                "userCorrection": None,
            }
        else:
            content = {
                "type": kind,
                "conversationId": f"channel:bench:{n % 100}",
                "turnNumber": n,
                "context": context,
                "memoryGate": {
                    "input": {"userMessage": user, "agentReply": "Noted."},
                    "output": {"decision": "UPDATE_USER", "reason": "pref", "candidateFact": "Prefers mornings."},
                    "label": "correct",
                    "correctedOutput": None,
                },
                "writeGuardian": None,
                "feedback": {"events": [{"user_id": "u", "feedback": "up", "reason": None, "at": "t"}], "last": "up"},
            }
        redacted = json.loads(json.dumps(content).replace("bench.user@example.com", "[EMAIL]")) if pii else None
        batch.append(
            DatasetSample(
                id=new_ulid(),
                sample_type=kind,
                source_key=f"{kind}:bench{n}",
                session_id=f"channel:bench:{n % 100}",
                content=content,
                label="UPDATE_USER",
                quality_score=round((n % 100) / 100, 2),
                quality_factors={"conversationClarity": 0.9, "decisionConfidence": 0.8, "factVerifiability": 0.7},
                annotation_status="rejected" if n % 20 == 7 else ("approved" if n % 3 == 0 else "pending"),
                privacy_checked=True,
                contains_pii=pii,
                pii_redacted_content=redacted,
                collection_strategy="bench",
                created_at=now,
            )
        )
        if len(batch) == 5000:
            DatasetSample.objects.bulk_create(batch)
            batch.clear()
    DatasetSample.objects.bulk_create(batch)
    print(json.dumps({"samples": DatasetSample.objects.count()}))


# --- Child process: one export -----------------------------------------------------------------------


def run_one(fmt: str) -> None:
    import resource
    import time

    import django

    django.setup()
    from dataset_app.exports import claim_export, create_export, write_export

    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    export = create_export(export_format=fmt, name=f"bench-{fmt}")
    export = write_export(claim_export(export.id))
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print(
        json.dumps(
            {
                "format": fmt,
                "samples": export.total_samples,
                "seconds": seconds,
                "cpu_seconds": cpu,
                "baseline_kb": before.ru_maxrss,
                "peak_kb": after.ru_maxrss,
                "bytes": export.file_size_bytes,
                "skipped_rejected": export.rejected_samples,
            }
        )
    )


# --- Parent --------------------------------------------------------------------------------------------


def child(env: dict[str, str], *args: str) -> dict:
    out = subprocess.run(
        [PYTHON, str(Path(__file__).resolve()), *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(f"benchmark child {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgres", "both"],
        default="sqlite",
        help="postgres uses BENCH_DATABASE_URL (give it a database of your own: it is dropped and created).",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="Runs per format; the fastest counts (a shared machine is noisy)."
    )
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed is not None:
        seed(args.seed)
        return
    if args.run:
        run_one(args.run)
        return

    rows = []
    for database in ["sqlite", "postgres"] if args.database == "both" else [args.database]:
        with service(database) as svc:
            env = {**svc.env, "PYTHONPATH": str(ROOT)}
            seeded = child(env, "--seed", str(args.samples))
            for fmt in args.formats.split(","):
                runs = [child(env, "--run", fmt) for _ in range(max(1, args.repeat))]
                result = min(runs, key=lambda r: r["seconds"])
                rate = result["samples"] / result["seconds"]
                peak_mb = max(r["peak_kb"] for r in runs) / 1024
                rows.append(
                    {
                        "database": database,
                        "format": fmt,
                        "samples in DB": seeded["samples"],
                        "exported": result["samples"],
                        "seconds (best of runs)": f"{result['seconds']:.2f}",
                        "samples/s": f"{rate:,.0f}",
                        "samples/CPU-s": f"{result['samples'] / result['cpu_seconds']:,.0f}",
                        "peak RSS MB": f"{peak_mb:.0f}",
                        "RSS before export MB": f"{result['baseline_kb'] / 1024:.0f}",
                        "output MB": f"{result['bytes'] / 1e6:.1f}",
                        "target": "met"
                        if rate >= TARGET_RATE and peak_mb < TARGET_RSS_MB
                        else f"MISSED (>= {TARGET_RATE:,}/s, < {TARGET_RSS_MB} MB)",
                    }
                )
                print(f"{database} {fmt}: {rate:,.0f} samples/s, peak RSS {peak_mb:.0f} MB", file=sys.stderr)
    print(f"Machine: {machine()}; load average at the end {os.getloadavg()[0]:.1f}")
    print(table(rows))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    main()
