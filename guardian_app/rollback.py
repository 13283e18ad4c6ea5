"""Rollback: undo one audited write, or a whole session's, without losing anything written since.

``rollback_write(audit, reason=…, requested_by=…, force=False)``:

1. Lock the file; reconcile (a hand edit since the last known version becomes a version of its own).
2. Refuse (409) an audit already rolled back, or one that did not write.
3. If the file still equals the audit's after-snapshot, restore the before-snapshot (a file the write
   created is removed). Otherwise revert only that write's change on top of the current content with a
   three-way merge (``merge3``: base = after-snapshot, ours = current file, theirs = before-snapshot);
   where merge3 reports a conflict the region is refined line by line, so a later line added next to
   the reverted one (the usual case: two facts appended one after the other) is not a conflict.
4. If later changes overlap the write's lines, raise RollbackConflict naming the later audits or hand
   edits, and change nothing; with ``force`` the reverted side wins in the overlapping regions only.
5. Write-ahead: commit the ``Rollback`` (with the snapshot of the content being replaced and the audit's
   previous status) and mark the file pending on the audit; write the file; then, in one transaction,
   mark the audit ``rolled_back`` and record a ``rollback`` file version. A crash in between is finished
   by the reconciler from what the disk holds.

``rollback_session`` plans every written audit of a session (newest first) in memory and applies only
if all are clean, or with ``partial`` the clean ones; ``dry_run`` only reports.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from merge3 import Merge3

from guardian_app import workspace
from guardian_app.diffs import Matcher, lines_of
from guardian_app.errors import GuardianError, NotRollbackable, RollbackConflict, RollbackDisabled
from guardian_app.models import FileSnapshot, FileVersion, Rollback, WorkspaceFile, WriteGuardianAudit
from reflection_site.errors import NotFound

logger = logging.getLogger(__name__)
_HEADING_RE = re.compile(r"^#{1,6}\s")

Status = WriteGuardianAudit.Status
MAX_CULPRIT_SCAN = 200


# --- The merge -----------------------------------------------------------------------------------
@dataclass
class ConflictRegion:
    base: list[str]  # the audit's lines (after-snapshot)
    ours: list[str]  # what the file holds there now
    theirs: list[str]  # what the rollback would put there (before-snapshot)

    def as_dict(self) -> dict[str, str]:
        return {"written": "".join(self.base), "now": "".join(self.ours), "before": "".join(self.theirs)}


@dataclass
class RevertPlan:
    content: str | None  # None: remove the file
    method: str  # restore | merge | forced
    conflicts: list[ConflictRegion] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.conflicts


def _is_heading(line: str) -> bool:
    return bool(_HEADING_RE.match(line.rstrip("\r\n")))


def _keep_headings(removed: list[str], replacement: list[str], after: list[str]) -> list[str]:
    """A heading the write created stays when lines added later live under it: a revert must not leave
    another fact without its section."""
    if not any(_is_heading(line) for line in removed) or any(_is_heading(line) for line in replacement):
        return replacement
    survivors = []
    for line in after:
        if _is_heading(line):
            break
        survivors.append(line)
    if not any(line.strip() for line in survivors):
        return replacement
    last = max(i for i, line in enumerate(removed) if _is_heading(line))
    kept = [removed[last]]
    if last + 1 < len(removed) and not removed[last + 1].strip():
        kept.append(removed[last + 1])
    return replacement + kept


def _resolve_region(base: list[str], ours: list[str], theirs: list[str]) -> list[str] | None:
    """Apply the revert (base -> theirs) inside one merge3 conflict region onto ``ours``, line by line.

    A change of the revert applies when every base line it touches is still in ``ours``, unchanged and
    contiguous; a pure insertion needs an unambiguous place (its neighbours in ``ours`` with nothing
    new between them). Lines that later changes added next to the reverted ones are kept. None when a
    change of the revert overlaps a later change.
    """
    kept: dict[int, int] = {}
    for i, j, n in Matcher(None, base, ours).get_matching_blocks():
        for k in range(n):
            kept[i + k] = j + k
    edits: list[tuple[int, int, list[str]]] = []
    for tag, i1, i2, j1, j2 in Matcher(None, base, theirs).get_opcodes():
        if tag == "equal":
            continue
        replacement = list(theirs[j1:j2])
        if i2 > i1:
            if any(i not in kept for i in range(i1, i2)):
                return None
            start, end = kept[i1], kept[i2 - 1] + 1
            if end - start != i2 - i1:
                return None
            edits.append((start, end, _keep_headings(base[i1:i2], replacement, ours[end:])))
        else:
            # Between base[i1 - 1] and base[i1]: both neighbours, where they survive, must agree.
            left = 0 if i1 == 0 else (kept[i1 - 1] + 1 if (i1 - 1) in kept else None)
            right = len(ours) if i1 == len(base) else kept.get(i1)
            # Lines added later at the same place: the restored lines go first, where they were.
            at = left if left is not None else right
            if at is None:
                return None
            edits.append((at, at, replacement))
    result = list(ours)
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        result[start:end] = replacement
    return result


def plan_revert(after: str, current: str | None, before: str | None, *, force: bool = False) -> RevertPlan:
    """The file content that undoes one write (``before`` -> ``after``) on top of ``current``."""
    if current == after:
        return RevertPlan(before, "restore")
    base, ours, theirs = lines_of(after), lines_of(current), lines_of(before)
    out: list[str] = []
    conflicts: list[ConflictRegion] = []
    for group in Merge3(base, ours, theirs, sequence_matcher=Matcher).merge_groups():
        kind = group[0]
        if kind != "conflict":
            out.extend(group[1])
            continue
        z, a, b = list(group[1]), list(group[2]), list(group[3])
        resolved = _resolve_region(z, a, b)
        if resolved is not None:
            out.extend(resolved)
            continue
        conflicts.append(ConflictRegion(z, a, b))
        out.extend(b if force else a)
    text = "".join(out)
    content: str | None = text
    if before is None and not text.strip():
        content = None  # The write created the file; nothing else is left in it.
    if current is None and content == "":
        content = None
    method = "forced" if conflicts and force else "merge"
    return RevertPlan(content, method, conflicts)


# --- Checks and conflict reports -----------------------------------------------------------------
def _snapshot_text(snapshot: Any) -> str | None:
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
    return f"hand edit {version.id} ({when})"


def conflict_for(audit: WriteGuardianAudit, plan: RevertPlan) -> RollbackConflict:
    """A RollbackConflict naming the later versions that introduced the overlap."""
    after = _snapshot_text(audit.after_snapshot) or ""
    before = _snapshot_text(audit.before_snapshot)
    later = _later_versions(audit)
    culprits: list[FileVersion] = []
    if len(later) <= MAX_CULPRIT_SCAN:
        overlapping = False
        for version in later:
            now = plan_revert(after, workspace.version_content(version), before)
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
    hand_edits = [v.id for v in culprits if v.kind in (FileVersion.Kind.HAND_EDIT, FileVersion.Kind.INITIAL)]
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
def _apply_locked(
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
    (``workspace.sync``) from what the disk holds; an I/O error puts the file back and removes the row.
    """
    name = audit.target_file
    with transaction.atomic():
        workspace.lock_row(name)
        previous_status = audit.status
        if not WriteGuardianAudit.objects.filter(id=audit.id, status=Status.WRITTEN).exists():
            audit.refresh_from_db()
            check_rollbackable(audit)
        if plan.method == "restore":
            restored = audit.before_snapshot
        else:
            restored = workspace.snapshot_of(name, plan.content)
        rollback = Rollback.objects.create(
            audit=audit,
            rolled_back_by=requested_by,
            reason=reason,
            replaced_snapshot=workspace.snapshot_of(name, current) if replaced is ... else replaced,
            restored_snapshot=restored,
            previous_status=previous_status,
            method=plan.method,
            forced=forced and bool(plan.conflicts),
        )
        WorkspaceFile.objects.filter(file_name=name).update(pending_audit=audit)
    if plan.content != current:
        try:
            if plan.content is None:
                workspace.remove_file(name)
            else:
                workspace.write_file(name, plan.content)
        except OSError:
            # The failure may have come after the rename (the folder's fsync): the file gets its content back.
            if not workspace.put_back(name, current):
                workspace.sync(name)  # The rolled-back content stayed: record the rollback.
            with transaction.atomic():
                Rollback.objects.filter(id=rollback.id, audit__status=Status.WRITTEN).delete()
                WorkspaceFile.objects.filter(file_name=name, pending_audit=audit).update(pending_audit=None)
            raise
    with transaction.atomic():
        workspace.lock_row(name)
        WriteGuardianAudit.objects.filter(id=audit.id).update(status=Status.ROLLED_BACK)
        workspace.record_version(
            name,
            plan.content,
            kind=FileVersion.Kind.ROLLBACK,
            audit=audit,
            rollback=rollback,
            previous_content=current,
            snapshot=restored,
            seq=seq,
        )
    audit.status = Status.ROLLED_BACK
    logger.info("rolled back %s of %s (%s) by %s", audit.id, name, plan.method, requested_by)
    return rollback


