"""File faults (issue 8, item 4): a failure injected at each step of a write, through the seam
``guardian_app.ws.fs`` (mkstemp, write, fsync, chmod, os.replace, fsync of the folder, unlink).

- An I/O error (a full disk, an fsync error, a failed rename) at any step: the file holds exactly its old
  content, never a partial or empty one; the audit says ``failed``; the history still matches the disk;
  a retry writes the fact once. The same for rollbacks: the file keeps its content and nothing is recorded.
- A crash (the process killed) at any step, or between the file write and its record: the write-ahead
  audit stays; the reconciler (drift check / guardian sweep) records the version, and the fact is in the
  file exactly once.
- A random mix over many writes (``FAULT_WRITES``, default 300; the long mode ``FAULT_WRITES=3000``): the
  same invariants after every write, and the counts (faults injected per step, crashes, outcomes, partial
  files, lost, duplicated) are printed and written to ``test-output/reliability/file_faults.json``.
"""

from __future__ import annotations

import errno
import json
import os
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from guardian_app.models import FileSnapshot, FileVersion, Rollback, WorkspaceFile, WriteGuardianAudit
from guardian_app.write import history
from guardian_app.write import workspace as ws
from guardian_app.write.diffs import content_hash
from guardian_app.write.guardian import retry_write, write_fact
from guardian_app.write.recovery import sweep_pending_decisions
from guardian_app.write.rollback import rollback_write
from tests.services import ROOT

pytestmark = pytest.mark.django_db
Status = WriteGuardianAudit.Status

WRITE_STEPS = ("mkstemp", "write", "fsync", "chmod", "replace", "fsync_dir")
ERRORS = {
    "mkstemp": errno.EMFILE,
    "write": errno.ENOSPC,
    "fsync": errno.EIO,
    "chmod": errno.EPERM,
    "replace": errno.EXDEV,
    "fsync_dir": errno.EIO,
    "unlink": errno.EACCES,
}
FAULT_WRITES = int(os.environ.get("FAULT_WRITES", "300"))
REPORT_DIR = ROOT / "test-output" / "reliability"


class Crash(BaseException):  # noqa: N818 - a process that dies, not an error anyone handles.
    """The process killed at this point: nothing after it runs, no ``except Exception`` catches it."""


