"""Issue 9: the service at size, on SQLite and PostgreSQL, against the issue's targets.

    .venv/bin/python benchmarks/scale.py                       # 10k turns, SQLite and PostgreSQL (~3 min)
    .venv/bin/python benchmarks/scale.py --sizes 10k,100k --databases sqlite,pg
    BENCH_KEEP=1 …                                             # keep the seeded databases for the next run

Each (size, database) pair gets a database seeded once by ``benchmarks/seed_scale.py`` (var/scale/scale_<size>.sqlite3
or PostgreSQL database reflection_scale_<size>; kept with BENCH_KEEP=1 and reused when already seeded). Then,
in a child process on that database (so that peak RSS is that section's own):

- lists: every list endpoint the issue names, through Django's test client with an API key, first page and the
  page after it by cursor: p50/p95 server time over ``--repeat`` requests;
- gate stats (day / week / session), file history (the file with most versions), admin changelists and change
  pages of every model (logged-in superuser, median of 3);
- exports: the dataset export of every sample (raw JSONL) and the nightly conversation export over every turn
  (the day's bounds widened to the whole data set): rows/s and the child's peak RSS;
- retention (sessions idle for 180 days, one transaction a session: the longest is the lock hold) and the
  learning decay: time, longest transaction, peak RSS. Retention deletes rows, so it runs on a copy of the
  seeded database (a file copy on SQLite, ``CREATE DATABASE … TEMPLATE`` on PostgreSQL), dropped afterwards;
- rollback: ``rollback_write`` of a fresh write to a 100 KB USER.md (the file of the data set with thousands of
  versions; the offline guardian), p50/p95 over ``--repeat`` rollbacks;
- ingest: ``--repeat`` × 50 turns (1,000) through ``ingest_turn`` into new sessions, turns/s, alternately on an empty database and on
  the seeded one, three times each (same run, same load): the ratio is the slowdown at size.

The seed (``seed_scale``) rolls the gate statistics up as the hourly beat task would have, so the gate stats
read stored days as in production.

Run with ``--no-write`` to print only; by default the tables are printed, not appended (BENCHMARKS.md is edited by
hand from them).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SIZES = {"0": 0, "10k": 10_000, "100k": 100_000, "1m": 1_000_000}
PG_BASE = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/reflection_bench").rsplit("/", 1)[0]


def db_url(database: str, size: str) -> str:
    if database == "sqlite":
        return f"sqlite:///{ROOT / 'var' / 'scale' / f'scale_{size}.sqlite3'}"
    return f"{PG_BASE}/reflection_scale_{size}"


def ensure_seeded(database: str, size: str, *, fresh: bool = False) -> None:
    """Create, migrate and seed the database unless it already holds the data set (or ``fresh``)."""
    url = db_url(database, size)
    env = {**os.environ, "DATABASE_URL": url}
    if fresh:
        probe = subprocess.CompletedProcess([], 1)
    else:
        probe = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c",
         "from sessions_app.models import ConversationTurn as T; print(T.objects.count())"],
        env=env, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    seeded = probe.stdout.strip().splitlines()[-1:] if probe.returncode == 0 else []
    # The ingest section adds a few hundred turns to a kept database; it is still the same data set.
    if seeded and seeded[0].isdigit() and SIZES[size] <= int(seeded[0]) < SIZES[size] + 10_000:
        # A kept database gets the migrations added since it was seeded (indexes).
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], env=env, cwd=ROOT, check=True, capture_output=True
        )
        return
    if database == "sqlite":
        path = Path(url.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
        for p in path.parent.glob(path.name + "*"):
            p.unlink()
    else:
        from benchmarks._harness import reset_postgres

        reset_postgres(url)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], env=env, cwd=ROOT, check=True, capture_output=True)
    if SIZES[size]:
        print(f"  seeding {size} on {database} …", file=sys.stderr, flush=True)
        subprocess.run(
            [sys.executable, "benchmarks/seed_scale.py", "--turns", str(SIZES[size]), "--no-progress"],
            env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip


def run_child(database: str, size: str, section: str, repeat: int, *, url: str | None = None) -> dict:
    import tempfile

    env = {**os.environ, "DATABASE_URL": url or db_url(database, size), "SCALE_CHILD": section}
    if section == "rollback":
        env.update(WORKSPACE_DIR=tempfile.mkdtemp(prefix="scale-rollback-"), LLM_BASE_URL="", LOG_LEVEL="WARNING")
        env.setdefault("WORKSPACE_PROFILE", "seed")  # A 100 KB USER.md: past what the openclaw profile lets grow.
    out = subprocess.run(
        [sys.executable, __file__, "--child", section, "--repeat", str(repeat)],
        env=env, cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1:] or ["?"]}
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- The child: one section on one database --------------------------------------------------------------


def _setup() -> None:
    """The process as gunicorn's worker has it: the WSGI module imported (Django set up, the URL conf loaded, the
    start-up objects frozen out of the garbage collector's passes)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    from django.conf import settings

    import reflection_site.wsgi  # noqa: F401

    settings.ALLOWED_HOSTS = ["*"]
    settings.DEBUG = False


