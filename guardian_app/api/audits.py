"""The write guardian's API (audits, rollbacks, retries, corrections, files) and, beside it, learning and recall.

``read`` looks, ``operate`` acts (rollback, retry); a correction needs ``annotate`` or ``operate``.
"""

from http import HTTPStatus
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Status
from ninja.errors import AuthorizationError
from ninja.pagination import paginate
from ninja.security import HttpBearer

from guardian_app import queries
from guardian_app.api.schemas import (
    AuditDetailOut,
    AuditFilter,
    AuditOut,
    CorrectionIn,
    CorrectionOut,
    FileOut,
    HistoryFilter,
    ProfileOut,
    RetryIn,
    RollbackIn,
    RollbackPreviewIn,
    RollbackPreviewOut,
    RollbackResultOut,
    SessionRollbackIn,
    SessionRollbackOut,
    VersionOut,
)
from guardian_app.errors import RollbackConflict
from guardian_app.models import BehaviorCorrection, FileVersion, Rollback, WriteGuardianAudit
from guardian_app.write import paths, workspace
from guardian_app.write.corrections import correct_audit
from guardian_app.write.guardian import retry_write
from guardian_app.write.rollback import preview_rollback, rollback_write
from guardian_app.write.session_rollback import rollback_session
from reflection_site import memory_files
from reflection_site.api import ApiKey, CursorPagination, ErrorOut, authenticate_key
from reflection_site.models import ApiKey as ApiKeyModel

router = Router(tags=["guardian"], auth=ApiKey("read"))

_ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


class AnyScope(HttpBearer):
    """A key with any one of ``scopes`` (a correction is an annotator's or an operator's act)."""

    def __init__(self, *scopes: str) -> None:
        self.scopes = scopes
        super().__init__()

    def authenticate(self, request: HttpRequest, token: str) -> ApiKeyModel | None:
        key = authenticate_key(token)
        if key is None:
            return None
        if not any(scope in key.scopes for scope in self.scopes):
            raise AuthorizationError(message=f"This API key needs one of the scopes {', '.join(self.scopes)}.")
        return key


def _actor(request: HttpRequest, given: str | None) -> str:
    return (given or "").strip() or f"api:{getattr(request.auth, 'name', 'unknown')}"


def _audit(audit_id: str) -> WriteGuardianAudit:
    return get_object_or_404(
        WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot", "rollback"), id=audit_id
    )


@router.get("/guardian/audits", response={200: list[AuditOut], **_ERRORS}, url_name="list_audits")
@paginate(CursorPagination, ordering=("-created_at", "-id"))
def list_audits(request: HttpRequest, filters: Query[AuditFilter]) -> QuerySet[WriteGuardianAudit]:
    """Audits newest first, filtered by `session`, `file`, `status`, `since`, `until`; `with_diff` adds each diff."""
    audits = queries.list_audits(
        session=filters.session,
        file=filters.file,
        status=filters.status,
        since=filters.since,
        until=filters.until,
        with_diff=filters.with_diff,
    )
    return audits


@router.get("/guardian/audits/{audit_id}", response={200: AuditDetailOut, **_ERRORS}, url_name="get_audit")
def get_audit(request: HttpRequest, audit_id: str) -> WriteGuardianAudit:
    """One audit with its diff, the file before and after, its rollback, retries and corrections."""
    return _audit(audit_id)


