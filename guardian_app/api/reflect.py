"""The reflect API: opinions with their evidence, the daily change report, and reflect runs.

``read`` looks; ``operate`` starts a reflect run (it runs on a worker; its page writes are ordinary
audits under ``/guardian/audits?source=reflect``).
"""

from dataclasses import asdict
from http import HTTPStatus
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils import timezone
from ninja import Query, Router, Status
from ninja.pagination import paginate

from guardian_app.api.schemas_reflect import (
    DailyReportOut,
    OpinionFilter,
    OpinionOut,
    ReflectIn,
    ReflectRunOut,
    ReportParams,
    SessionReportOut,
)
from guardian_app.models import Opinion, OpinionEvidence, ReflectRun
from guardian_app.recall.retain import entity_key
from guardian_app.reflect.reflect import REFLECT_TASK, start_run
from guardian_app.reflect.reports import daily_report, session_report
from reflection_site.api import ApiKey, CursorPagination, ErrorOut
from reflection_site.celery import enqueue_on_commit
from sessions_app.models import ConversationSession

router = Router(tags=["reflect"], auth=ApiKey("read"))

_ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


# --- Operations -----------------------------------------------------------------------------------
@router.get("/opinions", response={200: list[OpinionOut], **_ERRORS}, url_name="list_opinions")
@paginate(CursorPagination, ordering=("-last_updated", "-id"))
def list_opinions(request: HttpRequest, filters: Query[OpinionFilter]) -> QuerySet[Opinion]:
    """Opinions, most recently updated first, each with its confidence and the facts for and against it."""
    opinions = Opinion.objects.prefetch_related(
        Prefetch("evidence", queryset=OpinionEvidence.objects.order_by("fact_date", "id"))
    )
    if filters.entity:
        opinions = opinions.filter(entity_key=entity_key(filters.entity))
    if filters.min_confidence is not None:
        opinions = opinions.filter(confidence__gte=filters.min_confidence)
    return opinions


@router.get("/opinions/{opinion_id}", response={200: OpinionOut, **_ERRORS}, url_name="get_opinion")
def get_opinion(request: HttpRequest, opinion_id: str) -> Opinion:
    """One opinion with all its evidence."""
    return get_object_or_404(
        Opinion.objects.prefetch_related(
            Prefetch("evidence", queryset=OpinionEvidence.objects.order_by("fact_date", "id"))
        ),
        id=opinion_id,
    )


@router.get("/reports/daily", response={200: DailyReportOut, **_ERRORS}, url_name="daily_report")
def get_daily_report(request: HttpRequest, params: Query[ReportParams]) -> dict[str, Any]:
    """A day's change report: facts created, merged, skipped, refused, failed and rolled back, per session,
    with highlights (pivotal changes first) and the same text as Markdown."""
    return daily_report(params.date or timezone.localdate()).as_dict()


@router.get("/reports/sessions/{session_id}", response={200: SessionReportOut, **_ERRORS}, url_name="session_report")
def get_session_report(request: HttpRequest, session_id: str) -> dict[str, Any]:
    """One session's change report, all days: facts created, merged, skipped, refused, failed, rolled back."""
    get_object_or_404(ConversationSession, id=session_id)
    report = session_report(session_id)
    return {
        "session": report.session,
        "turns": report.turns,
        "counts": asdict(report.counts),
        "highlights": report.highlights,
    }


@router.post("/reflect", auth=ApiKey("operate"), response={202: ReflectRunOut, **_ERRORS}, url_name="start_reflect")
def post_reflect(request: HttpRequest, payload: ReflectIn) -> Status:
    """Start a reflect run on a worker (202); follow it at `GET /reflect/runs/{id}`."""
    run = start_run(
        since=payload.since,
        until=payload.until,
        dry_run=payload.dry_run,
        requested_by=f"api:{getattr(request.auth, 'name', 'unknown')}",
    )
    enqueue_on_commit(REFLECT_TASK, run.id)  # A dead broker leaves the run queued for the resume sweep.
    return Status(HTTPStatus.ACCEPTED, run)


@router.get("/reflect/runs", response={200: list[ReflectRunOut], **_ERRORS}, url_name="list_reflect_runs")
@paginate(CursorPagination, ordering=("-created_at", "-id"))
def list_reflect_runs(request: HttpRequest) -> QuerySet[ReflectRun]:
    """Reflect runs, newest first."""
    return ReflectRun.objects.all()


@router.get("/reflect/runs/{run_id}", response={200: ReflectRunOut, **_ERRORS}, url_name="get_reflect_run")
def get_reflect_run(request: HttpRequest, run_id: str) -> ReflectRun:
    """One run: its stage, counts, per-page outcome and the audits of its writes."""
    return get_object_or_404(ReflectRun, id=run_id)