def _timed(fn, n: int) -> dict:
    """Wall-clock p50/p95 in ms, and the p50 of this process's CPU time (``cpu``): on a shared machine the wall
    clock includes the wait for a core, the CPU time does not (on SQLite it includes the database's work; on
    PostgreSQL not the server's)."""
    times, cpu = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    times.sort()
    return {"p50": statistics.median(times), "p95": times[min(len(times) - 1, int(len(times) * 0.95))],
            "cpu": statistics.median(cpu)}  # fmt: skip


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_now() -> dict:
    """Resident memory at the end, split: anonymous (the heap) and file-backed (SQLite's memory-mapped
    database pages, which the kernel reclaims as page cache)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("RssAnon:", "RssFile:")):
            out[line.split(":")[0].lower() + "_mb"] = int(line.split()[1]) / 1024
    return out


def child_lists(repeat: int) -> dict:
    from django.test import Client
    from django.urls import reverse

    from guardian_app.models import FileVersion
    from reflection_site.models import ApiKey
    from sessions_app.models import ConversationTurn

    ApiKey.objects.filter(name="scale-bench").delete()
    _, raw = ApiKey.generate("scale-bench", ["ingest", "read", "operate", "annotate"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    turn = ConversationTurn.objects.order_by("-created_at").only("id", "session_id").first()
    session = turn.session_id
    since = "2020-01-01T00:00:00Z"
    from django.db.models import Count

    busiest = FileVersion.objects.values("file_name").annotate(n=Count("id")).order_by("-n").first()
    cases = {
        "session turns": (reverse("api:list_session_turns", args=[session]), {}),
        "decisions by session": (reverse("api:list_gate_decisions"), {"session": session}),
        "decisions by type+time": (reverse("api:list_gate_decisions"), {"decision": "UPDATE_USER", "since": since}),
        "decisions (all)": (reverse("api:list_gate_decisions"), {}),
        "audits by file+status": (reverse("api:list_audits"), {"file": "USER.md", "status": "written"}),
        "samples needing review": (reverse("api:list_samples"), {"needs_review": "true"}),
        "samples by status": (reverse("api:list_samples"), {"status": "pending"}),
        "sessions": (reverse("api:list_sessions"), {}),
        "learning events": (reverse("api:list_events"), {}),
        f"file history ({busiest['n'] if busiest else 0} versions)": (
            reverse("api:file_history", args=[busiest["file_name"] if busiest else "MEMORY.md"]),
            {},
        ),
    }
    results = {}
    for name, (url, params) in cases.items():
        first = client.get(url, {**params, "limit": 50})
        assert first.status_code == 200, (name, first.status_code, first.content[:200])
        cursor = first.json().get("next_cursor")
        page1 = _timed(lambda url=url, params=params: client.get(url, {**params, "limit": 50}), repeat)
        page2 = (
            _timed(
                lambda url=url, params=params, c=cursor: client.get(url, {**params, "limit": 50, "cursor": c}), repeat
            )
            if cursor
            else None
        )
        results[name] = {"page1": page1, "page2": page2}
    url = reverse("api:gate_stats")
    for period in ("daily", "weekly", "session"):
        assert client.get(url, {"period": period}).status_code == 200
        results[f"gate stats by {period}"] = {"page1": _timed(lambda p=period: client.get(url, {"period": p}), repeat)}
    return results


def child_admin(repeat: int) -> dict:
    from django.contrib import admin
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    user, _ = get_user_model().objects.get_or_create(
        username="scale-bench", defaults={"is_staff": True, "is_superuser": True}
    )
    from dataset_app.admin import DASHBOARD as SAMPLES
    from guardian_app.admin.learning import DASHBOARD as EVENTS
    from reflection_site.admin import forget_dashboard

    client = Client()
    client.force_login(user)
    client.get(reverse("admin:index"))
    for name in (SAMPLES, EVENTS):
        forget_dashboard(name)
    results = {}
    for model in sorted(admin.site._registry, key=lambda m: m._meta.label):
        if model._meta.app_label in ("auth", "django_celery_beat"):
            continue
        base = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        url = reverse(f"{base}_changelist")
        # The first request computes the dashboards the next ones read from the cache (``cold``): what a request
        # meets when the beat's refresh has not run (after a cache flush).
        cold = _timed(lambda url=url: client.get(url), 1)
        warm = _timed(lambda url=url: client.get(url), 3)
        row = {"changelist": warm["p50"], "cpu": warm["cpu"], "cold": cold["p50"], "cold_cpu": cold["cpu"],
               "code": client.get(url).status_code}  # fmt: skip
        obj = model._default_manager.order_by("-pk").only("pk").first()
        if obj is not None:
            change = reverse(f"{base}_change", args=[obj.pk])
            client.get(change)
            row["change"] = _timed(lambda change=change: client.get(change), 3)["p50"]
        results[model._meta.label] = row
    # In production the beat's refresh computes the dashboards (every 4 minutes): its time, then each dashboard
    # changelist's first request after it.
    from reflection_site.admin import refresh_dashboards

    refresh = _timed(refresh_dashboards, 1)
    results["dashboards refreshed by beat"] = {"refresh": refresh["p50"], "refresh_cpu": refresh["cpu"]}
    for label, url in [("dataset_app.DatasetSample", "admin:dataset_app_datasetsample_changelist"),
                       ("guardian_app.LearningEvent", "admin:guardian_app_learningevent_changelist")]:  # fmt: skip
        results["dashboards refreshed by beat"][label] = _timed(lambda url=url: client.get(reverse(url)), 1)["p50"]
    return results


def child_export_samples(repeat: int) -> dict:
    import tempfile

    from dataset_app import exports
    from dataset_app.models import DatasetSample

    export = exports.create_export(export_format="raw", directory=Path(tempfile.mkdtemp()))
    t0 = time.perf_counter()
    exports.run_export(export.id)
    elapsed = time.perf_counter() - t0
    peak = _peak_rss_mb()
    export.refresh_from_db()
    n = DatasetSample.objects.count()  # After the peak is read (see child_export_conversations).
    return {"rows": n, "written": export.total_samples, "s": elapsed, "rate": (export.total_samples or 0) / elapsed,
            "rss_mb": peak, "status": export.status}  # fmt: skip


def child_export_conversations(repeat: int) -> dict:
    import datetime as dt

    from dataset_app.exporters import conversations
    from sessions_app.models import ConversationTurn

    # The nightly export takes one day; here the day's bounds are widened to every turn of the data set.
    conversations._day_bounds = lambda day: (
        dt.datetime(2000, 1, 1, tzinfo=dt.UTC),
        dt.datetime(2100, 1, 1, tzinfo=dt.UTC),
    )
    t0 = time.perf_counter()
    result = conversations.export_conversations(dt.date.today())
    elapsed = time.perf_counter() - t0
    peak = _peak_rss_mb()
    result.path.unlink(missing_ok=True)
    # Counted after the peak is read: a COUNT(*) through SQLite's memory map leaves ~60 MB of the file resident at
    # 1M (the benchmark's own reading, which had been counted in the export's peak: 195-200 MB instead of ~157).
    n = ConversationTurn.objects.count()
    return {"rows": n, "written": result.turns, "s": elapsed, "rate": result.turns / elapsed, "rss_mb": peak,
            **_rss_now()}  # fmt: skip


def child_retention(repeat: int) -> dict:
    from django.db import transaction

    from dataset_app import retention

    longest = [0.0]
    original = transaction.atomic

    class Timed:
        def __init__(self, *a, **k):
            self.inner = original(*a, **k)

        def __enter__(self):
            self.t0 = time.perf_counter()
            return self.inner.__enter__()

        def __exit__(self, *exc):
            out = self.inner.__exit__(*exc)
            longest[0] = max(longest[0], time.perf_counter() - self.t0)
            return out

    retention.transaction.atomic = Timed  # type: ignore[assignment]
    t0 = time.perf_counter()
    result = retention.apply_retention(days=180)
    elapsed = time.perf_counter() - t0
    return {**result.as_dict(), "s": elapsed, "longest_tx_s": longest[0], "rss_mb": _peak_rss_mb(), **_rss_now()}


def child_decay(repeat: int) -> dict:
    from guardian_app.learning.decay import decay_learning
    from guardian_app.models import MemoryItem, Rule

    n = MemoryItem.objects.count() + Rule.objects.count()
    t0 = time.perf_counter()
    report = decay_learning()
    elapsed = time.perf_counter() - t0
    return {"rows": n, "s": elapsed, "rss_mb": _peak_rss_mb(), "summary": str(report.summary())[:200]}


def child_rollback(repeat: int) -> dict:
    from guardian_app.models import FileVersion
    from guardian_app.write.guardian import write_fact
    from guardian_app.write.rollback import rollback_write
    from sessions_app.models import ConversationSession, ConversationTurn, GateStatus, MemoryGateDecision

    session = ConversationSession.objects.create(id=f"bench:rollback:{time.time_ns()}", channel_id="bench")
    counter = [0]

    def decision(fact: str) -> MemoryGateDecision:
        counter[0] += 1
        turn = ConversationTurn.objects.create(
            session=session, turn_number=counter[0], user_message_content=fact, agent_message_content="ok",
            gate_status=GateStatus.DONE,
        )  # fmt: skip
        return MemoryGateDecision.objects.create(
            turn=turn, session=session, decision="UPDATE_USER", reason="bench", candidate_fact=fact, llm_model="bench"
        )

    user_md = Path(os.environ["WORKSPACE_DIR"]) / "USER.md"
    lines = [f"- Background fact number {i:05d} about the user's long-running project history." for i in range(1300)]
    user_md.write_text("# User\n\n## Notes\n\n" + "\n".join(lines) + "\n")
    times = []
    for i in range(repeat):
        audit = write_fact(decision(f"Scale bench noted marker s{i} for the quarterly planning notes."))
        t0 = time.perf_counter()
        rollback_write(audit, reason="bench", requested_by="bench")
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"size_kb": user_md.stat().st_size / 1024, "versions": FileVersion.objects.filter(file_name="USER.md").count(),
            "p50": statistics.median(times), "p95": times[min(len(times) - 1, int(len(times) * 0.95))]}  # fmt: skip


def child_ingest(repeat: int) -> dict:
    """``repeat`` × 50 turns (1,000 by default: 100 took a third of a second, shorter than the machine's noise)."""
    from sessions_app.ingest import ingest_turn
    from sessions_app.schemas import TurnIn

    stamp = int(time.time() * 1000)
    payloads = [
        TurnIn(
            session={"id": f"bench:ingest:{stamp}:{i % 20}", "channel_id": "bench"},
            user_message={"content": f"I prefer summaries on Fridays ({i})."},
            agent_reply={"content": "Noted."},
            context=[{"role": "user", "message": "Hi", "timestamp": 1_700_000_000_000}],
        )
        for i in range(repeat * 50)
    ]
    t0 = time.perf_counter()
    for payload in payloads:
        ingest_turn(payload)
    elapsed = time.perf_counter() - t0
    return {"turns": len(payloads), "rate": len(payloads) / elapsed}


CHILDREN = {
    "lists": child_lists,
    "admin": child_admin,
    "export_samples": child_export_samples,
    "export_conversations": child_export_conversations,
    "ingest": child_ingest,
    "rollback": child_rollback,
    "decay": child_decay,
    "retention": child_retention,  # on a copy of the data set: it deletes rows
}


def copy_database(database: str, size: str) -> str:
    """A throwaway copy of the seeded database, for the sections that delete rows; returns its URL."""
    url = db_url(database, size)
    if database == "sqlite":
        import sqlite3

        source = Path(url.removeprefix("sqlite:///"))
        target = source.with_name(source.stem + "_copy.sqlite3")
        for p in source.parent.glob(target.name + "*"):
            p.unlink()
        with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
            src.backup(dst)
        return f"sqlite:///{target}"
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}_copy" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}_copy" TEMPLATE "{name}"')
    return f"{PG_BASE}/{name}_copy"


