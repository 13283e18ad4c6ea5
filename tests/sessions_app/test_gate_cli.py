"""`python manage.py gate …`: the seed's /reflection gate CLI."""

from __future__ import annotations

import datetime as dt
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from sessions_app.models import ConversationTurn, GateStatus, MemoryGateStats

pytestmark = pytest.mark.django_db


def gate(*args: str) -> str:
    out = StringIO()
    call_command("gate", *args, stdout=out)
    return out.getvalue()


def test_list_prints_a_table_of_the_newest_decisions(make_decision):
    now = timezone.now()
    for i in range(12):
        make_decision("UPDATE_USER", session_id=f"channel:t:{i}", created_at=now - dt.timedelta(minutes=i))

    lines = gate("list").splitlines()

    assert lines[0].split() == [
        "ID",
        "CREATED",
        "SESSION",
        "TURN",
        "DECISION",
        "LATENCY",
        "MODEL",
        "FACT",
        "/",
        "REASON",
    ]
    assert len(lines) == 2 + 10  # Header, rule, the default limit of 10.
    assert "channel:t:0" in lines[2] and "UPDATE_USER" in lines[2] and "100 ms" in lines[2]
    assert "Prefers summaries on Fridays." in lines[2]


def test_list_filters_by_session_decision_and_limit(make_decision):
    make_decision("UPDATE_USER", session_id="channel:t:a")
    make_decision("NO_WRITE", session_id="channel:t:a")
    make_decision("NO_WRITE", session_id="channel:t:b")

    positional = json.loads(gate("list", "channel:t:a", "--json"))
    flagged = json.loads(gate("list", "-S", "channel:t:a", "-d", "no_write", "--json"))
    limited = json.loads(gate("list", "-l", "1", "--json"))

    assert {r["session_id"] for r in positional} == {"channel:t:a"} and len(positional) == 2
    assert [(r["session_id"], r["decision"]) for r in flagged] == [("channel:t:a", "NO_WRITE")]
    assert len(limited) == 1


def test_list_filters_by_time(make_decision):
    base = timezone.now().replace(microsecond=0) - dt.timedelta(days=5)
    make_decision(session_id="channel:t:old", created_at=base)
    make_decision(session_id="channel:t:new", created_at=base + dt.timedelta(days=3))

    rows = json.loads(gate("list", "-s", (base + dt.timedelta(days=1)).isoformat(), "--json"))
    until = json.loads(gate("list", "-u", (base + dt.timedelta(days=1)).isoformat(), "--json"))

    assert [r["session_id"] for r in rows] == ["channel:t:new"]
    assert [r["session_id"] for r in until] == ["channel:t:old"]


def test_list_reads_the_one_time_syntax_of_every_command(make_decision):
    """Issue 20: -s/-u are reflection_site.cli's times, as the guardian command's (ISO only before)."""
    base = timezone.now().replace(microsecond=0)
    make_decision(session_id="channel:t:old", created_at=base - dt.timedelta(days=5))
    make_decision(session_id="channel:t:new", created_at=base - dt.timedelta(hours=1))
    epoch_ms = str(int((base - dt.timedelta(days=1)).timestamp() * 1000))

    relative = json.loads(gate("list", "-s", "2d", "--json"))
    epoch = json.loads(gate("list", "-u", epoch_ms, "--json"))

    assert [r["session_id"] for r in relative] == ["channel:t:new"]
    assert [r["session_id"] for r in epoch] == ["channel:t:old"]


def test_list_with_context_prints_each_turn_and_window(make_decision):
    make_decision()

    out = gate("list", "-c")

    assert "[0] user: Hi there" in out
    assert "user:  I prefer summaries on Fridays." in out


def test_list_says_so_when_nothing_matches(db):
    assert gate("list").strip() == "No decisions match."


def test_a_bad_time_is_an_error(db):
    with pytest.raises(CommandError, match="ISO 8601"):
        call_command("gate", "list", "--since", "last tuesday")


