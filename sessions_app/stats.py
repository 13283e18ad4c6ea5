"""Gate statistics: per-day figures from the decisions, and their hourly roll-up into MemoryGateStats.

A day is a calendar day in ``TIME_ZONE``. The roll-up stores one row per day (the seed's
``memory_gate_stats``); readers use the stored rows for settled days and aggregate the last two
days live, so today's figures are never an hour old. A Sunday's row also keeps the week's distinct
sessions (``week_session_count``), which the days' counts cannot add up to.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Count, IntegerField, QuerySet, Sum, Value, When
from django.utils import timezone

from sessions_app.models import Decision, MemoryGateDecision, MemoryGateStats

COUNT_FIELDS: dict[str, str] = {
    Decision.NO_WRITE: "no_write_count",
    Decision.UPDATE_MEMORY: "update_memory_count",
    Decision.UPDATE_USER: "update_user_count",
    Decision.UPDATE_SOUL: "update_soul_count",
    Decision.UPDATE_IDENTITY: "update_identity_count",
    Decision.UPDATE_TOOLS: "update_tools_count",
}
FIGURE_FIELDS = ("session_count", "total_decisions", *COUNT_FIELDS.values(), "avg_latency_ms")
# Days aggregated live by one query (a CASE of as many branches); the roll-up of a year takes twelve.
DAYS_A_QUERY = 31
# Weeks whose distinct sessions one query counts (the roll-up of a year takes eleven).
WEEKS_A_QUERY = 5
SUNDAY = 6


def start_of_day(day: dt.date) -> dt.datetime:
    """Midnight at the start of ``day`` in the current time zone."""
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min))


def empty_figures() -> dict[str, Any]:
    figures: dict[str, Any] = dict.fromkeys(FIGURE_FIELDS, 0)
    figures["avg_latency_ms"] = None
    return figures


def figures_by(
    decisions: QuerySet[MemoryGateDecision], key: Any, *, sessions: bool = True
) -> dict[Any, dict[str, Any]]:
    """Counts per decision, total, distinct sessions and mean latency, grouped by the expression ``key``.

    Two grouped queries whatever the number of groups.
    """
    decisions = decisions.order_by()
    out: dict[Any, dict[str, Any]] = defaultdict(empty_figures)
    latency: dict[Any, list[int]] = defaultdict(lambda: [0, 0])
    rows = (
        decisions.annotate(group=key)
        .values("group", "decision")
        .annotate(n=Count("id"), latency_sum=Sum("llm_latency_ms"), latency_n=Count("llm_latency_ms"))
    )
    for row in rows:
        figures = out[row["group"]]
        figures[COUNT_FIELDS[row["decision"]]] += row["n"]
        figures["total_decisions"] += row["n"]
        latency[row["group"]][0] += row["latency_sum"] or 0
        latency[row["group"]][1] += row["latency_n"]
    for group, (total, count) in latency.items():
        out[group]["avg_latency_ms"] = round(total / count) if count else None
    if sessions:
        for row in decisions.annotate(group=key).values("group").annotate(s=Count("session_id", distinct=True)):
            out[row["group"]]["session_count"] = row["s"]
    return dict(out)


def day_figures(since: dt.date, until: dt.date, *, sessions: bool = True) -> dict[dt.date, dict[str, Any]]:
    """Live figures for each day from ``since`` to ``until`` inclusive that has decisions.

    Two queries for up to ``DAYS_A_QUERY`` days, grouped by a ``CASE`` of the day's bounds over the
    ``gate_decisions_created`` range: grouping by ``TruncDate`` instead is a Python function call a row on
    SQLite (20 µs a decision). Without ``sessions``, one query (no distinct sessions: ``session_count`` is 0).
    """
    out: dict[dt.date, dict[str, Any]] = {}
    first = since
    while first <= until:
        last = min(until, first + dt.timedelta(days=DAYS_A_QUERY - 1))
        days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
        day_of = Case(
            *(
                When(created_at__lt=start_of_day(day + dt.timedelta(days=1)), then=Value(i))
                for i, day in enumerate(days)
            ),
            output_field=IntegerField(),
        )
        decisions = MemoryGateDecision.objects.filter(
            created_at__gte=start_of_day(first), created_at__lt=start_of_day(last + dt.timedelta(days=1))
        )
        for i, figures in figures_by(decisions, day_of, sessions=sessions).items():
            out[days[i]] = figures
        first = last + dt.timedelta(days=1)
    return out


def week_session_counts(sundays: Iterable[dt.date]) -> dict[dt.date, int]:
    """For each of ``sundays``, the distinct sessions with a decision in the ISO week (Monday to Sunday) that
    ends that day, zero included: one query per ``WEEKS_A_QUERY`` weeks, grouped by a ``CASE`` of the weeks'
    bounds over the ``gate_decisions_created`` range (as ``day_figures``)."""
    sundays = sorted(sundays)
    out = dict.fromkeys(sundays, 0)
    for first in range(0, len(sundays), WEEKS_A_QUERY):
        chunk = sundays[first : first + WEEKS_A_QUERY]
        bounds = [(start_of_day(day - dt.timedelta(days=6)), start_of_day(day + dt.timedelta(days=1))) for day in chunk]
        week_of = Case(
            *(When(created_at__gte=start, created_at__lt=end, then=Value(i)) for i, (start, end) in enumerate(bounds)),
            output_field=IntegerField(),
        )
        decisions = MemoryGateDecision.objects.filter(created_at__gte=bounds[0][0], created_at__lt=bounds[-1][1])
        rows = decisions.order_by().annotate(week=week_of).values("week").annotate(n=Count("session_id", distinct=True))
        for row in rows:
            if row["week"] is not None:  # A decision between two weeks of a chunk that are not consecutive.
                out[chunk[row["week"]]] = row["n"]
    return out


def roll_up_gate_stats(*, since: dt.date | None = None) -> int:
    """Store one MemoryGateStats row per day from ``since`` (default: the last stored day, or yesterday,
    whichever is earlier; on the first run, the first day with a decision) through today.

    Recomputes whole days from the decisions, so running it twice changes nothing; a day whose
    decisions were all deleted keeps a row of zeros. A Sunday's row also gets its week's distinct
    sessions (``week_session_count``), and so does every stored Sunday from before that count existed
    (a week whose Sunday has no decision has no row to keep it: readers count that week live).
    Returns the number of rows written. Does nothing when ``MEMORY_GATE_ENABLE_STATS`` is off.
    """
    if not settings.MEMORY_GATE_ENABLE_STATS:
        return 0
    today = timezone.localdate()
    if since is None:
        last = MemoryGateStats.objects.order_by("-date").values_list("date", flat=True).first()
        if last is not None:
            since = min(last, today - dt.timedelta(days=1))
        else:
            first = MemoryGateDecision.objects.order_by("created_at").values_list("created_at", flat=True).first()
            if first is None:
                return 0
            since = timezone.localdate(first)
    figures = day_figures(since, today)
    stored = set(MemoryGateStats.objects.filter(date__gte=since, date__lte=today).values_list("date", flat=True))
    sundays = [day for day in set(figures) | stored if day.weekday() == SUNDAY]
    earlier = MemoryGateStats.objects.filter(date__lt=since, date__week_day=1, week_session_count__isnull=True)
    weeks = week_session_counts([*sundays, *earlier.values_list("date", flat=True)])
    now = timezone.now()
    written = 0
    with transaction.atomic():
        for day in sorted(set(figures) | stored):
            MemoryGateStats.objects.update_or_create(
                date=day,
                defaults={**figures.get(day, empty_figures()), "week_session_count": weeks.get(day), "updated_at": now},
            )
            written += 1
        for day in (day for day in weeks if day < since):
            written += MemoryGateStats.objects.filter(date=day).update(week_session_count=weeks[day], updated_at=now)
    return written


def stored_week_session_counts(mondays: Iterable[dt.date]) -> dict[dt.date, int]:
    """The stored distinct sessions of the settled weeks (Sunday before yesterday) among those starting on
    ``mondays``, by Monday; a week without a stored count is left out (its caller counts it live)."""
    if not settings.MEMORY_GATE_ENABLE_STATS:
        return {}
    live_from = timezone.localdate() - dt.timedelta(days=1)
    monday_of = {monday + dt.timedelta(days=6): monday for monday in mondays}
    settled = [sunday for sunday in monday_of if sunday < live_from]
    rows = MemoryGateStats.objects.filter(date__in=settled, week_session_count__isnull=False)
    return {monday_of[day]: count for day, count in rows.values_list("date", "week_session_count")}


def figures_for_days(start: dt.date, end: dt.date, *, sessions: bool = True) -> dict[dt.date, dict[str, Any]]:
    """Figures of every day from ``start`` to ``end`` inclusive (zeros for a day without decisions).

    Stored roll-up rows serve the days before yesterday; yesterday, today and any day the roll-up has
    not reached are aggregated live (``day_figures``; ``sessions=False`` when the caller needs no
    ``session_count``, which saves a distinct count over the live days).
    """
    live_from = timezone.localdate() - dt.timedelta(days=1)
    stored: dict[dt.date, dict[str, Any]] = {}
    if settings.MEMORY_GATE_ENABLE_STATS:
        for row in MemoryGateStats.objects.filter(date__gte=start, date__lte=end, date__lt=live_from):
            stored[row.date] = {name: getattr(row, name) for name in FIGURE_FIELDS}
    all_days = [start + dt.timedelta(days=i) for i in range((end - start).days + 1)]
    missing = [day for day in all_days if day not in stored]
    live = day_figures(min(missing), max(missing), sessions=sessions) if missing else {}
    return {day: stored.get(day) or live.get(day) or empty_figures() for day in all_days}


def daily_stats(*, days: int = 30) -> list[dict[str, Any]]:
    """One row per day for the last ``days`` days, oldest first, days without decisions as zeros
    (stored rows for settled days, live figures for yesterday and today: ``figures_for_days``)."""
    today = timezone.localdate()
    start = today - dt.timedelta(days=max(days, 1) - 1)
    return [{"date": day, **figures} for day, figures in figures_for_days(start, today).items()]