def _clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise GuardianError("Give a reason for the rollback.", code="reason_required", status=422)
    return reason


def rollback_write(audit: WriteGuardianAudit, *, reason: str, requested_by: str, force: bool = False) -> Rollback:
    """Undo one write and keep everything written since (steps in the module docstring).

    Raises NotRollbackable (already rolled back, or nothing written), RollbackConflict (later changes
    overlap; nothing changed), RollbackDisabled, FileBusy.
    """
    reason = _clean_reason(reason)
    check_rollbackable(audit)
    name = audit.target_file
    with workspace.file_lock(name):
        state = workspace.sync(name)
        fresh = (
            WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot")
            .defer("after_snapshot__content")
            .get(id=audit.id)
        )
        check_rollbackable(fresh)
        current = state.content
        before = _snapshot_text(fresh.before_snapshot)
        if current is not None and state.content_hash == fresh.after_snapshot.content_hash:
            plan = RevertPlan(before, "restore")  # Unchanged since the write: no need to load or merge it.
        else:
            plan = plan_revert(fresh.after_snapshot.content, current, before, force=force)
        if plan.conflicts and not force:
            raise conflict_for(fresh, plan)
        # After sync the file holds its current version's content: that snapshot is what is replaced.
        replaced = FileSnapshot(id=state.snapshot_id) if state.snapshot_id and current is not None else None
        rollback = _apply_locked(
            fresh,
            plan,
            current,
            reason=reason,
            requested_by=requested_by or "system",
            forced=force,
            replaced=replaced,
            seq=state.seq + 1,  # The lock is held: the current version is the last one.
        )
    audit.status = fresh.status
    return rollback


