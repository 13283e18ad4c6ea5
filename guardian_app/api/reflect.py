"""The reflect API: opinions with their evidence, the daily change report, and reflect runs.

``read`` looks; ``operate`` starts a reflect run (it runs on a worker; its page writes are ordinary
audits under ``/guardian/audits?source=reflect``).
"""

import datetime as dt
import re
from dataclasses import asdict
from http import HTTPStatus
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils import timezone
from ninja import Field, Query, Router, Schema, Status
from ninja.pagination import paginate
from pydantic import field_validator

from guardian_app.models import Opinion, OpinionEvidence, ReflectRun
from guardian_app.recall.retain import entity_key
from guardian_app.reflect.reflect import enqueue_run, run_audits, start_run
from guardian_app.reflect.reports import daily_report, session_report
from reflection_site.api import ApiKey, CursorPagination, ErrorOut

router = Router(tags=["reflect"], auth=ApiKey("read"))

_ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


# --- Schemas --------------------------------------------------------------------------------------
class EvidenceOut(Schema):
    fact_id: str = Field(..., description="Stable id of the fact (a hash of its file and text).")
    source: str = Field(..., examples=["memory/2025-11-27.md#L12"])
    content: str
    fact_date: dt.datetime
    strength: float
    confidence_before: float
    confidence_after: float


class OpinionOut(Schema):
    id: str
    entity: str
    statement: str
    confidence: float = Field(..., ge=0, le=1)
    last_updated: dt.datetime
    created_at: dt.datetime
    supporting_count: int
    contradicting_count: int
    source: str = Field(..., description="Where the opinion was first stated.")
    supporting: list[EvidenceOut]
    contradicting: list[EvidenceOut]

    @staticmethod
    def resolve_supporting(obj: Opinion) -> list[OpinionEvidence]:
        return [e for e in obj.evidence.all() if e.stance == OpinionEvidence.Stance.SUPPORTS]

    @staticmethod
    def resolve_contradicting(obj: Opinion) -> list[OpinionEvidence]:
        return [e for e in obj.evidence.all() if e.stance == OpinionEvidence.Stance.CONTRADICTS]


class OpinionFilter(Schema):
    entity: str | None = Field(None, max_length=255, description="An entity (Peter, @Peter, the-castle).")
    min_confidence: float | None = Field(None, ge=0, le=1)


class ReportParams(Schema):
    date: dt.date | None = Field(None, description="YYYY-MM-DD in the server's time zone (default: today).")

    @field_validator("date", mode="before")
    @classmethod
    def _iso_date(cls, value: Any) -> Any:
        # pydantic would read "0" or "1700000000" as a Unix time: a typo must not become another day's report.
        if isinstance(value, str) and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError("use YYYY-MM-DD")
        return value


class CountsOut(Schema):
    created: int
    merged: int
    skipped: int
    held: int
    refused: int
    failed: int
    rolled_back: int


class SessionReportOut(Schema):
    session: str
    turns: int
    counts: CountsOut
    highlights: list[str]


class HighlightOut(Schema):
    kind: str
    text: str
    pivotal: bool
    ref: str


class DailyReportOut(Schema):
    date: dt.date
    pivotal: bool = Field(..., description="Rollbacks, facts held for review, failures or large opinion moves.")
    counts: CountsOut
    turns: int
    gate: dict[str, int]
    sessions: list[SessionReportOut]
    highlights: list[HighlightOut]
    reflect_runs: list[dict[str, Any]]
    markdown: str


class ReflectIn(Schema):
    since: str | None = Field(None, max_length=40, description="30d, 12h, 1w or an ISO date; default: the last run.")
    until: str | None = Field(None, max_length=40, description="As `since`; default now.")
    dry_run: bool = False


class ReflectRunOut(Schema):
    id: str
    status: str
    stage: str
    since: dt.datetime
    until: dt.datetime
    dry_run: bool
    requested_by: str
    facts_count: int
    entities_count: int
    pages_written: int
    pages_unchanged: int
    pages_refused: int
    opinions_created: int
    opinions_updated: int
    memory_proposals: int
    skill_drafts: int
    llm_model: str
    error: str
    stats: dict[str, Any]
    audit_ids: list[str]
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None

    @staticmethod
    def resolve_audit_ids(obj: ReflectRun) -> list[str]:
        return [a.id for a in run_audits(obj)]


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
    from sessions_app.models import ConversationSession

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
    enqueue_run(run)
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
