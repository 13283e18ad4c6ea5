"""Reflect benchmark: a month of daily logs turned into entity pages and opinions, then the daily run, the
projection and the change report.

    .venv/bin/python benchmarks/reflect.py                         # SQLite (the embedded default)
    .venv/bin/python benchmarks/reflect.py --days 30 --bullets 40 --entities 120
    .venv/bin/python benchmarks/reflect.py --database-url postgres://postgres@127.0.0.1:5432/reflection_bench_reflect

Method. A synthetic workspace: ``--days`` daily logs of ``--bullets`` Retain bullets each (W/B/S facts and
one in five an ``O(c=…)`` opinion, a fifth of which restate an earlier opinion negated), each about one or
two of ``--entities`` entities drawn Zipf-distributed (a few entities get most facts, as people in a diary
do). Timed, offline (no LLM), end to end through ``reflect()``: the first run over the whole month (index,
facts, opinions, one write-guardian audit per page with snapshots, diffs and history), the same run again
(nothing changes: no audit), the daily run after one more day of logs (``--since 1d``), then ``project()``
and ``daily_report()``. The run is resumable: every step also saves its checkpoint, which is included.

No target is set for reflect (issue 11); the figures show the daily job's cost at a realistic size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VERBS = ["visited", "called", "fixed", "planned", "moved", "booked", "reviewed", "shipped", "met", "wrote"]
OBJECTS = ["the roof", "the release", "a trip to Lisbon", "the WS crash", "dinner", "the budget", "the migration"]
LIKES = ["short replies", "dark mode", "green tea", "morning meetings", "long walks", "voice notes", "spreadsheets"]


def zipf_pick(rng: random.Random, items: list[str]) -> str:
    weights = [1 / (rank + 1) for rank in range(len(items))]
    return rng.choices(items, weights=weights, k=1)[0]


def write_log(root: Path, day: dt.date, bullets: int, entities: list[str], rng: random.Random) -> None:
    lines = [f"# {day.isoformat()}", "", "## Retain"]
    for i in range(bullets):
        who = zipf_pick(rng, entities)
        other = f" @{zipf_pick(rng, entities)}" if rng.random() < 0.3 else ""
        if i % 5 == 4:
            thing = rng.choice(LIKES)
            negated = "does not like" if rng.random() < 0.2 else "likes"
            lines.append(f"- O(c={rng.choice([0.6, 0.8, 0.9, 0.95])}) @{who}{other}: {negated} {thing}.")
        else:
            kind = rng.choice(["W", "B", "S"])
            lines.append(f"- {kind} @{who}{other}: {rng.choice(VERBS)} {rng.choice(OBJECTS)} on day {i} ({day}).")
    path = root / "memory" / f"{day.isoformat()}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--bullets", type=int, default=40)
    parser.add_argument("--entities", type=int, default=120)
    parser.add_argument("--database-url", default="", help="PostgreSQL URL (the database is dropped and created).")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="reflect-bench-"))
    workspace = base / "home"
    os.environ["WORKSPACE_DIR"] = str(workspace)
    os.environ.setdefault("WORKSPACE_PROFILE", "seed")  # Its workspace is written in the seed's layout (bank/).
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["LLM_BASE_URL"] = ""
    os.environ["EMBEDDING_BASE_URL"] = ""
    os.environ["CELERY_BROKER_CONNECTION_MAX_RETRIES"] = "0"
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _harness import use_database

    use_database(args.database_url)

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from guardian_app.models import Opinion, OpinionEvidence, WriteGuardianAudit
    from guardian_app.reflect.projection import project
    from guardian_app.reflect.reflect import reflect
    from guardian_app.reflect.reports import daily_report
    from reflection_site.models import JobCheckpoint

    call_command("migrate", verbosity=0)
    database = (
        f"SQLite {sqlite3.sqlite_version} (WAL, synchronous={settings.SQLITE_SYNCHRONOUS})"
        if connection.vendor == "sqlite"
        else f"PostgreSQL {connection.cursor().connection.info.server_version}"
    )
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}, {database}")

    rng = random.Random(11)
    names = [f"Person{i:03d}" for i in range(args.entities)]
    today = timezone.localdate()
    for offset in range(args.days, 0, -1):
        write_log(workspace, today - dt.timedelta(days=offset), args.bullets, names, rng)
    rows: list[list[str]] = []

    def timed(label: str, fn):  # noqa: ANN001, ANN202
        started = time.perf_counter()
        result = fn()
        rows.append([label, f"{time.perf_counter() - started:.2f} s"])
        return result

    try:
        first = timed(
            f"first run: {args.days} days",
            lambda: reflect(since=f"{args.days + 1}d", requested_by="bench"),
        )
        rows[-1] += [
            f"{first.facts_count:,} facts, {first.entities_count} entities, {first.pages_written} pages written, "
            f"{Opinion.objects.count()} opinions, {OpinionEvidence.objects.count()} evidence rows",
            f"{first.facts_count / float(rows[-1][1].split()[0]):,.0f} facts/s",
        ]
        again = timed("same period again", lambda: reflect(since=f"{args.days + 1}d", requested_by="bench"))
        rows[-1] += [f"{again.pages_written} pages written, {again.pages_unchanged} unchanged", "nothing to write"]
        write_log(workspace, today, args.bullets, names, rng)
        daily = timed("daily run (--since 1d)", lambda: reflect(since="1d", requested_by="bench"))
        rows[-1] += [
            f"{daily.facts_count} facts, {daily.pages_written} pages written, {daily.opinions_updated} opinions moved",
            "",
        ]
        projection = timed("projection", project)
        rows[-1] += [f"{sum(projection.totals.values()):,} memories, {len(projection.files)} files", ""]
        report = timed("daily report", lambda: daily_report(today))
        rows[-1] += [f"{report.counts.created + report.counts.merged} writes reported", ""]
        rows.append(
            [
                "totals",
                "",
                f"{WriteGuardianAudit.objects.filter(source='reflect').count()} reflect audits, "
                f"{JobCheckpoint.objects.count()} checkpoints",
                "",
            ]
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)

    headers = ["measure", "time", "result", "rate"]
    rows = [r + [""] * (4 - len(r)) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
