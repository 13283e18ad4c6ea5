"""The conversation API: ingest turns, read sessions, turns and context windows."""

import json
from http import HTTPStatus
from typing import Any

from django.db.models import QuerySet
from django.http import Http404, HttpRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from ninja import Query, Router, Schema, Status
from ninja.pagination import paginate

from reflection_site.api import ApiKey, CursorPagination, ErrorOut
from sessions_app.gate import rerun_gate
from sessions_app.ingest import ingest_turn
from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, MemoryGateDecision
from sessions_app.queries import gate_stats, get_decision, iter_decision_records, list_decisions
from sessions_app.schemas import (
    ContextItemOut,
    DecisionFilter,
    DecisionOut,
    DecisionWithContextOut,
    GateStatsFilter,
    GateStatsOut,
    SessionDetailOut,
    SessionOut,
    TurnIn,
    TurnOut,
)

router = Router(tags=["conversations"], auth=ApiKey("read"))

_ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 413: ErrorOut, 422: ErrorOut}


@router.post(
    "/turns",
    auth=ApiKey("ingest"),
    response={201: TurnOut, 200: TurnOut, 409: ErrorOut, **_ERRORS},
    url_name="ingest_turn",
)
def ingest(request: HttpRequest, payload: TurnIn) -> Status[ConversationTurn]:
    """Store a turn and its context window; the same turn sent again returns the stored one (200)."""
    turn, created = ingest_turn(payload)
    return Status(HTTPStatus.CREATED if created else HTTPStatus.OK, turn)


class SessionFilter(Schema):
    channel: str | None = None


@router.get("/sessions", response={200: list[SessionOut], **_ERRORS}, url_name="list_sessions")
@paginate(CursorPagination, ordering=("-last_activity_at", "-id"))
def list_sessions(request: HttpRequest, filters: Query[SessionFilter]) -> QuerySet[ConversationSession]:
    """Sessions, newest activity first; `channel` filters by channel id."""
    sessions = ConversationSession.objects.all()
    if filters.channel:
        sessions = sessions.filter(channel_id=filters.channel)
    return sessions


@router.get("/sessions/{session_id}", response={200: SessionDetailOut, **_ERRORS}, url_name="get_session")
def get_session(request: HttpRequest, session_id: str) -> ConversationSession:
    session = get_object_or_404(ConversationSession, id=session_id)
    session.turn_count = session.turns.count()
    return session


class TurnFilter(Schema):
    before: int | None = None


@router.get("/sessions/{session_id}/turns", response={200: list[TurnOut], **_ERRORS}, url_name="list_session_turns")
@paginate(CursorPagination, ordering=("-turn_number",))
def list_session_turns(request: HttpRequest, session_id: str, filters: Query[TurnFilter]) -> QuerySet[ConversationTurn]:
    """A session's turns, newest first; `before` keeps turns numbered below it (the seed's getTurnsBySession)."""
    get_object_or_404(ConversationSession.objects.only("id"), id=session_id)
    turns = ConversationTurn.objects.filter(session_id=session_id)
    if filters.before is not None:
        turns = turns.filter(turn_number__lt=filters.before)
    return turns


@router.get("/turns/{turn_id}", response={200: TurnOut, **_ERRORS}, url_name="get_turn")
def get_turn(request: HttpRequest, turn_id: str) -> ConversationTurn:
    return get_object_or_404(ConversationTurn, id=turn_id)


@router.get("/turns/{turn_id}/context", response={200: list[ContextItemOut], **_ERRORS}, url_name="get_turn_context")
def get_turn_context(request: HttpRequest, turn_id: str) -> QuerySet[ConversationContext]:
    """The turn's context window, in order (the seed's getContextByTurn)."""
    get_object_or_404(ConversationTurn.objects.only("id"), id=turn_id)
    return ConversationContext.objects.filter(turn_id=turn_id).order_by("sequence_number")


# --- The memory gate (REQ-002) ---------------------------------------------------------------------
def _decisions(filters: DecisionFilter, *, with_raw: bool = False) -> QuerySet[MemoryGateDecision]:
    return list_decisions(
        session=filters.session,
        decision=filters.decision,
        since=filters.since,
        until=filters.until,
        model=filters.model,
        search=filters.q,
        with_context=filters.with_context,
        with_raw=with_raw,
    )


@router.get(
    "/gate/decisions", response={200: list[DecisionOut], **_ERRORS}, url_name="list_gate_decisions", tags=["gate"]
)
@paginate(CursorPagination, ordering=("-created_at", "-id"))
def list_gate_decisions(request: HttpRequest, filters: Query[DecisionFilter]) -> QuerySet[MemoryGateDecision]:
    """Gate decisions, newest first; `since` is inclusive and `until` exclusive; `with_context` adds each
    decision's turn and context window."""
    return _decisions(filters)


@router.get(
    "/gate/decisions/export",
    response={**_ERRORS},
    url_name="export_gate_decisions",
    tags=["gate"],
    openapi_extra={
        "responses": {200: {"description": "One decision per line (JSONL).", "content": {"application/x-ndjson": {}}}}
    },
)
def export_gate_decisions(request: HttpRequest, filters: Query[DecisionFilter]) -> StreamingHttpResponse:
    """Every matching decision as JSON Lines (raw reply included), newest first, streamed."""
    decisions = _decisions(filters, with_raw=True)
    lines = (
        json.dumps(record, ensure_ascii=False) + "\n"
        for record in iter_decision_records(decisions, with_context=filters.with_context)
    )
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="gate-decisions-{stamp}.jsonl"'
    return response


@router.get(
    "/gate/decisions/{decision_id}",
    response={200: DecisionWithContextOut, **_ERRORS},
    url_name="get_gate_decision",
    tags=["gate"],
)
def get_gate_decision(request: HttpRequest, decision_id: str, with_context: bool = False) -> dict[str, Any]:
    """One decision with its raw reply and turn; `with_context=true` adds the context window (the seed's
    MemoryGateDecisionWithContext)."""
    decision = get_decision(decision_id)
    if decision is None:
        raise Http404(f"No gate decision {decision_id}.")
    return {
        "decision": decision,
        "turn": decision.turn,
        "context": decision.turn.window if with_context else None,
    }


@router.get("/gate/stats", response={200: GateStatsOut, **_ERRORS}, url_name="gate_stats", tags=["gate"])
def get_gate_stats(request: HttpRequest, filters: Query[GateStatsFilter]) -> dict[str, Any]:
    """Decision counts, sessions and mean latency per day, per ISO week or per session, and mean latency
    per decision type over the same span; today's figures are live."""
    return gate_stats(filters.period, days=filters.days, weeks=filters.weeks, limit=filters.limit)


@router.post(
    "/turns/{turn_id}/gate",
    auth=ApiKey("operate"),
    response={202: TurnOut, **_ERRORS},
    url_name="rerun_turn_gate",
    tags=["gate"],
)
def rerun_turn_gate(request: HttpRequest, turn_id: str) -> Status[ConversationTurn]:
    """Run the memory gate on this turn again (a new run; earlier decisions stay). Needs `operate`."""
    turn = get_object_or_404(ConversationTurn, id=turn_id)
    return Status(HTTPStatus.ACCEPTED, rerun_gate(turn))
