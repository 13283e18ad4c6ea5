"""Issue 9: weekly and per-decision gate statistics read the stored daily roll-up for settled days, and say the
same as the decisions themselves; the per-session figures are found without a GROUP BY over the window."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

import pytest
from django.utils import timezone

from sessions_app.models import ConversationSession, MemoryGateDecision, MemoryGateStats
from sessions_app.queries import latency_by_decision, session_stats, weekly_stats
from sessions_app.stats import COUNT_FIELDS, roll_up_gate_stats

pytestmark = pytest.mark.django_db

KINDS = ("NO_WRITE", "NO_WRITE", "UPDATE_USER", "NO_WRITE", "UPDATE_MEMORY", "UPDATE_TOOLS")


def _at(days_ago: int, hour: int) -> dt.datetime:
    day = timezone.localdate() - dt.timedelta(days=days_ago)
    return timezone.make_aware(dt.datetime.combine(day, dt.time(hour)))


@pytest.fixture
def three_weeks(make_decision: Any) -> list[MemoryGateDecision]:
    """Decisions on 20 of the last 24 days across 6 sessions, each session's span set as ingest keeps it."""
    decisions = []
    for days_ago in range(24):
        if days_ago % 6 == 5:
            continue  # A few days without decisions.
        for k in range(days_ago % 4 + 1):
            session = f"channel:t:s{(days_ago // 4 + k) % 6}"
            kind = KINDS[(days_ago + k) % len(KINDS)]
            # Every decision of a day has the same latency, so the day's stored mean is exact.
            decisions.append(
                make_decision(kind, session_id=session, created_at=_at(days_ago, 9 + k), latency=100 + 10 * days_ago)
            )
    for session in ConversationSession.objects.all():
        times = [d.created_at for d in decisions if d.session_id == session.id]
        ConversationSession.objects.filter(id=session.id).update(created_at=min(times), last_activity_at=max(times))
    return decisions


def _live_weeks(weeks: int) -> dict[dt.date, dict[str, Any]]:
    """The weekly figures straight from the decisions, computed here in Python."""
    today = timezone.localdate()
    first_monday = today - dt.timedelta(days=today.weekday(), weeks=weeks - 1)
    out: dict[dt.date, dict[str, Any]] = {}
    sessions: dict[dt.date, set[str]] = defaultdict(set)
    latencies: dict[dt.date, list[int]] = defaultdict(list)
    for decision in MemoryGateDecision.objects.all():
        day = timezone.localtime(decision.created_at).date()
        monday = day - dt.timedelta(days=day.weekday())
        if monday < first_monday:
            continue
        row = out.setdefault(monday, dict.fromkeys(("total_decisions", *COUNT_FIELDS.values()), 0))
        row["total_decisions"] += 1
        row[COUNT_FIELDS[decision.decision]] += 1
        sessions[monday].add(decision.session_id)
        latencies[monday].append(decision.llm_latency_ms)
    for monday, row in out.items():
        row["session_count"] = len(sessions[monday])
        row["avg_latency_ms"] = round(sum(latencies[monday]) / len(latencies[monday]))
    return out


def test_weekly_figures_from_the_rollup_equal_the_live_ones(three_weeks: list[MemoryGateDecision]) -> None:
    live = _live_weeks(4)
    assert roll_up_gate_stats() > 15

    rows = weekly_stats(weeks=4)

    assert sum(row["total_decisions"] for row in rows) == sum(row["total_decisions"] for row in live.values())
    for row in rows:
        expected = live.get(row["week_start"])
        if expected is None:
            assert row["total_decisions"] == 0
            continue
        assert {k: row[k] for k in expected} == expected, row["week_start"]


def test_weekly_figures_read_the_stored_days(three_weeks: list[MemoryGateDecision]) -> None:
    roll_up_gate_stats()
    before = {row["week_start"]: row for row in weekly_stats(weeks=4)}
    settled = timezone.localdate() - dt.timedelta(days=10)
    # What the roll-up stored is what the week says for a settled day (not a second live count).
    MemoryGateStats.objects.filter(date=settled).update(
        total_decisions=models_f("total_decisions", 1000), no_write_count=models_f("no_write_count", 1000)
    )

    after = {row["week_start"]: row for row in weekly_stats(weeks=4)}

    monday = settled - dt.timedelta(days=settled.weekday())
    assert after[monday]["total_decisions"] == before[monday]["total_decisions"] + 1000
    assert after[monday]["no_write_count"] == before[monday]["no_write_count"] + 1000


def models_f(field: str, plus: int) -> Any:
    from django.db.models import F

    return F(field) + plus


