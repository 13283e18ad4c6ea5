"""Rollback: undo one audited write without losing anything written since.

The revert itself is ``revert.plan_revert`` (a three-way merge of the write's change against the file as it
is now); which lines are whose is ``blame`` (line ownership over the file's versions); a whole session's
writes are ``session_rollback``.

``rollback_write(audit, reason=…, requested_by=…, force=False)``:

1. Lock the file; reconcile (a hand edit since the last known version becomes a version of its own).
2. Refuse (409) an audit already rolled back, or one that did not write.
3. If the file still equals the audit's after-snapshot, restore the before-snapshot (a file the write
   created is removed). Otherwise revert only that write's change on top of the current content
   (``plan_revert``), putting back only what ``blame.revert_target`` allows.
4. If later changes overlap the write's lines, raise RollbackConflict naming the later audits or hand
   edits, and change nothing; with ``force`` the write's hunks are reverted.
5. Write-ahead (``history.write_ahead``): commit the ``Rollback`` (with the snapshot of the content being
   replaced and the audit's previous status) and mark the file pending on the audit; write the file; then,
   in one transaction, mark the audit ``rolled_back`` and record a ``rollback`` file version. A crash in
   between is finished by the reconciler from what the disk holds.
6. Report what happened from the file: ``rollback.change`` lists the lines removed and restored, measured by
   diffing the file before and after (empty when the write's lines were already gone).

``preview_rollback`` is the same plan as a dry run (the admin's confirmation page shows its exact diff or its
conflict, and a forced one's own diff).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from django.conf import settings

from guardian_app.errors import GuardianError, NotRollbackable, RollbackConflict, RollbackDisabled, UnsafeFile
from guardian_app.models import FileSnapshot, FileVersion, Rollback, WriteGuardianAudit
from guardian_app.write import history, locks
from guardian_app.write.blame import blame, revert_target, roles_of
from guardian_app.write.diffs import Matcher, lines_of, unified_diff
from guardian_app.write.revert import RevertPlan, plan_revert

logger = logging.getLogger(__name__)

Status = WriteGuardianAudit.Status
MAX_CULPRIT_SCAN = 200


class RollbackStale(GuardianError):
    """The file changed between a dry run an operator saw and the confirmation; nothing was changed."""

    code = "rollback_stale"
    status = HTTPStatus.CONFLICT


# --- What a rollback changed ---------------------------------------------------------------------
@dataclass(frozen=True)
class LineChange:
    """What a rollback did to the file, measured by diffing it before and after."""

    diff: str
    removed: list[str]
    restored: list[str]

    @property
    def changed(self) -> bool:
        return bool(self.diff)

    def as_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "lines_removed": self.removed,
            "lines_restored": self.restored,
            "diff": self.diff,
        }

    def summary(self) -> str:
        if not self.changed:
            return "the file did not change (the write's lines were already gone)"
        return f"{len(self.removed)} line(s) removed, {len(self.restored)} restored"


def measure_change(name: str, old: str | None, new: str | None) -> LineChange:
    diff = unified_diff(old, new, name)
    removed, restored = [], []
    for tag, i1, i2, j1, j2 in Matcher(None, lines_of(old), lines_of(new)).get_opcodes():
        if tag != "equal":
            removed += [line.rstrip("\r\n") for line in lines_of(old)[i1:i2]]
            restored += [line.rstrip("\r\n") for line in lines_of(new)[j1:j2]]
    return LineChange(diff, removed, restored)


def rollback_change(rollback: Rollback) -> LineChange:
    """A recorded rollback's change to its file (from its version's snapshots), for reports after the fact."""
    if getattr(rollback, "change", None) is not None:
        return rollback.change
    version = FileVersion.objects.filter(rollback=rollback).select_related("snapshot").first()
    replaced = rollback.replaced_snapshot.content if rollback.replaced_snapshot_id else None
    restored = version.snapshot.content if version is not None and version.snapshot_id else None
    return measure_change(rollback.audit.target_file, replaced, restored)


# --- Checks and conflict reports -----------------------------------------------------------------
def snapshot_text(snapshot: Any) -> str | None:
    return snapshot.content if snapshot is not None else None


def check_rollbackable(audit: WriteGuardianAudit) -> None:
    if not settings.WRITE_GUARDIAN_ENABLE_ROLLBACK:
        raise RollbackDisabled("Rollback is disabled (WRITE_GUARDIAN_ENABLE_ROLLBACK=false).")
    if audit.status == Status.ROLLED_BACK:
        rollback = Rollback.objects.filter(audit=audit).first()
        when = f" on {rollback.rolled_back_at:%Y-%m-%d %H:%M:%S} by {rollback.rolled_back_by}" if rollback else ""
        raise NotRollbackable(f"Audit {audit.id} was already rolled back{when}.", code="already_rolled_back")
    if audit.status != Status.WRITTEN:
        raise NotRollbackable(
            f"Audit {audit.id} did not write anything (status {audit.status}); there is nothing to roll back.",
            code="nothing_to_roll_back",
        )
    if audit.after_snapshot_id is None:
        raise NotRollbackable(f"Audit {audit.id} has no after-snapshot to roll back from.", code="nothing_to_roll_back")


def _later_versions(audit: WriteGuardianAudit) -> list[FileVersion]:
    written = FileVersion.objects.filter(audit=audit, kind=FileVersion.Kind.WRITE).order_by("seq").first()
    if written is None:
        return []
    return list(
        FileVersion.objects.filter(file_name=audit.target_file, seq__gt=written.seq)
        .select_related("snapshot", "audit", "rollback")
        .order_by("seq")[: MAX_CULPRIT_SCAN + 1]
    )


def describe_version(version: FileVersion) -> str:
    when = f"{version.created_at:%Y-%m-%d %H:%M:%S}"
    if version.kind == FileVersion.Kind.WRITE and version.audit_id:
        fact = (version.audit.candidate_fact or "")[:60]
        return f"write {version.audit_id} ({fact!r}, {when})"
    if version.kind == FileVersion.Kind.ROLLBACK:
        return f"rollback of {version.audit_id} ({when})"
    if version.kind == FileVersion.Kind.AGENT_EDIT:
        return f"agent edit {version.id} ({when})"
    return f"hand edit {version.id} ({when})"


def conflict_for(audit: WriteGuardianAudit, plan: RevertPlan) -> RollbackConflict:
    """A RollbackConflict naming the later versions that introduced the overlap."""
    after = snapshot_text(audit.after_snapshot) or ""
    before = snapshot_text(audit.before_snapshot)
    later = _later_versions(audit)
    culprits: list[FileVersion] = []
    if len(later) <= MAX_CULPRIT_SCAN:
        overlapping = False
        for version in later:
            now = plan_revert(after, history.version_content(version), before)
            if now.conflicts and not overlapping:
                culprits.append(version)
            overlapping = bool(now.conflicts)
    if not culprits:
        culprits = later[:MAX_CULPRIT_SCAN]
    later_audits = [
        v.audit_id
        for v in culprits
        if v.kind != FileVersion.Kind.HAND_EDIT and v.kind != FileVersion.Kind.INITIAL and v.audit_id
    ]
    # The agent's own edits (openclaw profile) are listed with the hand edits: changes no audit made.
    outside = (FileVersion.Kind.HAND_EDIT, FileVersion.Kind.AGENT_EDIT, FileVersion.Kind.INITIAL)
    hand_edits = [v.id for v in culprits if v.kind in outside]
    named = "; ".join(describe_version(v) for v in culprits) or "changes made since"
    return RollbackConflict(
        f"Rolling back {audit.id} would overwrite later changes to {audit.target_file} that overlap it: {named}. "
        "Nothing was changed. Roll those back first, edit the file by hand, or force the rollback.",
        later_audits=later_audits,
        hand_edits=hand_edits,
        details={
            "audit_id": audit.id,
            "file_name": audit.target_file,
            "conflicts": [c.as_dict() for c in plan.conflicts[:10]],
            "later_versions": [
                {
                    "version_id": v.id,
                    "seq": v.seq,
                    "kind": v.kind,
                    "audit_id": v.audit_id,
                    "created_at": v.created_at.isoformat(),
                }
                for v in culprits
            ],
        },
    )


# --- Applying ------------------------------------------------------------------------------------
def apply_locked(
    audit: WriteGuardianAudit,
    plan: RevertPlan,
    current: str | None,
    *,
    reason: str,
    requested_by: str,
    forced: bool,
    replaced: FileSnapshot | None | object = ...,
    seq: int | None = None,
) -> Rollback:
    """Write the planned content and record the rollback (file lock held).

    Write-ahead, as a guarded write is: the ``Rollback`` row is committed first with the file marked
    pending on the audit (which still says ``written``); then the file changes; then the audit becomes
    ``rolled_back`` and the file gets its version. A crash in between is finished by the reconciler
    (``history.sync``) from what the disk holds; an I/O error puts the file back and removes the row.
    """
    name = audit.target_file

    def intent() -> tuple[Rollback, FileSnapshot | None]:
        if not WriteGuardianAudit.objects.filter(id=audit.id, status=Status.WRITTEN).exists():
            audit.refresh_from_db()
            check_rollbackable(audit)
        # The same snapshot as the before-snapshot when the whole of it comes back (stored once per content).
        restored = history.snapshot_of(name, plan.content)
        rollback = Rollback.objects.create(
            audit=audit,
            rolled_back_by=requested_by,
            reason=reason,
            replaced_snapshot=history.snapshot_of(name, current) if replaced is ... else replaced,
            restored_snapshot=restored,
            previous_status=audit.status,
            method=plan.method,
            forced=forced and bool(plan.conflicts),
        )
        return rollback, restored

    def record(made: tuple[Rollback, FileSnapshot | None]) -> None:
        WriteGuardianAudit.objects.filter(id=audit.id).update(status=Status.ROLLED_BACK)
        history.record_version(
            name,
            plan.content,
            kind=FileVersion.Kind.ROLLBACK,
            audit=audit,
            rollback=made[0],
            previous_content=current,
            snapshot=made[1],
            seq=seq,
        )

    def abandon(made: tuple[Rollback, FileSnapshot | None], error: OSError | UnsafeFile) -> None:
        Rollback.objects.filter(id=made[0].id, audit__status=Status.WRITTEN).delete()

    rollback, _ = history.write_ahead(name, audit, current, plan.content, intent=intent, record=record, abandon=abandon)
    audit.status = Status.ROLLED_BACK
    logger.info("rolled back %s of %s (%s) by %s", audit.id, name, plan.method, requested_by)
    return rollback


def clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise GuardianError("Give a reason for the rollback.", code="reason_required", status=422)
    return reason


def _plan_locked(
    audit: WriteGuardianAudit, state: history.FileState, *, force: bool
) -> tuple[RevertPlan, RollbackConflict | None]:
    """The revert of ``audit`` on the file as ``state`` holds it (file lock held, after ``sync``)."""
    current = state.content
    before = snapshot_text(audit.before_snapshot)
    unchanged = current is not None and state.content_hash == audit.after_snapshot.content_hash
    after = audit.after_snapshot.content
    known = blame(audit.target_file)
    target = revert_target(audit, before, after, known)
    if unchanged and target == before:
        plan = RevertPlan(before, "restore")  # Unchanged since the write: no need to merge.
    else:
        plan = plan_revert(after, current, target, force=force, roles=roles_of(audit.id, current, known))
    conflict = conflict_for(audit, plan) if plan.conflicts else None
    return plan, conflict


def _fresh(audit: WriteGuardianAudit) -> WriteGuardianAudit:
    return WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot").get(id=audit.id)


@dataclass
class RollbackPreview:
    """A dry run of one rollback: what the file would become (``change``) or the conflict that stops it."""

    audit: WriteGuardianAudit
    force: bool
    content_hash: str  # of the file the plan was made on ("" for no file): a confirmation must match it
    plan: RevertPlan
    change: LineChange
    conflict: RollbackConflict | None

    @property
    def method(self) -> str:
        return self.plan.method


@contextlib.contextmanager
def _locked_fresh(audit: WriteGuardianAudit) -> Iterator[tuple[history.FileState, WriteGuardianAudit]]:
    """The audit's file locked and synced with the disk, and the audit read again under the lock; both checked
    rollbackable (before the lock, so a refusal waits for nothing, and after it, for a rollback that won)."""
    check_rollbackable(audit)
    with locks.file_lock(audit.target_file):
        state = history.sync(audit.target_file)
        fresh = _fresh(audit)
        check_rollbackable(fresh)
        yield state, fresh


def preview_rollback(audit: WriteGuardianAudit, *, force: bool = False) -> RollbackPreview:
    """Run the rollback as a dry run: the exact change it would make now, or its conflict; nothing is written
    but the record of a hand edit made since the last look (as any look at the file does).

    Raises NotRollbackable, RollbackDisabled, FileBusy as ``rollback_write`` does.
    """
    name = audit.target_file
    with _locked_fresh(audit) as (state, fresh):
        plan, conflict = _plan_locked(fresh, state, force=force)
    change = measure_change(name, state.content, state.content if conflict and not force else plan.content)
    return RollbackPreview(fresh, force, state.content_hash or "", plan, change, None if force else conflict)


def rollback_write(
    audit: WriteGuardianAudit,
    *,
    reason: str,
    requested_by: str,
    force: bool = False,
    expected_hash: str | None = None,
) -> Rollback:
    """Undo one write and keep everything written since (steps in the module docstring).

    The returned ``Rollback`` carries ``change``: the lines removed and restored, measured by diffing the file
    before and after. ``expected_hash`` (a confirmation page's): the file must still be the one the operator
    saw, or RollbackStale is raised and nothing changes.

    Raises NotRollbackable (already rolled back, or nothing written), RollbackConflict (later changes
    overlap; nothing changed), RollbackStale, RollbackDisabled, FileBusy.
    """
    reason = clean_reason(reason)
    name = audit.target_file
    with _locked_fresh(audit) as (state, fresh):
        if expected_hash is not None and expected_hash != (state.content_hash or ""):
            raise RollbackStale(
                f"{name} changed since the rollback of {audit.id} was shown; nothing was changed. Look again."
            )
        current = state.content
        plan, conflict = _plan_locked(fresh, state, force=force)
        if conflict is not None and not force:
            raise conflict
        # After sync the file holds its current version's content: that snapshot is what is replaced.
        replaced = FileSnapshot(id=state.snapshot_id) if state.snapshot_id and current is not None else None
        rollback = apply_locked(
            fresh,
            plan,
            current,
            reason=reason,
            requested_by=requested_by or "system",
            forced=force,
            replaced=replaced,
            seq=state.seq + 1,  # The lock is held: the current version is the last one.
        )
    rollback.change = measure_change(name, current, plan.content)
    audit.status = fresh.status
    return rollback
