"""Resumable jobs (seed 004 P2-002): checkpoints held with a lease, taken over when the holder died, resumed
at the next run and at worker start; reflect and the transcript import SIGKILLed at random points end exactly
as an uninterrupted run does."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from reflection_site import checkpoints
from reflection_site.checkpoints import CheckpointBusy, LeaseLost, claim, finish, owner_id, release, save
from reflection_site.models import JobCheckpoint

ROOT = Path(settings.BASE_DIR)
JOB = JobCheckpoint.Job.REFLECT


def dead_owner() -> str:
    """The owner id of a process that has exited (on this machine)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return f"{owner_id().split(':')[0]}:{proc.stdout.strip()}:deadbeef"


@pytest.mark.django_db
def test_a_new_checkpoint_is_held_by_this_process():
    checkpoint = claim(JOB, "run-1", params={"run_id": "run-1"})
    assert (checkpoint.owner, checkpoint.attempts, checkpoint.stage) == (owner_id(), 1, "")
    save(checkpoint, stage="pages", candidates=[1, 2, 3], processed_index=2, state={"a": 1})
    stored = JobCheckpoint.objects.get(id=checkpoint.id)
    assert (stored.stage, stored.candidates, stored.processed_index, stored.state) == ("pages", [1, 2, 3], 2, {"a": 1})
    assert stored.lease_until > timezone.now()


@pytest.mark.django_db
def test_a_live_holder_keeps_it_and_a_dead_one_loses_it():
    live = JobCheckpoint.objects.create(
        job=JOB, key="live", owner=f"{owner_id().split(':')[0]}:1:x", lease_until=timezone.now() + dt.timedelta(hours=1)
    )  # pid 1 is alive (init)
    with pytest.raises(CheckpointBusy):
        claim(JOB, "live")

    JobCheckpoint.objects.create(
        job=JOB, key="dead", owner=dead_owner(), lease_until=timezone.now() + dt.timedelta(hours=1), processed_index=4
    )
    taken = claim(JOB, "dead")
    assert taken.owner == owner_id() and taken.processed_index == 4 and taken.attempts == 1
    assert live.owner != owner_id()


@pytest.mark.django_db
def test_an_expired_lease_on_another_machine_is_taken_over():
    JobCheckpoint.objects.create(
        job=JOB, key="remote", owner="other-host:123:abc", lease_until=timezone.now() - dt.timedelta(seconds=1)
    )
    assert claim(JOB, "remote").owner == owner_id()
    JobCheckpoint.objects.create(
        job=JOB, key="remote-live", owner="other-host:123:abc", lease_until=timezone.now() + dt.timedelta(minutes=5)
    )
    with pytest.raises(CheckpointBusy):
        claim(JOB, "remote-live")


@pytest.mark.django_db
def test_a_process_that_lost_its_checkpoint_stops_at_its_next_save():
    checkpoint = claim(JOB, "run-2")
    JobCheckpoint.objects.filter(id=checkpoint.id).update(owner="other-host:1:x")
    with pytest.raises(LeaseLost):
        save(checkpoint, processed_index=1)


@pytest.mark.django_db
def test_finished_checkpoints_are_kept_and_restart_on_request():
    checkpoint = claim(JOB, "run-3")
    save(checkpoint, stage="pages", processed_index=3)
    finish(checkpoint)
    assert claim(JOB, "run-3").is_finished
    again = claim(JOB, "run-3", restart=True)
    assert (again.is_finished, again.stage, again.processed_index, again.attempts) == (False, "", 0, 1)


@pytest.mark.django_db
def test_a_new_run_of_a_finished_job_is_no_resume(caplog):
    """A finished import or reflect run started again is its first attempt: no "resuming … (attempt N)" line
    with N climbing run after run (issue 23)."""
    for _ in range(3):
        checkpoint = claim(JOB, "run-4", restart=True)
        finish(checkpoint)
    assert checkpoint.attempts == 1 and "resuming" not in caplog.text

    interrupted = claim(JOB, "run-5")
    JobCheckpoint.objects.filter(id=interrupted.id).update(owner="gone:1", lease_until=None)
    with caplog.at_level("INFO", logger="reflection_site.checkpoints"):
        assert claim(JOB, "run-5").attempts == 2
    assert "resuming" in caplog.text and "(attempt 2)" in caplog.text