def test_show_prints_the_decision_and_with_c_its_context(make_decision):
    made = make_decision("UPDATE_USER")

    plain = gate("show", made.id)
    full = gate("show", made.id, "-c")
    as_json = json.loads(gate("show", made.id, "--json"))

    assert f"Gate decision {made.id}" in plain
    assert "Target file     USER.md" in plain
    assert "Tokens          50 prompt, 10 completion" in plain
    assert '{"decision": "UPDATE_USER"}' in plain
    assert "Hi there" not in plain and "[0] user: Hi there" in full
    assert as_json["id"] == made.id and len(as_json["context"]) == 2


def test_show_an_unknown_id_is_an_error(db):
    with pytest.raises(CommandError, match="No gate decision"):
        call_command("gate", "show", "nope")


def test_stats_daily_weekly_and_by_session(make_decision):
    make_decision("UPDATE_USER", session_id="channel:t:a", latency=100)
    make_decision("NO_WRITE", session_id="channel:t:b", latency=300)

    daily = gate("stats", "--daily", "--days", "3").splitlines()
    weekly = gate("stats", "--weekly")
    by_session = gate("stats", "--by-session")
    as_json = json.loads(gate("stats", "--json"))

    assert daily[0].split()[:3] == ["DATE", "SESSIONS", "TOTAL"]
    today = next(line for line in daily if line.startswith(timezone.localdate().isoformat()))
    assert today.split()[1:4] == ["2", "2", "1"]
    assert "WEEK OF" in weekly
    assert "channel:t:a" in by_session and "channel:t:b" in by_session
    assert as_json["period"] == "daily" and len(as_json["rows"]) == 14
    assert any(line.split()[:3] == ["NO_WRITE", "1", "300"] for line in daily)


def test_export_writes_jsonl_to_a_file_with_the_filters(make_decision, tmp_path):
    make_decision("UPDATE_USER", session_id="channel:t:a")
    make_decision("NO_WRITE", session_id="channel:t:b")
    target = tmp_path / "decisions.jsonl"

    out = gate("export", "-d", "NO_WRITE", "-o", str(target))

    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["decision"] for r in records] == ["NO_WRITE"]
    assert records[0]["raw_response"] == '{"decision": "NO_WRITE"}'
    assert "Exported 1 decision(s)" in out


def test_export_to_stdout(make_decision):
    make_decision()

    lines = gate("export", "-c").splitlines()

    assert len(lines) == 1 and json.loads(lines[0])["context"][0]["message"] == "Hi there"


def test_sweep_prints_a_summary(make_turn, enqueued):
    turn = make_turn(user="hi")
    ConversationTurn.objects.filter(id=turn.id).update(gate_enqueued_at=timezone.now() - dt.timedelta(hours=1))

    assert gate("sweep").strip() == "Requeued 1 pending turn(s)"
    assert enqueued == [turn.id]


def test_rerun_starts_a_new_run(make_turn, enqueued, django_capture_on_commit_callbacks):
    turn = make_turn(user="hi")
    ConversationTurn.objects.filter(id=turn.id).update(gate_status=GateStatus.FAILED)

    with django_capture_on_commit_callbacks(execute=True):
        out = gate("rerun", turn.id)

    assert f"Gate run 2 of turn {turn.id} enqueued" in out
    assert enqueued == [turn.id]


def test_rollup_stores_the_days(make_decision):
    make_decision()

    assert "Stored statistics for 1 day(s)" in gate("rollup")
    assert MemoryGateStats.objects.get(date=timezone.localdate()).total_decisions == 1


def test_stats_leaves_out_days_without_a_decision_and_says_so(make_decision):
    make_decision("UPDATE_USER", session_id="channel:t:a", latency=100)

    daily = gate("stats", "--daily", "--days", "14")

    dates = [line.split()[0] for line in daily.splitlines() if line[:4].isdigit()]
    assert dates == [timezone.localdate().isoformat()]
    assert "(13 day(s) of the period without a decision are not shown; --json has them.)" in daily
    assert len(json.loads(gate("stats", "--json", "--days", "14"))["rows"]) == 14
