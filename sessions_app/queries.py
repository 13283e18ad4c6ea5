"""Reads of the gate's decisions: filtered lists, one decision with its turn and context, statistics."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from django.db import connection
from django.db.models import Count, F, Max, Prefetch, Q, QuerySet, Sum, Value
from django.utils import timezone

from reflection_site import privacy
from reflection_site.rows import RowReader
from sessions_app.models import (
    ConversationContext,
    ConversationSession,
    ConversationTurn,
    Decision,
    MemoryGateDecision,
)
from sessions_app.stats import (
    COUNT_FIELDS,
    daily_stats,
    empty_figures,
    figures_by,
    figures_for_days,
    start_of_day,
    stored_week_session_counts,
)

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


def sent_context(turn: ConversationTurn) -> list[ConversationContext]:
    """The context the agent sent with ``turn``, oldest first: ``turn.window`` when ``list_decisions`` or
    ``get_decision`` fetched it, else one query. (The window the gate reads is ``gate.context_window``.)"""
    window = getattr(turn, "window", None)
    return list(turn.context.order_by("sequence_number")) if window is None else window


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.datetime | dt.date) else value


def decision_record(decision: MemoryGateDecision, *, with_context: bool = False, raw: bool = True) -> dict[str, Any]:
    """A decision as plain JSON-ready data (the CLI's --json and the JSONL export); ``raw=False`` redacts the
    turn's and its context's text (PII and secrets), as the CLI shows them unless asked for ``--raw``."""
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
        record["context"] = [
            {
                "role": item.role,
                "message": item.message,
                "timestamp": _iso(item.timestamp),
                "sequence_number": item.sequence_number,
            }
            for item in sent_context(turn)
        ]
        if not raw:
            record["turn"], record["context"] = privacy.redact_data([record["turn"], record["context"]])
    return record


def iter_decision_records(
    decisions: QuerySet[MemoryGateDecision], *, with_context: bool = False, raw: bool = True
) -> Iterator[dict[str, Any]]:
    """Records for a possibly huge selection, fetched 500 at a time (prefetches included)."""
    yield from (decision_record(d, with_context=with_context, raw=raw) for d in decisions.iterator(chunk_size=500))


# --- Statistics -----------------------------------------------------------------------------------
# The mean latency per decision type is taken over the last LATENCY_DAYS days of a window: the stored
# roll-up keeps one mean a day over all types, so a longer window would read every decision of it.
LATENCY_DAYS = 7


def weekly_stats(*, weeks: int = 12, day_figures: dict[dt.date, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per ISO week (Monday start) for the last ``weeks`` weeks, oldest first.

    The week's counts are the sums of its days (``figures_for_days``: the stored roll-up for settled days,
    live for yesterday and today); its ``avg_latency_ms`` is the mean of the daily means weighted by each
    day's decisions (exact when every decision has a latency). Its ``session_count`` (distinct sessions with
    a decision in the week, which daily rows cannot sum to) is stored by the roll-up for a settled week
    (``stored_week_session_counts``: issue 9, counting twelve weeks live took 50-90 ms at 1M decisions) and
    counted live for the others (this week, and last week until Monday is settled) by one query that never reads
    the weeks' decisions: the sessions whose span overlaps the week (``sessions_last_activity``) and that have a
    decision in it (one probe of ``gate_decisions_session_time`` each). It is exact when every decision comes
    less than a day after its session's last activity, as the gate's do; a session whose only decision of the
    week is an operator's re-run of a turn older than that is not counted. ``day_figures``: the days' figures
    when the caller already has them (``figures_for_days`` from the first Monday through today).
    """
    today = timezone.localdate()
    this_monday = today - dt.timedelta(days=today.weekday())
    first_monday = this_monday - dt.timedelta(weeks=max(weeks, 1) - 1)
    mondays = [first_monday + dt.timedelta(weeks=i) for i in range(max(weeks, 1))]
    rows = {monday: empty_figures() for monday in mondays}
    latency = {monday: [0, 0] for monday in mondays}
    if day_figures is None:
        day_figures = figures_for_days(first_monday, today, sessions=False)
    for day, figures in day_figures.items():
        if day < first_monday:
            continue
        row = rows[day - dt.timedelta(days=day.weekday())]
        for name in ("total_decisions", *COUNT_FIELDS.values()):
            row[name] += figures[name]
        if figures["avg_latency_ms"] is not None:
            latency[day - dt.timedelta(days=day.weekday())][0] += figures["avg_latency_ms"] * figures["total_decisions"]
            latency[day - dt.timedelta(days=day.weekday())][1] += figures["total_decisions"]
    for monday, (total, count) in latency.items():
        rows[monday]["avg_latency_ms"] = round(total / count) if count else None
    sessions = stored_week_session_counts(mondays)
    live = [monday for monday in mondays if monday not in sessions]
    if live:
        sessions.update(zip(live, _sessions_by_week(live), strict=True))
    for monday, count in sessions.items():
        rows[monday]["session_count"] = count
    return [{"week_start": monday, **rows[monday]} for monday in mondays]


def _sessions_by_week(mondays: list[dt.date]) -> list[int]:
    """Per week, the sessions whose span overlaps it (a day of slack) and that have a decision in it: one
    query, a filtered count a week. Written in SQL: the ORM took longer to compile its twelve correlated
    subqueries than the database to run them."""
    adapt = connection.ops.adapt_datetimefield_value
    sessions, decisions = ConversationSession._meta.db_table, MemoryGateDecision._meta.db_table
    columns, params = [], []
    for monday in mondays:
        start, end = start_of_day(monday), start_of_day(monday + dt.timedelta(weeks=1))
        columns.append(
            f"COUNT(*) FILTER (WHERE s.created_at < %s AND s.last_activity_at >= %s AND EXISTS "
            f"(SELECT 1 FROM {decisions} d WHERE d.session_id = s.id AND d.created_at >= %s AND d.created_at < %s))"
        )
        params += [adapt(end), adapt(start - dt.timedelta(days=1)), adapt(start), adapt(end)]
    params.append(adapt(start_of_day(mondays[0]) - dt.timedelta(days=1)))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)} FROM {sessions} s WHERE s.last_activity_at >= %s", params)
        return list(cursor.fetchone())