@pytest.mark.django_db
def test_resume_incomplete_finishes_what_nobody_holds(monkeypatch):
    from guardian_app.reflect import reflect

    resumed: list[str] = []
    monkeypatch.setattr(reflect, "resume_checkpoint", lambda cp: resumed.append(cp.key))
    free = claim(JOB, "free")
    release(free, error="killed")
    JobCheckpoint.objects.create(
        job=JOB, key="held", owner="other-host:1:x", lease_until=timezone.now() + dt.timedelta(1)
    )
    done = claim(JOB, "done")
    finish(done)
    JobCheckpoint.objects.create(job=JOB, key="tired", attempts=settings.CHECKPOINT_MAX_ATTEMPTS)

    assert checkpoints.resume_incomplete() == ["free"]
    assert resumed == ["free"]


@pytest.mark.django_db
def test_the_worker_start_signal_queues_the_resume(monkeypatch):
    from celery.signals import worker_ready

    from guardian_app import tasks

    sent: list[bool] = []
    monkeypatch.setattr(tasks.run_resume_jobs, "delay", lambda: sent.append(True))
    worker_ready.send(sender=None)
    assert sent == [True]


@pytest.mark.django_db
def test_the_resume_task_resumes_interrupted_runs_and_requeues_stuck_ones(reflect_log, sent_tasks, workspace):
    from guardian_app import tasks
    from guardian_app.models import ReflectRun
    from guardian_app.reflect.reflect import start_run

    reflect_log("- W @Peter: In Marrakech.")
    interrupted = start_run(since="7d")
    cp = claim(JOB, interrupted.id, params={"run_id": interrupted.id})
    release(cp)
    stuck = start_run(since="7d")
    ReflectRun.objects.filter(id=stuck.id).update(created_at=timezone.now() - dt.timedelta(hours=1))
    sent = sent_tasks.to("guardian_app.tasks.run_reflect", single=True)

    result = tasks.run_resume_jobs()

    assert result == {"resumed": [interrupted.id], "requeued": 1} and sent == [stuck.id]
    assert ReflectRun.objects.get(id=interrupted.id).status == "done"
    assert (workspace / "bank/entities/Peter.md").exists()


@pytest.mark.django_db
def test_an_import_resumes_from_its_checkpoint(tmp_path):
    from sessions_app.models import ConversationTurn
    from sessions_app.openclaw_import import import_key, import_sessions, transcript_files

    folder = tmp_path / "sessions"
    shutil.copytree(ROOT / "tests/fixtures/openclaw_sessions", folder)
    files = transcript_files(folder)
    # A run that stopped after its first file: the second run imports only the rest.
    cp = claim(JobCheckpoint.Job.OPENCLAW_IMPORT, import_key(folder), params={"path": str(folder)})
    save(cp, stage="importing", candidates=[f.relative_to(folder).as_posix() for f in files], processed_index=1)
    release(cp)

    report = import_sessions(folder)

    assert report.files == len(files) - 1
    assert JobCheckpoint.objects.get(id=cp.id).is_finished
    assert ConversationTurn.objects.filter(session__id__startswith="agent:").exists()


# --- Killed at random points, in separate processes ----------------------------------------------------------
def _env(db: Path, workspace: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DIE_AT"}}
    env.update(
        DATABASE_URL=f"sqlite:///{db}",
        WORKSPACE_DIR=str(workspace),
        LLM_BASE_URL="",
        SQLITE_BUSY_TIMEOUT_MS="60000",
        CELERY_BROKER_CONNECTION_MAX_RETRIES="0",
        DJANGO_SETTINGS_MODULE="reflection_site.settings",
        PYTHONPATH=str(ROOT),
        TIME_ZONE="UTC",
        **extra,
    )
    return env


@pytest.fixture(scope="module")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("reflect-db")
    db = folder / "template.sqlite3"
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=_env(db, folder / "ws"), check=True, timeout=300
    )
    return db


