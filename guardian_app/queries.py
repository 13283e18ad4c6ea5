"""Reads of the guardian's records with their filters and joins (the API, the CLI and the admin use them)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import QuerySet

from guardian_app.models import FileVersion, Rollback, WriteGuardianAudit
from guardian_app.write import paths


def list_audits(
    *,
    session: str | None = None,
    file: str | None = None,
    status: str | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    with_diff: bool = True,
) -> QuerySet[WriteGuardianAudit]:
    """Audits matching the filters (unordered; callers order by ``-created_at, -id``).

    An unknown file name raises UnknownFile. Without ``with_diff`` the diff column is not loaded.
    """
    audits = WriteGuardianAudit.objects.select_related("rollback")
    if session:
        audits = audits.filter(session_id=session)
    if file:
        audits = audits.filter(target_file=paths.canonical_name(file))
    if status:
        audits = audits.filter(status=status)
    if since is not None:
        audits = audits.filter(created_at__gte=since)
    if until is not None:
        audits = audits.filter(created_at__lte=until)
    if not with_diff:
        audits = audits.defer("diff")
    return audits


def get_audit(audit_id: str) -> WriteGuardianAudit:
    """One audit with its snapshots and rollback; WriteGuardianAudit.DoesNotExist if there is none."""
    return WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot", "rollback", "decision").get(
        id=audit_id
    )


def file_history(
    name: str, *, kind: str | None = None, since: dt.datetime | None = None, until: dt.datetime | None = None
) -> QuerySet[FileVersion]:
    """Every version of a file (writes, rollbacks, hand edits, first sighting), newest first by ``seq``.

    The snapshot's content is not loaded (the diff of each version is). UnknownFile for another name.
    """
    versions = (
        FileVersion.objects.filter(file_name=paths.canonical_name(name))
        .select_related("snapshot", "audit")
        .defer("snapshot__content")
        .order_by("-seq")
    )
    if kind:
        versions = versions.filter(kind=kind)
    if since is not None:
        versions = versions.filter(created_at__gte=since)
    if until is not None:
        versions = versions.filter(created_at__lte=until)
    return versions


def audit_record(audit: WriteGuardianAudit, *, include_content: bool = False, with_diff: bool = True) -> dict[str, Any]:
    """One audit as plain data (the CLI's show and export); with ``include_content`` the files before and after."""
    try:
        rollback = audit.rollback
    except Rollback.DoesNotExist:
        rollback = None
    record: dict[str, Any] = {
        "id": audit.id,
        "created_at": audit.created_at.isoformat(),
        "status": audit.status,
        "target_file": audit.target_file,
        "candidate_fact": audit.candidate_fact,
        "reason": audit.reason,
        "held_for_review": audit.held_for_review,
        "source": audit.source,
        "source_ref": audit.source_ref,
        "requested_by": audit.requested_by,
        "decision_id": audit.decision_id,
        "turn_id": audit.turn_id,
        "session_id": audit.session_id,
        "retry_of_id": audit.retry_of_id,
        "before_snapshot_id": audit.before_snapshot_id,
        "after_snapshot_id": audit.after_snapshot_id,
        "lines_added": audit.lines_added,
        "lines_removed": audit.lines_removed,
        "lines_modified": audit.lines_modified,
        "llm_model": audit.llm_model,
        "llm_latency_ms": audit.llm_latency_ms,
        "agent_steps": audit.agent_steps,
        "prompt_version": audit.prompt_version,
        "rollback": None
        if rollback is None
        else {
            "id": rollback.id,
            "rolled_back_at": rollback.rolled_back_at.isoformat(),
            "rolled_back_by": rollback.rolled_back_by,
            "reason": rollback.reason,
            "previous_status": rollback.previous_status,
            "method": rollback.method,
            "forced": rollback.forced,
        },
    }
    if with_diff:
        record["diff"] = audit.diff
    if include_content:
        record["before_content"] = audit.before_snapshot.content if audit.before_snapshot_id else None
        record["after_content"] = audit.after_snapshot.content if audit.after_snapshot_id else None
    return record