# --- Session rollback ----------------------------------------------------------------------------
@dataclass
class PlannedRollback:
    audit: WriteGuardianAudit
    status: str  # clean | conflict | rolled_back
    message: str = ""
    conflict: RollbackConflict | None = None
    plan: RevertPlan | None = None
    current: str | None = None
    rollback: Rollback | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "audit_id": self.audit.id,
            "target_file": self.audit.target_file,
            "candidate_fact": self.audit.candidate_fact,
            "status": self.status,
            "message": self.message,
            "rollback_id": self.rollback.id if self.rollback else None,
        }
        if self.conflict is not None:
            out["later_audits"] = self.conflict.later_audits
            out["hand_edits"] = self.conflict.hand_edits
        return out


@dataclass
class SessionRollback:
    session_id: str
    dry_run: bool
    partial: bool
    applied: bool
    items: list[PlannedRollback]

    @property
    def conflicts(self) -> list[PlannedRollback]:
        return [item for item in self.items if item.status == "conflict"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "dry_run": self.dry_run,
            "partial": self.partial,
            "applied": self.applied,
            "planned": len(self.items),
            "rolled_back": sum(1 for i in self.items if i.status == "rolled_back"),
            "conflicts": len(self.conflicts),
            "items": [item.as_dict() for item in self.items],
        }


def rollback_session(
    session_id: str,
    *,
    reason: str,
    requested_by: str,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    dry_run: bool = False,
    partial: bool = False,
) -> SessionRollback:
    """Plan every written audit of the session (within since/until), newest first, in memory; apply all of
    them only if every one is clean, or with ``partial`` the clean ones; ``dry_run`` only reports.

    Raises NotFound for an unknown session, RollbackDisabled, FileBusy. Conflicts are reported per audit
    (the API answers 409 when they stopped an all-or-nothing rollback).
    """
    from sessions_app.models import ConversationSession

    reason = _clean_reason(reason)
    if not settings.WRITE_GUARDIAN_ENABLE_ROLLBACK:
        raise RollbackDisabled("Rollback is disabled (WRITE_GUARDIAN_ENABLE_ROLLBACK=false).")
    if not ConversationSession.objects.filter(id=session_id).exists():
        raise NotFound(f"No session {session_id!r}.")

    def selected() -> list[WriteGuardianAudit]:
        audits = WriteGuardianAudit.objects.filter(session_id=session_id, status=Status.WRITTEN)
        if since is not None:
            audits = audits.filter(created_at__gte=since)
        if until is not None:
            audits = audits.filter(created_at__lte=until)
        return list(audits.select_related("before_snapshot", "after_snapshot").order_by("-created_at", "-id"))

    names = sorted({a.target_file for a in selected()})
    with workspace.file_locks(names):
        for name in names:
            workspace.reconcile(name)
        audits = selected()  # Again, under the locks.
        simulated: dict[str, str | None] = {name: workspace.read_file(name) for name in names}
        items: list[PlannedRollback] = []
        for audit in audits:
            current = simulated[audit.target_file]
            plan = plan_revert(
                _snapshot_text(audit.after_snapshot) or "", current, _snapshot_text(audit.before_snapshot)
            )
            if plan.conflicts:
                conflict = conflict_for(audit, plan)
                items.append(
                    PlannedRollback(audit, "conflict", conflict.message, conflict=conflict, plan=plan, current=current)
                )
                continue
            items.append(PlannedRollback(audit, "clean", "can be rolled back cleanly", plan=plan, current=current))
            simulated[audit.target_file] = plan.content
        result = SessionRollback(session_id, dry_run, partial, False, items)
        if dry_run or not items or (result.conflicts and not partial):
            return result
        for item in items:
            if item.status != "clean":
                continue
            assert item.plan is not None
            item.rollback = _apply_locked(
                item.audit, item.plan, item.current, reason=reason, requested_by=requested_by or "system", forced=False
            )
            item.status, item.message = "rolled_back", "rolled back"
        result.applied = any(item.status == "rolled_back" for item in items)
        return result