LOG = """# {day}

Met @Peter at the café; he says @The-Castle needs a new roof.

## Retain
- W @Peter: Currently in Marrakech (Nov 27 - Dec 1) for Andy's birthday.
- B @warelay: I fixed the Baileys WS crash by wrapping connection.update in try/catch.
- O(c=0.95) @Peter: Prefers short replies on WhatsApp (<1500 chars); long content goes into a file.
- O(c=0.7) @Peter: Likes dark mode in every app.
- O(c=0.9) @Peter: Does not like dark mode in every app any more.
- W @Peter: Prefers short replies on WhatsApp; long content goes into a file.
- W @The-Castle: The roof leaks in the north tower.
"""


class Sandbox:
    """A copy of the migrated database and a workspace with the same daily log."""

    def __init__(self, template: Path, folder: Path, until: dt.datetime):
        folder.mkdir()
        self.db = folder / "db.sqlite3"
        shutil.copy(template, self.db)
        self.workspace = folder / "ws"
        (self.workspace / "memory").mkdir(parents=True)
        (self.workspace / "MEMORY.md").write_text("# Memory\n\n- The agent runs on the Castle server.\n")
        day = until.date().isoformat()
        (self.workspace / "memory" / f"{day}.md").write_text(LOG.format(day=day))
        self.until = until

    def run(self, module_command: str, *args: str, die_at: int | None = None) -> subprocess.CompletedProcess[str]:
        extra = {"DIE_AT": str(die_at)} if die_at else {}
        return subprocess.run(
            [sys.executable, "-m", "tests.guardian_app.reflect_procs", module_command, *args],
            cwd=ROOT,
            env=_env(self.db, self.workspace, **extra),
            capture_output=True,
            text=True,
            timeout=300,
        )

    def reflect(self, die_at: int | None = None) -> subprocess.CompletedProcess[str]:
        return self.run("reflect", "7d", self.until.isoformat(), die_at=die_at)

    def state(self, command: str = "reflect-state") -> dict[str, Any]:
        proc = self.run(command)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])


def _json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.timeout(1200)  # A dozen reflect processes: ~1 minute idle, much more on a loaded machine.
def test_reflect_killed_at_random_points_ends_as_an_uninterrupted_run(migrated_db, tmp_path):
    until = timezone.now().replace(microsecond=0)
    baseline = Sandbox(migrated_db, tmp_path / "baseline", until)
    clean = _json(baseline.reflect())
    assert clean["status"] == "done"
    expected = baseline.state()
    events = clean["events"]
    assert events > 20, events  # Saves, opinion commits and file writes: enough points to kill at.
    assert "bank/entities/Peter.md" in expected["files"] and "bank/opinions.md" in expected["files"]

    rng = random.Random(20251127)
    points = sorted(rng.sample(range(1, events + 1), 6))
    for point in points:
        box = Sandbox(migrated_db, tmp_path / f"kill-{point}", until)
        killed = box.reflect(die_at=point)
        assert killed.returncode == -9, (point, killed.stderr[-2000:])
        second = rng.randint(1, 6)  # Killed again, a few events into the resume.
        box.reflect(die_at=second)
        finished = _json(box.reflect())
        assert finished["status"] == "done", point
        assert box.state() == expected, f"killed at event {point} then {second}"


@pytest.mark.slow
@pytest.mark.timeout(1200)  # A dozen reflect processes: ~1 minute idle, much more on a loaded machine.
def test_the_import_killed_at_random_points_ends_as_an_uninterrupted_one(migrated_db, tmp_path):
    until = timezone.now()
    folder = tmp_path / "sessions"
    shutil.copytree(ROOT / "tests/fixtures/openclaw_sessions", folder)
    baseline = Sandbox(migrated_db, tmp_path / "baseline", until)
    clean = _json(baseline.run("import", str(folder)))
    expected = baseline.state("import-state")
    assert expected["turns"] and expected["open_checkpoints"] == 0

    rng = random.Random(7)
    for point in sorted(rng.sample(range(1, clean["events"] + 1), 4)):
        box = Sandbox(migrated_db, tmp_path / f"kill-{point}", until)
        killed = box.run("import", str(folder), die_at=point)
        assert killed.returncode == -9, killed.stderr[-2000:]
        _json(box.run("import", str(folder)))
        assert box.state("import-state") == expected, f"killed at event {point}"