def session_stats(*, days: int = 30, limit: int = 50) -> list[dict[str, Any]]:
    """Per session over the last ``days`` days: decision counts and mean latency, most recent first.

    The ``limit`` sessions with the latest decisions are found by walking ``gate_decisions_created`` from the
    newest decision until that many sessions are seen (not a GROUP BY over the window), and their figures come
    from ``gate_decisions_session_time``: both bounded by an index, whatever the size of the window.
    """
    since = timezone.now() - dt.timedelta(days=max(days, 1))
    recent = MemoryGateDecision.objects.filter(created_at__gte=since).order_by()
    top: dict[str, None] = {}  # Insertion-ordered: newest first.
    newest_first = recent.order_by("-created_at", "-id").values_list("session_id", flat=True)
    # Pages of 2,000 (not iterator(): on PostgreSQL its WITH HOLD cursor would materialise the whole window),
    # session ids only (no datetime to convert a row).
    offset, page_size = 0, 2000
    while len(top) < limit:
        page = list(newest_first[offset : offset + page_size])
        for session_id in page:
            top.setdefault(session_id)
            if len(top) >= limit:
                break
        if len(page) < page_size:
            break
        offset += page_size
    if not top:
        return []
    mine = recent.filter(session_id__in=list(top))
    figures = figures_by(mine, F("session_id"), sessions=False)
    last_of = dict(mine.values("session_id").annotate(last=Max("created_at")).values_list("session_id", "last"))
    rows = []
    for session_id in top:
        row = {
            "session_id": session_id,
            **figures.get(session_id, empty_figures()),
            "last_decision_at": last_of[session_id],
        }
        row.pop("session_count", None)
        rows.append(row)
    return rows


