"""Gate statistics: the daily roll-up into memory_gate_stats and the live figures readers get."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from sessions_app.models import MemoryGateStats
from sessions_app.queries import latency_by_decision, session_stats, weekly_stats
from sessions_app.stats import daily_stats, roll_up_gate_stats
from sessions_app.tasks import run_gate_stats_rollup

pytestmark = pytest.mark.django_db


def _noon(days_ago: int) -> dt.datetime:
    day = timezone.localdate() - dt.timedelta(days=days_ago)
    return timezone.make_aware(dt.datetime.combine(day, dt.time(12)))


def test_rollup_stores_one_row_per_day_with_the_seed_columns(make_decision):
    make_decision("UPDATE_USER", session_id="channel:t:a", created_at=_noon(3), latency=100)
    make_decision("UPDATE_TOOLS", session_id="channel:t:a", created_at=_noon(3), latency=None)
    make_decision("NO_WRITE", session_id="channel:t:b", created_at=_noon(3), latency=300)
    make_decision("UPDATE_SOUL", session_id="channel:t:b", created_at=_noon(1), latency=50)

    written = run_gate_stats_rollup()

    assert written == 2
    three = MemoryGateStats.objects.get(date=_noon(3).date())
    assert (three.session_count, three.total_decisions) == (2, 3)
    assert (three.update_user_count, three.update_tools_count, three.no_write_count, three.update_soul_count) == (
        1,
        1,
        1,
        0,
    )
    assert three.avg_latency_ms == 200  # Decisions without a latency are left out of the mean.
    assert MemoryGateStats.objects.get(date=_noon(1).date()).update_soul_count == 1


def test_rollup_twice_changes_nothing_and_later_runs_redo_recent_days(make_decision):
    make_decision(created_at=_noon(5))
    roll_up_gate_stats()
    roll_up_gate_stats()
    assert MemoryGateStats.objects.count() == 1

    make_decision(created_at=_noon(0), session_id="channel:t:z")
    roll_up_gate_stats()

    assert MemoryGateStats.objects.get(date=timezone.localdate()).total_decisions == 1
    assert MemoryGateStats.objects.get(date=_noon(5).date()).total_decisions == 1


def test_a_day_whose_decisions_are_gone_is_rolled_up_as_zeros(make_decision):
    decision = make_decision(created_at=_noon(1))
    roll_up_gate_stats()
    decision.delete()

    roll_up_gate_stats()

    assert MemoryGateStats.objects.get(date=_noon(1).date()).total_decisions == 0


def test_rollup_does_nothing_when_stats_are_disabled(make_decision, settings):
    settings.MEMORY_GATE_ENABLE_STATS = False
    make_decision()

    assert roll_up_gate_stats() == 0
    assert MemoryGateStats.objects.count() == 0


def test_daily_stats_use_stored_rows_for_settled_days_and_live_figures_for_today(make_decision):
    make_decision(created_at=_noon(4))
    roll_up_gate_stats()
    # A stored row wins for a settled day (it is what the roll-up said) ...
    MemoryGateStats.objects.filter(date=_noon(4).date()).update(total_decisions=99)
    # ... while today is always live.
    make_decision(created_at=timezone.now(), session_id="channel:t:today")

    rows = daily_stats(days=7)

    assert [row["date"] for row in rows][0] == timezone.localdate() - dt.timedelta(days=6)
    by_date = {row["date"]: row for row in rows}
    assert by_date[_noon(4).date()]["total_decisions"] == 99
    assert by_date[timezone.localdate()]["total_decisions"] == 1
    assert by_date[_noon(2).date()]["total_decisions"] == 0


def test_weekly_stats_group_by_iso_week(make_decision):
    today = timezone.localdate()
    monday = today - dt.timedelta(days=today.weekday())
    make_decision(created_at=timezone.make_aware(dt.datetime.combine(monday, dt.time(9))), session_id="channel:t:1")
    make_decision(
        created_at=timezone.make_aware(dt.datetime.combine(monday - dt.timedelta(days=1), dt.time(9))),
        session_id="channel:t:2",
    )

    rows = weekly_stats(weeks=3)

    assert [row["week_start"] for row in rows] == [
        monday - dt.timedelta(weeks=2),
        monday - dt.timedelta(weeks=1),
        monday,
    ]
    assert [row["total_decisions"] for row in rows] == [0, 1, 1]


def test_session_stats_and_latency_by_decision(make_decision):
    make_decision("UPDATE_USER", session_id="channel:t:a", latency=10, created_at=_noon(2))
    make_decision("UPDATE_USER", session_id="channel:t:a", latency=30, created_at=_noon(2))
    make_decision("NO_WRITE", session_id="channel:t:b", latency=5, created_at=_noon(1))
    make_decision("NO_WRITE", session_id="channel:t:c", latency=5, created_at=_noon(60))  # Outside the window.

    sessions = session_stats(days=30)
    latency = {row["decision"]: row for row in latency_by_decision(days=30)}

    assert [row["session_id"] for row in sessions] == ["channel:t:b", "channel:t:a"]
    assert sessions[1]["update_user_count"] == 2 and sessions[1]["avg_latency_ms"] == 20
    assert latency["UPDATE_USER"] == {"decision": "UPDATE_USER", "count": 2, "avg_latency_ms": 20}
    assert latency["NO_WRITE"]["count"] == 1
