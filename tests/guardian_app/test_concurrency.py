"""Several processes writing one memory file, and writers killed mid-write, against a shared SQLite file.

The in-memory test database is not shared between processes, so these tests migrate a SQLite file once
and give each test a copy; every writer is a separate Python process (tests/guardian_app/procs.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow
ROOT = Path(settings.BASE_DIR)
WRITERS = 8
FACTS_PER_WRITER = 4


def _env(db: Path, workspace: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        DATABASE_URL=f"sqlite:///{db}",
        WORKSPACE_DIR=str(workspace),
        LLM_BASE_URL="",
        SQLITE_BUSY_TIMEOUT_MS="60000",
        GUARDIAN_LOCK_TIMEOUT_S="120",
        CELERY_BROKER_CONNECTION_MAX_RETRIES="0",
        DJANGO_SETTINGS_MODULE="reflection_site.settings",
        PYTHONPATH=str(ROOT),
    )
    return env


@pytest.fixture(scope="module")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("shared-db")
    db = folder / "template.sqlite3"
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=_env(db, folder / "ws"), check=True, timeout=300
    )
    return db


@pytest.fixture
def shared(migrated_db: Path, tmp_path: Path) -> dict[str, Any]:
    db = tmp_path / "db.sqlite3"
    shutil.copy(migrated_db, db)
    workspace = tmp_path / "shared-ws"
    workspace.mkdir()
    return {"db": db, "workspace": workspace, "env": _env(db, workspace)}


def _run(shared: dict[str, Any], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.guardian_app.procs", *args],
        cwd=ROOT,
        env=shared["env"],
        capture_output=True,
        text=True,
        timeout=300,
        check=check,
    )


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_eight_processes_appending_to_one_file_lose_nothing(shared):
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.guardian_app.procs", "append", str(w), str(FACTS_PER_WRITER)],
            cwd=ROOT,
            env=shared["env"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        outputs.append(json.loads(out.strip().splitlines()[-1]))

    results = [r for out in outputs for r in out["results"]]
    assert len(results) == WRITERS * FACTS_PER_WRITER
    assert {r["status"] for r in results} == {"written"}, [r for r in results if r["status"] != "written"]

    text = (shared["workspace"] / "USER.md").read_text()
    for r in results:  # Every accepted fact is in the file, once.
        assert text.count(r["fact"]) == 1, r["fact"]

    report = _json(_run(shared, "report"))
    versions, audits = report["versions"], report["audits"]
    assert [v["seq"] for v in versions] == list(range(1, len(versions) + 1))
    assert [v["kind"] for v in versions] == ["write"] * len(results)
    previous = None
    for version in versions:  # Each audit's before-snapshot is the previous version.
        audit = audits[version["audit"]]
        assert audit["before"] == previous
        assert audit["after"] == version["snapshot"]
        previous = version["snapshot"]


@pytest.mark.parametrize("die_at", ["before-replace", "after-replace"])
def test_a_killed_write_redelivered_is_written_exactly_once(shared, die_at):
    fact = "Prefers green tea in the afternoon."
    decision = _json(_run(shared, "decide", fact))["decision"]

    killed = _run(shared, "write", decision, die_at, check=False)
    assert killed.returncode == -9, killed.stderr[-2000:]

    redelivered = _json(_run(shared, "write", decision))
    assert redelivered["status"] == "written"
    again = _json(_run(shared, "write", decision))
    assert again["audit"] == redelivered["audit"]

    assert (shared["workspace"] / "USER.md").read_text().count(fact) == 1
    report = _json(_run(shared, "report"))
    assert [a["decision"] for a in report["audits"].values()] == [decision]
    assert [v["kind"] for v in report["versions"]] == ["write"]  # Not mistaken for a hand edit.