def drop_copy(database: str, url: str) -> None:
    if database == "sqlite":
        path = Path(url.removeprefix("sqlite:///"))
        for p in path.parent.glob(path.name + "*"):
            p.unlink()
        return
    import psycopg

    with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def run_section(database: str, size: str, section: str, repeat: int) -> dict:
    if section == "retention":
        url = copy_database(database, size)
        try:
            return run_child(database, size, section, repeat, url=url)
        finally:
            drop_copy(database, url)
    if section == "ingest":
        # Alternately on an empty database and on the seeded one, three times each: the same load for both.
        ensure_seeded(database, "0", fresh=True)
        runs: dict[str, list[float]] = {"empty": [], "seeded": []}
        for _ in range(3):
            for label, at in (("empty", "0"), ("seeded", size)):
                out = run_child(database, at, section, repeat)
                if "error" in out:
                    return out
                runs[label].append(out["rate"])
        empty, seeded = statistics.mean(runs["empty"]), statistics.mean(runs["seeded"])
        return {"empty_rate": empty, "seeded_rate": seeded, "ratio": seeded / empty, "runs": runs}
    return run_child(database, size, section, repeat)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10k")
    parser.add_argument("--databases", default="sqlite,pg")
    parser.add_argument("--sections", default=",".join(CHILDREN))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        _setup()
        print(json.dumps(CHILDREN[args.child](args.repeat), default=str))
        return
    sections = [s for s in args.sections.split(",") if s]
    report: dict = {}
    for size in args.sizes.split(","):
        for database in args.databases.split(","):
            t0 = time.perf_counter()
            ensure_seeded(database, size)
            print(f"== {size} {database} (ready in {time.perf_counter() - t0:.0f}s)", file=sys.stderr, flush=True)
            for section in sections:
                t1 = time.perf_counter()
                report[(size, database, section)] = run_section(database, size, section, args.repeat)
                print(f"   {section}: {time.perf_counter() - t1:.0f}s", file=sys.stderr, flush=True)
                print(json.dumps({"size": size, "db": database, "section": section, "load": os.getloadavg(),
                                  "at": time.strftime("%H:%M:%S"), "result": report[(size, database, section)]}),
                      flush=True)  # fmt: skip
    print_tables(report)


