"""Reads of the gate's decisions: filtered lists, one decision with its turn and context, statistics."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from django.db.models import Count, F, Max, Prefetch, Q, QuerySet, Sum, Value
from django.db.models.functions import TruncWeek
from django.utils import timezone

from sessions_app.models import ConversationContext, ConversationTurn, Decision, MemoryGateDecision
from sessions_app.stats import COUNT_FIELDS, daily_stats, empty_figures, figures_by

PERIODS = ("daily", "weekly", "session")


def list_decisions(
    *,
    session: str | None = None,
    decision: str | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    model: str | None = None,
    search: str | None = None,
    with_context: bool = False,
    with_raw: bool = False,
) -> QuerySet[MemoryGateDecision]:
    """Decisions matching the filters, newest first (``-created_at, -id``, the API cursor's order).

    ``since`` is inclusive, ``until`` exclusive. Each row carries ``turn_number``; with
    ``with_context`` also its turn and the turn's context window (``turn.window``), fetched in two
    more queries per page. ``raw_response`` is left out unless ``with_raw``.
    """
    decisions = MemoryGateDecision.objects.annotate(turn_number=F("turn__turn_number"))
    if session:
        decisions = decisions.filter(session_id=session)
    if decision:
        decisions = decisions.filter(decision=decision)
    if since is not None:
        decisions = decisions.filter(created_at__gte=since)
    if until is not None:
        decisions = decisions.filter(created_at__lt=until)
    if model:
        decisions = decisions.filter(llm_model=model)
    if search:
        decisions = decisions.filter(Q(candidate_fact__icontains=search) | Q(reason__icontains=search))
    if not with_raw:
        decisions = decisions.defer("raw_response")
    if with_context:
        decisions = decisions.annotate(include_context=Value(True)).prefetch_related(
            Prefetch(
                "turn",
                queryset=ConversationTurn.objects.prefetch_related(
                    Prefetch(
                        "context", queryset=ConversationContext.objects.order_by("sequence_number"), to_attr="window"
                    )
                ),
            )
        )
    return decisions.order_by("-created_at", "-id")


def get_decision(decision_id: str) -> MemoryGateDecision | None:
    """One decision with its turn, the turn's session and its context window (``turn.window``)."""
    return (
        MemoryGateDecision.objects.select_related("turn")
        .annotate(turn_number=F("turn__turn_number"), include_context=Value(True))
        .prefetch_related(
            Prefetch(
                "turn__context", queryset=ConversationContext.objects.order_by("sequence_number"), to_attr="window"
            )
        )
        .filter(id=decision_id)
        .first()
    )


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.datetime | dt.date) else value


def decision_record(decision: MemoryGateDecision, *, with_context: bool = False) -> dict[str, Any]:
    """A decision as plain JSON-ready data (the CLI's --json and the JSONL export)."""
    record: dict[str, Any] = {
        "id": decision.id,
        "turn_id": decision.turn_id,
        "session_id": decision.session_id,
        "turn_number": getattr(decision, "turn_number", None),
        "run_number": decision.run_number,
        "decision": decision.decision,
        "reason": decision.reason,
        "candidate_fact": decision.candidate_fact,
        "confidence": decision.confidence,
        "llm_model": decision.llm_model,
        "llm_latency_ms": decision.llm_latency_ms,
        "prompt_tokens": decision.prompt_tokens,
        "completion_tokens": decision.completion_tokens,
        "prompt_version": decision.prompt_version,
        "created_at": _iso(decision.created_at),
    }
    if "raw_response" not in decision.get_deferred_fields():
        record["raw_response"] = decision.raw_response
    if with_context:
        turn = decision.turn
        record["turn"] = {
            "id": turn.id,
            "turn_number": turn.turn_number,
            "created_at": _iso(turn.created_at),
            "user_message": turn.user_message_content,
            "agent_reply": turn.agent_message_content,
            "gate_status": turn.gate_status,
        }
        window = getattr(turn, "window", None)
        if window is None:
            window = list(turn.context.order_by("sequence_number"))
        record["context"] = [
            {
                "role": item.role,
                "message": item.message,
                "timestamp": _iso(item.timestamp),
                "sequence_number": item.sequence_number,
            }
            for item in window
        ]
    return record