def latency_by_decision(*, days: int = 30, day_rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per decision type over the last ``days`` calendar days (today included), in vocabulary order: its
    count (stored roll-up and live days, ``figures_for_days``, or ``day_rows`` when the caller already has
    those days' figures, as ``daily_stats`` returns them) and its mean latency in ms over the last
    ``LATENCY_DAYS`` days of the window (one range of ``gate_decisions_decision_time`` a type, in one query)."""
    today = timezone.localdate()
    days = max(days, 1)
    counts = dict.fromkeys(Decision.values, 0)
    if day_rows is None:
        day_rows = list(figures_for_days(today - dt.timedelta(days=days - 1), today, sessions=False).values())
    for figures in day_rows:
        for decision, name in COUNT_FIELDS.items():
            counts[decision] += figures[name]
    since = start_of_day(today - dt.timedelta(days=min(days, LATENCY_DAYS) - 1))
    latency = {
        row["decision"]: row
        for row in MemoryGateDecision.objects.filter(decision__in=Decision.values, created_at__gte=since)
        .order_by()
        .values("decision")
        .annotate(total=Sum("llm_latency_ms"), n=Count("llm_latency_ms"))
    }
    out = []
    for decision in Decision.values:
        row = latency.get(decision)
        avg = round(row["total"] / row["n"]) if row and row["n"] else None
        out.append({"decision": decision, "count": counts[decision], "avg_latency_ms": avg})
    return out


def gate_stats(period: str = "daily", *, days: int | None = None, weeks: int = 12, limit: int = 50) -> dict[str, Any]:
    """The figures of ``period`` ("daily", "weekly" or "session") plus mean latency per decision type."""
    if period not in PERIODS:
        raise ValueError(f"period must be one of {', '.join(PERIODS)}")
    days = 30 if days is None else days
    if period == "daily":
        rows = daily_stats(days=days)
        return {"period": period, "rows": rows, "by_decision": latency_by_decision(days=days, day_rows=rows)}
    if period == "weekly":
        # One read of the days for the weeks and the by-decision window (which starts up to six days earlier).
        today = timezone.localdate()
        window_start = today - dt.timedelta(days=weeks * 7 - 1)
        first_monday = today - dt.timedelta(days=today.weekday(), weeks=max(weeks, 1) - 1)
        by_day = figures_for_days(min(window_start, first_monday), today, sessions=False)
        rows = weekly_stats(weeks=weeks, day_figures=by_day)
        in_window = [figures for day, figures in by_day.items() if day >= window_start]
        return {"period": period, "rows": rows, "by_decision": latency_by_decision(days=weeks * 7, day_rows=in_window)}
    rows = session_stats(days=days, limit=limit)
    return {"period": period, "rows": rows, "by_decision": latency_by_decision(days=days)}


def decision_with_its_turn(decision_id: str) -> MemoryGateDecision | None:
    """The decision with its turn and the turn's session (whose fact it is reads the sender and the channel), in three
    written statements (``reflection_site.rows``), where compiling the ORM's ``select_related`` took 1.1 ms."""
    decision = RowReader.of(MemoryGateDecision, "WHERE {id} = %s").first([decision_id])
    turn = decision and RowReader.of(ConversationTurn, "WHERE {id} = %s").first([decision.turn_id])
    session = turn and RowReader.of(ConversationSession, "WHERE {id} = %s").first([turn.session_id])
    if session is None:  # Gone (deleting a turn deletes its decisions).
        return None
    turn.session, decision.turn = session, turn
    return decision


__all__ = [
    "COUNT_FIELDS",
    "LATENCY_DAYS",
    "PERIODS",
    "decision_record",
    "decision_with_its_turn",
    "gate_stats",
    "get_decision",
    "iter_decision_records",
    "latency_by_decision",
    "list_decisions",
    "session_stats",
    "weekly_stats",
]