def print_tables(report: dict) -> None:
    def pairs(section: str):
        return [(k[0], k[1], v) for k, v in report.items() if k[2] == section]

    rows = {}
    for size, db, res in pairs("lists"):
        for name, r in res.items() if isinstance(res, dict) and "error" not in res else []:
            rows.setdefault(name, {})[f"{size} {db}"] = r
    if rows:
        cols = sorted({c for r in rows.values() for c in r})
        print("\n| endpoint (p95 ms, page 1 / page 2) | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
        for name, r in rows.items():
            cells = []
            for c in cols:
                v = r.get(c)
                if not v:
                    cells.append("")
                    continue
                p2 = f" / {v['page2']['p95']:.1f}" if v.get("page2") else ""
                cells.append(f"{v['page1']['p95']:.1f}{p2}")
            print(f"| {name} | " + " | ".join(cells) + " |")
    admin_rows = {}
    for size, db, res in pairs("admin"):
        for label, r in res.items() if "error" not in res else []:
            admin_rows.setdefault(label, {})[f"{size} {db}"] = r
    if admin_rows:
        cols = sorted({c for r in admin_rows.values() for c in r})
        print("\n| admin (ms, changelist / change page) | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
        for label, r in admin_rows.items():
            if label == "dashboards refreshed by beat":  # (the refresh's time, then each dashboard's next request)
                cells = [" · ".join(f"{k.split('.')[-1]} {v:.0f}" for k, v in r[c].items() if k != "refresh_cpu")
                         if c in r else "" for c in cols]  # fmt: skip
            else:
                cells = [
                    (f"{r[c]['changelist']:.0f} / {r[c]['change']:.0f}" if "change" in r[c] else f"{r[c]['changelist']:.0f} / –")
                    if c in r else "" for c in cols
                ]  # fmt: skip
            print(f"| {label} | " + " | ".join(cells) + " |")
    print("\n| job | size | db | result |\n|---|---|---|---|")
    for (size, db, section), res in report.items():
        if section in ("lists", "admin"):
            continue
        print(f"| {section} | {size} | {db} | {json.dumps(res, default=str)[:220]} |")


if __name__ == "__main__":
    main()
