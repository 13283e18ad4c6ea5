"""Session rollback: undo every written audit of one conversation session, all of them or the clean ones.

``rollback_session`` plans every written audit of a session (newest first) in memory, each on the file as
the rollbacks before it would leave it, and applies them only if all are clean, or with ``partial`` the
clean ones; ``dry_run`` only reports. Each item carries its measured change and the result says when no
file changed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from django.conf import settings

from guardian_app.errors import GuardianError, RollbackConflict, RollbackDisabled
from guardian_app.models import Rollback, WriteGuardianAudit
from guardian_app.write import history, locks, workspace
from guardian_app.write.blame import Blame, blame, relabel, revert_target, roles_of
from guardian_app.write.diffs import lines_of
from guardian_app.write.revert import RevertPlan, plan_revert
from guardian_app.write.rollback import (
    LineChange,
    apply_locked,
    clean_reason,
    conflict_for,
    measure_change,
    snapshot_text,
)
from reflection_site.errors import NotFound
from sessions_app.models import ConversationSession

Status = WriteGuardianAudit.Status


class UnknownSession(GuardianError, NotFound):
    """No conversation session has this id (a 404, and a ``NotFound`` as before)."""

    code = "not_found"
    status = HTTPStatus.NOT_FOUND


@dataclass
class PlannedRollback:
    audit: WriteGuardianAudit
    status: str  # clean | conflict | rolled_back
    message: str = ""
    conflict: RollbackConflict | None = None
    plan: RevertPlan | None = None
    current: str | None = None
    rollback: Rollback | None = None
    change: LineChange | None = None  # clean or rolled back: the change to the file, measured by diffing it

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "audit_id": self.audit.id,
            "target_file": self.audit.target_file,
            "candidate_fact": self.audit.candidate_fact,
            "status": self.status,
            "message": self.message,
            "rollback_id": self.rollback.id if self.rollback else None,
            "changed": self.change.changed if self.change else False,
            "lines_removed": self.change.removed if self.change else [],
            "lines_restored": self.change.restored if self.change else [],
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

    @property
    def files_changed(self) -> bool:
        """Whether the files changed (applied) or would change (a dry run's clean items), by their diffs."""
        wanted = "clean" if self.dry_run else "rolled_back"
        return any(i.change is not None and i.change.changed for i in self.items if i.status == wanted)

    def summary(self) -> str:
        done = sum(1 for i in self.items if i.status == "rolled_back")
        if not self.items:
            return f"Session {self.session_id} has no written audits to roll back; nothing changed."
        if self.dry_run:
            clean = sum(1 for i in self.items if i.status == "clean")
            tail = "" if self.files_changed else "; the files would not change"
            return f"Dry run: {clean} of {len(self.items)} write(s) can be rolled back cleanly{tail}."
        if not self.applied:
            return f"{len(self.conflicts)} write(s) conflict; nothing was rolled back and nothing changed."
        removed = sum(len(i.change.removed) for i in self.items if i.status == "rolled_back" and i.change)
        restored = sum(len(i.change.restored) for i in self.items if i.status == "rolled_back" and i.change)
        if not self.files_changed:
            return f"Marked {done} write(s) rolled back; their lines were already gone, so no file changed."
        return f"Rolled back {done} write(s): {removed} line(s) removed, {restored} restored."

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "dry_run": self.dry_run,
            "partial": self.partial,
            "applied": self.applied,
            "planned": len(self.items),
            "rolled_back": sum(1 for i in self.items if i.status == "rolled_back"),
            "conflicts": len(self.conflicts),
            "changed": self.files_changed,
            "summary": self.summary(),
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

    Raises UnknownSession (404) for an unknown session, RollbackDisabled, FileBusy. Conflicts are reported per audit
    (the API answers 409 when they stopped an all-or-nothing rollback).
    """

    reason = clean_reason(reason)
    if not settings.WRITE_GUARDIAN_ENABLE_ROLLBACK:
        raise RollbackDisabled("Rollback is disabled (WRITE_GUARDIAN_ENABLE_ROLLBACK=false).")
    if not ConversationSession.objects.filter(id=session_id).exists():
        raise UnknownSession(f"No session {session_id!r}.")

    def selected() -> list[WriteGuardianAudit]:
        audits = WriteGuardianAudit.objects.filter(session_id=session_id, status=Status.WRITTEN)
        if since is not None:
            audits = audits.filter(created_at__gte=since)
        if until is not None:
            audits = audits.filter(created_at__lte=until)
        return list(audits.select_related("before_snapshot", "after_snapshot").order_by("-created_at", "-id"))

    names = sorted({a.target_file for a in selected()})
    with locks.file_locks(names):
        for name in names:
            history.reconcile(name)
        audits = selected()  # Again, under the locks.
        simulated: dict[str, str | None] = {name: workspace.read_file(name) for name in names}
        known: dict[str, Blame | None] = {name: blame(name) for name in names}
        items: list[PlannedRollback] = []
        for audit in audits:
            name = audit.target_file
            current = simulated[name]
            after = snapshot_text(audit.after_snapshot) or ""
            target = revert_target(audit, snapshot_text(audit.before_snapshot), after, known[name])
            plan = plan_revert(after, current, target, roles=roles_of(audit.id, current, known[name]))
            if plan.conflicts:
                conflict = conflict_for(audit, plan)
                items.append(
                    PlannedRollback(audit, "conflict", conflict.message, conflict=conflict, plan=plan, current=current)
                )
                continue
            change = measure_change(audit.target_file, current, plan.content)
            message = "can be rolled back cleanly" + ("" if change.changed else "; the file would not change")
            items.append(PlannedRollback(audit, "clean", message, plan=plan, current=current, change=change))
            blamed = known[name]
            if blamed is not None:  # The blame of the simulated file, for the next write of the session.
                known[name] = (
                    relabel(current, plan.content, blamed, audit.id) if blamed.lines == lines_of(current) else None
                )
            simulated[name] = plan.content
        result = SessionRollback(session_id, dry_run, partial, False, items)
        if dry_run or not items or (result.conflicts and not partial):
            return result
        for item in items:
            if item.status != "clean":
                continue
            assert item.plan is not None
            item.rollback = apply_locked(
                item.audit, item.plan, item.current, reason=reason, requested_by=requested_by or "system", forced=False
            )
            item.rollback.change = item.change
            item.status, item.message = "rolled_back", f"rolled back: {item.change.summary()}"
        result.applied = any(item.status == "rolled_back" for item in items)
        return result