@router.get(
    "/guardian/audits/{audit_id}/diff",
    response={200: None, **_ERRORS},
    url_name="get_audit_diff",
    openapi_extra={"responses": {200: {"description": "The unified diff", "content": {"text/x-diff": {}}}}},
)
def get_audit_diff(request: HttpRequest, audit_id: str) -> HttpResponse:
    """The audit's unified diff as `text/x-diff` (empty for a write that changed nothing)."""
    audit = get_object_or_404(WriteGuardianAudit.objects.only("id", "diff"), id=audit_id)
    response = HttpResponse(audit.diff or "", content_type="text/x-diff; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="{audit.id}.diff"'
    return response


@router.post(
    "/guardian/audits/{audit_id}/rollback",
    auth=ApiKey("operate"),
    response={200: RollbackResultOut, 409: ErrorOut, 503: ErrorOut, **_ERRORS},
    url_name="rollback_audit",
)
def rollback_audit(request: HttpRequest, audit_id: str, payload: RollbackIn) -> Rollback:
    """Undo one write and keep everything written since; overlapping later changes are a 409 that changes
    nothing (its details name the later audits and hand edits) unless `force` is given. The answer lists the
    lines removed and restored, measured by diffing the file; with `expected_hash` (a preview's) a file that
    changed since the preview is a 409 `rollback_stale`."""
    audit = _audit(audit_id)
    return rollback_write(
        audit,
        reason=payload.reason,
        requested_by=_actor(request, payload.requested_by),
        force=payload.force,
        expected_hash=payload.expected_hash,
    )


@router.post(
    "/guardian/audits/{audit_id}/rollback/preview",
    auth=ApiKey("operate"),
    response={200: RollbackPreviewOut, 409: ErrorOut, 503: ErrorOut, **_ERRORS},
    url_name="preview_rollback",
)
def preview_rollback_view(request: HttpRequest, audit_id: str, payload: RollbackPreviewIn) -> dict[str, Any]:
    """A dry run of the rollback: the exact diff it would make now, or its conflict (`clean: false`); with
    `force`, the forced rollback's own diff. Changes nothing."""
    preview = preview_rollback(_audit(audit_id), force=payload.force)
    return {
        "audit_id": preview.audit.id,
        "force": preview.force,
        "method": preview.method,
        "clean": preview.plan.clean,
        "changed": preview.change.changed,
        "lines_removed": preview.change.removed,
        "lines_restored": preview.change.restored,
        "diff": preview.change.diff,
        "content_hash": preview.content_hash,
        "conflict": (
            {"message": preview.conflict.message, **(preview.conflict.details or {})} if preview.conflict else None
        ),
    }


@router.post(
    "/guardian/sessions/{session_id}/rollback",
    auth=ApiKey("operate"),
    response={200: SessionRollbackOut, 409: ErrorOut, 503: ErrorOut, **_ERRORS},
    url_name="rollback_session",
)
def rollback_session_view(request: HttpRequest, session_id: str, payload: SessionRollbackIn) -> Any:
    """Roll back every written audit of a session (within `since`/`until`), newest first, all or nothing:
    a conflict is a 409 listing each audit's plan and nothing changes; `partial` applies the clean ones;
    `dry_run` only reports."""
    result = rollback_session(
        session_id,
        reason=payload.reason,
        requested_by=_actor(request, payload.requested_by),
        since=payload.since,
        until=payload.until,
        dry_run=payload.dry_run,
        partial=payload.partial,
    )
    body = result.as_dict()
    if result.conflicts and not payload.partial and not payload.dry_run:
        first = result.conflicts[0]
        raise RollbackConflict(
            f"{len(result.conflicts)} of {len(result.items)} write(s) of session {session_id} cannot be rolled back "
            f"cleanly, so none was; the first: {first.message}",
            later_audits=sorted({a for c in result.conflicts for a in (c.conflict.later_audits if c.conflict else [])}),
            hand_edits=sorted({h for c in result.conflicts for h in (c.conflict.hand_edits if c.conflict else [])}),
            details={"plan": body},
        )
    return body


@router.post(
    "/guardian/audits/{audit_id}/retry",
    auth=ApiKey("operate"),
    response={201: AuditOut, 409: ErrorOut, 503: ErrorOut, **_ERRORS},
    url_name="retry_audit",
)
def retry_audit(request: HttpRequest, audit_id: str, payload: RetryIn) -> Status[WriteGuardianAudit]:
    """Run the guardian again for this audit's decision, with an optional new fact and/or file; the new
    audit links to this one (`retry_of_id`). Runs now and answers with its outcome."""
    audit = _audit(audit_id)
    new = retry_write(
        audit,
        candidate_fact=payload.candidate_fact,
        target_file=payload.target_file,
        requested_by=_actor(request, payload.requested_by),
    )
    return Status(HTTPStatus.CREATED, WriteGuardianAudit.objects.select_related("rollback").get(id=new.id))


@router.post(
    "/guardian/audits/{audit_id}/corrections",
    auth=AnyScope("annotate", "operate"),
    response={201: CorrectionOut, **_ERRORS},
    url_name="correct_audit",
)
def create_correction(request: HttpRequest, audit_id: str, payload: CorrectionIn) -> Status[BehaviorCorrection]:
    """Record the right outcome for this audit. With `apply_to_future`, its `correction_pattern` (derived
    from the fact when omitted) steers the gate and the guardian from then on."""
    audit = _audit(audit_id)
    correction = correct_audit(
        audit,
        status=payload.status,
        reason=payload.reason,
        corrected_by=_actor(request, payload.corrected_by),
        candidate_fact=payload.candidate_fact,
        target_file=payload.target_file,
        apply_to_future=payload.apply_to_future,
        pattern=payload.correction_pattern,
        about=payload.about,
    )
    return Status(HTTPStatus.CREATED, correction)


@router.get("/guardian/files", response={200: ProfileOut, **_ERRORS}, url_name="list_memory_files")
def list_files(request: HttpRequest) -> dict[str, Any]:
    """The workspace profile's memory files (WORKSPACE_PROFILE): where each lives, the decision written to it,
    its length as the agent counts it and the most the agent loads. Only these names (and reflect's bank
    pages) are accepted by the file endpoints."""
    return {"profile": memory_files.active().name, "files": workspace.profile_files()}


@router.get(
    "/guardian/files/{file_name}", response={200: FileOut, 409: ErrorOut, **_ERRORS}, url_name="get_memory_file"
)
def get_file(request: HttpRequest, file_name: str) -> dict[str, Any]:
    """The file as it is on disk now, its SHA-256, and whether it changed since Reflection last saw it. A 409
    `unsafe_file` when its path holds a symbolic link, a FIFO or another non-regular file: nothing is read through
    it, and it is recorded as a drift finding."""
    return workspace.current_state(file_name)


@router.get(
    "/guardian/files/{file_name}/history",
    response={200: list[VersionOut], 409: ErrorOut, **_ERRORS},
    url_name="file_history",
)
@paginate(CursorPagination, ordering=("-seq",))
def file_history(request: HttpRequest, file_name: str, filters: Query[HistoryFilter]) -> QuerySet[FileVersion]:
    """Every version of the file, newest first: writes, rollbacks, hand edits and the first sighting, each
    with its diff and line counts. Reading records nothing: a hand edit not yet noticed becomes a version at the
    next drift check (beat entry `workspace-drift-check`) or write; `GET /guardian/files/{name}` tells whether
    the file changed by hand since."""
    name = paths.canonical_name(file_name)
    unsafe = workspace.refusal_of(name)
    if unsafe is not None:  # A link or a FIFO in its place: 409 (the admin keeps showing the history).
        raise unsafe
    return queries.file_history(name, kind=filters.kind, since=filters.since, until=filters.until)