def iter_decision_records(
    decisions: QuerySet[MemoryGateDecision], *, with_context: bool = False
) -> Iterator[dict[str, Any]]:
    """Records for a possibly huge selection, fetched 500 at a time (prefetches included)."""
    yield from (decision_record(d, with_context=with_context) for d in decisions.iterator(chunk_size=500))


# --- Statistics -----------------------------------------------------------------------------------
def weekly_stats(*, weeks: int = 12) -> list[dict[str, Any]]:
    """One row per ISO week (Monday start) for the last ``weeks`` weeks, oldest first."""
    today = timezone.localdate()
    this_monday = today - dt.timedelta(days=today.weekday())
    first_monday = this_monday - dt.timedelta(weeks=max(weeks, 1) - 1)
    start = timezone.make_aware(dt.datetime.combine(first_monday, dt.time.min))
    figures = figures_by(MemoryGateDecision.objects.filter(created_at__gte=start), TruncWeek("created_at"))
    by_monday = {(timezone.localtime(k).date() if isinstance(k, dt.datetime) else k): v for k, v in figures.items()}
    rows = []
    for i in range(max(weeks, 1)):
        monday = first_monday + dt.timedelta(weeks=i)
        rows.append({"week_start": monday, **by_monday.get(monday, empty_figures())})
    return rows


def session_stats(*, days: int = 30, limit: int = 50) -> list[dict[str, Any]]:
    """Per session over the last ``days`` days: decision counts and mean latency, most recent first."""
    since = timezone.now() - dt.timedelta(days=max(days, 1))
    recent = MemoryGateDecision.objects.filter(created_at__gte=since).order_by()
    top = list(
        recent.values("session_id")
        .annotate(last=Max("created_at"))
        .order_by("-last")
        .values_list("session_id", "last")[:limit]
    )
    if not top:
        return []
    figures = figures_by(recent.filter(session_id__in=[s for s, _ in top]), F("session_id"), sessions=False)
    rows = []
    for session_id, last in top:
        row = {"session_id": session_id, **figures.get(session_id, empty_figures()), "last_decision_at": last}
        row.pop("session_count", None)
        rows.append(row)
    return rows


def latency_by_decision(*, days: int = 30) -> list[dict[str, Any]]:
    """Per decision type over the last ``days`` days: count and mean latency (ms), in vocabulary order."""
    since = timezone.now() - dt.timedelta(days=max(days, 1))
    rows = {
        row["decision"]: row
        for row in MemoryGateDecision.objects.filter(created_at__gte=since)
        .order_by()
        .values("decision")
        .annotate(count=Count("id"), latency_sum=Sum("llm_latency_ms"), latency_n=Count("llm_latency_ms"))
    }
    out = []
    for decision in Decision.values:
        row = rows.get(decision)
        count = row["count"] if row else 0
        avg = round(row["latency_sum"] / row["latency_n"]) if row and row["latency_n"] else None
        out.append({"decision": decision, "count": count, "avg_latency_ms": avg})
    return out


def gate_stats(period: str = "daily", *, days: int | None = None, weeks: int = 12, limit: int = 50) -> dict[str, Any]:
    """The figures of ``period`` ("daily", "weekly" or "session") plus mean latency per decision type."""
    if period not in PERIODS:
        raise ValueError(f"period must be one of {', '.join(PERIODS)}")
    days = 30 if days is None else days
    if period == "daily":
        rows = daily_stats(days=days)
        window_days = days
    elif period == "weekly":
        rows = weekly_stats(weeks=weeks)
        window_days = weeks * 7
    else:
        rows = session_stats(days=days, limit=limit)
        window_days = days
    return {"period": period, "rows": rows, "by_decision": latency_by_decision(days=window_days)}


__all__ = [
    "COUNT_FIELDS",
    "PERIODS",
    "decision_record",
    "gate_stats",
    "get_decision",
    "iter_decision_records",
    "latency_by_decision",
    "list_decisions",
    "session_stats",
    "weekly_stats",
]