def test_a_settled_week_reads_its_sessions_from_its_sunday(three_weeks: list[MemoryGateDecision]) -> None:
    roll_up_gate_stats()
    before = {row["week_start"]: row["session_count"] for row in weekly_stats(weeks=4)}
    today = timezone.localdate()
    settled = MemoryGateStats.objects.filter(date__week_day=1, date__lt=today - dt.timedelta(days=1))
    stored = settled.order_by("-date").first()  # The newest settled Sunday with decisions.
    settled_sunday = stored.date
    assert stored.week_session_count == before[settled_sunday - dt.timedelta(days=6)] > 0
    MemoryGateStats.objects.filter(date=settled_sunday).update(week_session_count=999)

    after = {row["week_start"]: row["session_count"] for row in weekly_stats(weeks=4)}

    assert after[settled_sunday - dt.timedelta(days=6)] == 999
    assert after[today - dt.timedelta(days=today.weekday())] == before[today - dt.timedelta(days=today.weekday())]


def test_the_rollup_keeps_week_sessions_on_sundays_and_fills_older_sundays(
    three_weeks: list[MemoryGateDecision],
) -> None:
    live = _live_weeks(6)
    roll_up_gate_stats()
    rows = MemoryGateStats.objects.filter(week_session_count__isnull=False)
    assert rows and all(row.date.weekday() == 6 for row in rows)
    for row in rows:
        assert row.week_session_count == live[row.date - dt.timedelta(days=6)]["session_count"]
    # Rows stored before the count existed get it from the next roll-up, their days' figures unchanged.
    figures = {row.date: row.total_decisions for row in MemoryGateStats.objects.all()}
    MemoryGateStats.objects.update(week_session_count=None)

    roll_up_gate_stats()

    assert {row.date: row.week_session_count for row in MemoryGateStats.objects.filter(date__week_day=1)} == {
        row.date: row.week_session_count for row in rows
    }
    assert {row.date: row.total_decisions for row in MemoryGateStats.objects.all()} == figures


def test_weekly_figures_without_the_rollup_are_the_same(settings: Any, three_weeks: list[MemoryGateDecision]) -> None:
    roll_up_gate_stats()
    stored = weekly_stats(weeks=4)
    settings.MEMORY_GATE_ENABLE_STATS = False  # Readers then aggregate every day live.

    assert weekly_stats(weeks=4) == stored


def test_by_decision_counts_from_the_rollup_equal_the_live_ones(three_weeks: list[MemoryGateDecision]) -> None:
    roll_up_gate_stats()
    since = _at(13, 0)
    recent = _at(6, 0)  # LATENCY_DAYS = 7: today and the six days before.

    rows = {row["decision"]: row for row in latency_by_decision(days=14)}

    for kind in set(KINDS):
        window = [d for d in three_weeks if d.decision == kind and d.created_at >= since]
        assert rows[kind]["count"] == len(window)
        latest = [d.llm_latency_ms for d in window if d.created_at >= recent]
        assert rows[kind]["avg_latency_ms"] == (round(sum(latest) / len(latest)) if latest else None)
    assert rows["UPDATE_SOUL"] == {"decision": "UPDATE_SOUL", "count": 0, "avg_latency_ms": None}


def test_session_stats_take_the_sessions_with_the_latest_decisions(
    three_weeks: list[MemoryGateDecision], django_assert_max_num_queries: Any
) -> None:
    last: dict[str, dt.datetime] = {}
    for d in three_weeks:
        last[d.session_id] = max(last.get(d.session_id, d.created_at), d.created_at)
    expected = sorted(last, key=lambda s: last[s], reverse=True)[:3]

    with django_assert_max_num_queries(3):
        rows = session_stats(days=30, limit=3)

    assert [row["session_id"] for row in rows] == expected
    for row in rows:
        mine = [d for d in three_weeks if d.session_id == row["session_id"]]
        assert row["total_decisions"] == len(mine)
        assert row["last_decision_at"] == last[row["session_id"]]


def test_the_weekly_endpoint_reads_the_days_once_and_says_the_same(
    three_weeks: list[MemoryGateDecision], django_assert_max_num_queries: Any
) -> None:
    from sessions_app.queries import gate_stats

    roll_up_gate_stats()

    # Stored days, live days, stored weekly sessions, the live weeks' sessions, latency per type.
    with django_assert_max_num_queries(5):
        stats = gate_stats("weekly", weeks=3)

    assert stats["rows"] == weekly_stats(weeks=3)
    assert stats["by_decision"] == latency_by_decision(days=21)