class Faults:
    """Makes chosen steps of ``ws.fs`` fail: ``faults.fail("replace")`` fails the next call to it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.armed: dict[str, BaseException | None] = {}
        self.injected: Counter[str] = Counter()
        self.calls: list[str] = []
        real = ws.FileSystem
        for step in (*WRITE_STEPS, "unlink"):
            monkeypatch.setattr(ws.fs, step, self._wrap(step, getattr(real, step)))

    def _wrap(self, step: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(step)
            exc = self.armed.pop(step, None)
            if exc is None:
                return real(*args, **kwargs)
            self.injected[step] += 1
            if step == "write" and isinstance(exc, OSError):
                fh, data = args
                fh.write(data[: len(data) // 2])  # A full disk: half of it reached the temp file.
                fh.flush()
            raise exc

        return call

    def fail(self, step: str, exc: BaseException | None = None) -> None:
        self.armed[step] = exc if exc is not None else OSError(ERRORS[step], f"injected {step} failure")


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Faults:
    return Faults(monkeypatch)


def crash_once(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    """The next call of ``module.name`` kills the process (the real function is back for the reconciler)."""
    real = getattr(module, name)

    def crash(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(module, name, real)
        raise Crash

    monkeypatch.setattr(module, name, crash)


def _files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file())


def assert_history_matches_disk(name: str, folder: Path) -> None:
    """The file equals its last recorded version, and no write is left half-recorded."""
    row = WorkspaceFile.objects.select_related("current_version__snapshot").get(file_name=name)
    path = folder / name
    assert row.pending_audit_id is None
    version = row.current_version
    recorded = version.snapshot.content if version is not None and version.snapshot_id else None
    assert (path.read_text() if path.exists() else None) == recorded


@pytest.mark.parametrize("step", WRITE_STEPS)
def test_an_io_error_at_any_step_of_a_write_leaves_the_old_file_and_a_failed_audit(
    step, faults, write, make_decision, user_md, workspace
):
    write("Prefers green tea in the afternoon.")
    old = user_md.read_bytes()
    decision = make_decision("UPDATE_USER", "Likes long walks on Sundays.")

    faults.fail(step)
    audit = write_fact(decision)

    assert faults.injected[step] == 1
    assert audit.status == Status.FAILED and "could not be written" in audit.reason, audit.reason
    assert user_md.read_bytes() == old  # Exactly the old content: not partial, not empty, not the new one.
    assert _files_in(workspace) == ["USER.md"]  # No temp file left behind.
    assert_history_matches_disk("USER.md", workspace)
    assert workspace_versions() == ["write"]

    retried = retry_write(audit, requested_by="operator")  # Nothing is lost: the operator's retry writes it.
    assert retried.status == Status.WRITTEN
    assert user_md.read_text().count("Likes long walks on Sundays.") == 1
    assert_history_matches_disk("USER.md", workspace)


@pytest.mark.parametrize("step", WRITE_STEPS)
def test_an_io_error_creating_a_file_leaves_no_file(step, faults, make_decision, user_md, workspace):
    decision = make_decision("UPDATE_USER", "Likes long walks on Sundays.")
    faults.fail(step)
    audit = write_fact(decision)
    assert audit.status == Status.FAILED
    assert not user_md.exists() and _files_in(workspace) == []
    assert WorkspaceFile.objects.filter(file_name="USER.md", pending_audit__isnull=False).count() == 0


def workspace_versions(name: str = "USER.md") -> list[str]:
    return list(FileVersion.objects.filter(file_name=name).order_by("seq").values_list("kind", flat=True))


@pytest.mark.parametrize("step", WRITE_STEPS)
def test_an_io_error_during_a_rollback_changes_nothing(step, faults, write, user_md, workspace):
    write("Prefers green tea in the afternoon.")
    audit = write("Likes long walks on Sundays.")
    before = user_md.read_bytes()

    faults.fail(step)
    with pytest.raises(Exception):  # noqa: B017 - an OSError, or the guardian's error wrapping it.
        rollback_write(audit, reason="wrong", requested_by="alice")

    assert user_md.read_bytes() == before
    audit.refresh_from_db()
    assert audit.status == Status.WRITTEN and not Rollback.objects.exists()
    assert_history_matches_disk("USER.md", workspace)
    assert _files_in(workspace) == ["USER.md"]

    rollback_write(audit, reason="wrong", requested_by="alice")  # Once the disk works again.
    assert "long walks" not in user_md.read_text() and "green tea" in user_md.read_text()
    assert_history_matches_disk("USER.md", workspace)


@pytest.mark.parametrize("step", ["unlink", "fsync_dir"])
def test_an_io_error_removing_a_created_file_changes_nothing(step, faults, write, user_md, workspace):
    audit = write("Prefers green tea in the afternoon.")
    before = user_md.read_bytes()
    faults.fail(step)
    with pytest.raises(Exception):  # noqa: B017
        rollback_write(audit, reason="wrong", requested_by="alice")
    assert user_md.read_bytes() == before
    audit.refresh_from_db()
    assert audit.status == Status.WRITTEN and not Rollback.objects.exists()
    assert_history_matches_disk("USER.md", workspace)


@pytest.mark.parametrize("step", [*WRITE_STEPS, "finish_write"])
def test_a_crash_at_any_step_is_finished_by_the_reconciler(
    step, faults, write, make_decision, user_md, workspace, monkeypatch
):
    """A process killed mid-write (``finish_write``: after the file was replaced, before its record)."""
    write("Prefers green tea in the afternoon.")
    decision = make_decision("UPDATE_USER", "Likes long walks on Sundays.")
    if step == "finish_write":
        crash_once(monkeypatch, history, "finish_write")
    else:
        faults.fail(step, Crash())
    with pytest.raises(Crash):
        write_fact(decision)

    pending = WriteGuardianAudit.objects.get(decision=decision)
    assert pending.status == Status.FAILED and pending.reason == history.INTERRUPTED
    disk = user_md.read_text()
    replaced = step in ("fsync_dir", "finish_write")
    assert ("long walks" in disk) is replaced  # Old or new, nothing in between.

    added = history.check_drift()  # The reconciler (the drift check; the guardian sweep calls it too).
    pending.refresh_from_db()
    assert pending.status == Status.WRITTEN
    assert [v.kind for v in added] == ["write"] and added[0].audit_id == pending.id
    assert user_md.read_text().count("Likes long walks on Sundays.") == 1
    assert_history_matches_disk("USER.md", workspace)
    assert workspace_versions() == ["write", "write"]  # Not a hand edit: the write is attributed.
    assert write_fact(decision).id == pending.id  # A redelivered task finds it.


@pytest.mark.parametrize("step", [*WRITE_STEPS, "record_version"])
def test_a_crash_during_a_rollback_is_recorded_by_the_reconciler(step, faults, write, user_md, workspace, monkeypatch):
    """A process killed mid-rollback (``record_version``: after the file was replaced, before its record):
    the reconciler records the rollback if the file holds its result, and otherwise it did not happen."""
    write("Prefers green tea in the afternoon.")
    audit = write("Likes long walks on Sundays.")
    before = user_md.read_text()
    if step == "record_version":
        crash_once(monkeypatch, history, "record_version")
    else:
        faults.fail(step, Crash())
    with pytest.raises(Crash):
        rollback_write(audit, reason="wrong", requested_by="alice")
    replaced = step in ("fsync_dir", "record_version")
    assert ("long walks" in user_md.read_text()) is not replaced  # Old or new, nothing in between.

    history.check_drift()
    audit.refresh_from_db()
    assert_history_matches_disk("USER.md", workspace)
    if replaced:
        assert audit.status == Status.ROLLED_BACK and Rollback.objects.get(audit=audit).rolled_back_by == "alice"
        assert workspace_versions() == ["write", "write", "rollback"]
    else:
        assert user_md.read_text() == before
        assert audit.status == Status.WRITTEN and not Rollback.objects.exists()
        assert workspace_versions() == ["write", "write"]
        rollback_write(audit, reason="wrong", requested_by="alice")  # It can be done again.
        assert workspace_versions() == ["write", "write", "rollback"]
    assert "long walks" not in user_md.read_text() and "green tea" in user_md.read_text()


@pytest.mark.parametrize("step", ["unlink", "fsync_dir"])
def test_a_crash_removing_a_created_file_is_recorded_by_the_reconciler(step, faults, write, user_md, workspace):
    audit = write("Prefers green tea in the afternoon.")
    faults.fail(step, Crash())
    with pytest.raises(Crash):
        rollback_write(audit, reason="wrong", requested_by="alice")
    history.check_drift()
    audit.refresh_from_db()
    assert_history_matches_disk("USER.md", workspace)
    if step == "fsync_dir":  # The file was removed: the rollback happened.
        assert not user_md.exists() and audit.status == Status.ROLLED_BACK
    else:
        assert user_md.exists() and audit.status == Status.WRITTEN and not Rollback.objects.exists()


def test_the_guardian_sweep_finishes_a_crashed_write_too(faults, write, make_decision, user_md, workspace):
    write("Prefers green tea in the afternoon.")
    decision = make_decision("UPDATE_USER", "Likes long walks on Sundays.")
    faults.fail("replace", Crash())
    with pytest.raises(Crash):
        write_fact(decision)
    sweep_pending_decisions(grace_s=0)
    assert WriteGuardianAudit.objects.get(decision=decision).status == Status.WRITTEN
    assert user_md.read_text().count("Likes long walks on Sundays.") == 1
    assert_history_matches_disk("USER.md", workspace)


@pytest.mark.timeout(300 + FAULT_WRITES // 5)
def test_random_faults_over_many_writes_never_leave_a_partial_file_or_lose_a_fact(
    faults, make_decision, workspace, capsys
):
    """Each write (or rollback) has a 1 in 4 chance of a fault at a random step: an I/O error or a crash."""
    seed = int(os.environ.get("FAULT_SEED", "0")) or random.SystemRandom().randrange(1, 1 << 30)
    rng = random.Random(seed)
    files = ["USER.md", "MEMORY.md"]
    outcomes: Counter[str] = Counter()
    crashes = partial_files = 0
    for n in range(FAULT_WRITES):
        name = rng.choice(files)
        before = (workspace / name).read_bytes() if (workspace / name).exists() else None
        fault: str | None = None
        if rng.random() < 0.25:
            fault = rng.choice(WRITE_STEPS)
            crash = rng.random() < 0.3
            faults.fail(fault, Crash() if crash else None)
        written = list(WriteGuardianAudit.objects.filter(target_file=name, status=Status.WRITTEN))
        try:
            if written and rng.random() < 0.2:
                outcomes["rollback"] += 1
                try:
                    rollback_write(rng.choice(written), reason="random", requested_by="test")
                except Crash:
                    raise
                except Exception:  # noqa: BLE001 - a conflict, or the injected I/O error.
                    outcomes["rollback_refused"] += 1
            else:
                decision = "UPDATE_USER" if name == "USER.md" else "UPDATE_MEMORY"
                fact = f"Fact number {n} is about {rng.choice(['tea', 'walks', 'chess', 'jazz'])} {n * 7919 % 10007}."
                audit = write_fact(make_decision(decision, fact))
                outcomes[audit.status] += 1
        except Crash:
            crashes += 1
            history.check_drift([name])  # The reconciler, as after a restart.
        faults.armed.clear()
        after = (workspace / name).read_bytes() if (workspace / name).exists() else None
        recorded = set(FileSnapshot.objects.filter(file_name=name).values_list("content_hash", flat=True))
        emptied = after == b"" and before != b""
        if after is not None and (emptied or content_hash(after.decode()) not in recorded):
            partial_files += 1  # Emptied, or a content that no write or rollback produced.
        assert_history_matches_disk(name, workspace)
        assert not [p for p in _files_in(workspace) if p.endswith(".tmp")] or crashes  # Temp files only after a crash.

    # Nothing lost (a written fact missing), nothing doubled, nothing stray (a fact of a write that failed,
    # or was rolled back, still in the file).
    lost, duplicated, stray = [], [], []
    for name in files:
        text = (workspace / name).read_text() if (workspace / name).exists() else ""
        for audit in WriteGuardianAudit.objects.filter(target_file=name):
            count = text.count(audit.candidate_fact)
            if audit.status == Status.WRITTEN and count != 1:
                (lost if count == 0 else duplicated).append((audit.id, audit.candidate_fact))
            elif audit.status != Status.WRITTEN and count:
                stray.append((audit.id, audit.status, audit.candidate_fact))
    figures = {
        "seed": seed,
        "operations": FAULT_WRITES,
        "faults_injected": dict(faults.injected),
        "faults_total": sum(faults.injected.values()),
        "crashes": crashes,
        "outcomes": dict(outcomes),
        "partial_or_empty_files": partial_files,
        "lost": len(lost),
        "duplicated": len(duplicated),
        "stray": len(stray),
    }
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "file_faults.json").write_text(json.dumps(figures, indent=2) + "\n")
    with capsys.disabled():
        print("\nfile faults:", json.dumps(figures))
    assert partial_files == 0 and lost == [] and duplicated == [] and stray == [], (lost, duplicated, stray)
    assert sum(faults.injected.values()) > FAULT_WRITES // 8
