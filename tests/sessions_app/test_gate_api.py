"""The gate's API: decision lists with filters and cursors, one decision with context, stats, export, re-run."""

from __future__ import annotations

import datetime as dt
import json
from http import HTTPStatus

import pytest
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import ConversationTurn, GateStatus

pytestmark = pytest.mark.django_db

LIST = "/api/v1/gate/decisions"


def test_list_rows_carry_the_seed_fields(api_client, make_decision):
    made = make_decision("UPDATE_USER", latency=123)

    response = api_client.get(LIST)

    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["next_cursor"] is None
    (row,) = body["items"]
    assert row["id"] == made.id
    assert row["turn_id"] == made.turn_id
    assert row["session_id"] == "channel:test:alice"
    assert row["turn_number"] == 1
    assert row["decision"] == "UPDATE_USER"
    assert row["reason"] == "A stable preference."
    assert row["candidate_fact"] == "Prefers summaries on Fridays."
    assert row["target_file"] == "USER.md"
    assert (row["llm_model"], row["llm_latency_ms"], row["prompt_tokens"], row["completion_tokens"]) == (
        "fake-model-1",
        123,
        50,
        10,
    )
    assert row["created_at"]
    assert row["turn"] is None and row["context"] is None
    assert "raw_response" not in row


def test_list_filters_by_session_decision_model_and_text(api_client, make_decision):
    make_decision("UPDATE_USER", session_id="channel:t:a")
    tools = make_decision("UPDATE_TOOLS", session_id="channel:t:b", fact="Deploys with make deploy.")
    make_decision("NO_WRITE", session_id="channel:t:b", model="heuristic-gate-v1")

    def ids(**params):
        return [row["id"] for row in api_client.get(LIST, params).json()["items"]]

    assert len(ids(session="channel:t:b")) == 2
    assert ids(session="channel:t:b", decision="UPDATE_TOOLS") == [tools.id]
    assert len(ids(model="heuristic-gate-v1")) == 1
    assert ids(q="make deploy") == [tools.id]
    assert ids(session="channel:nobody") == []


def test_list_filters_by_time_with_inclusive_since_and_exclusive_until(api_client, make_decision):
    base = timezone.now().replace(microsecond=0) - dt.timedelta(days=3)
    old = make_decision(created_at=base, session_id="channel:t:1")
    mid = make_decision(created_at=base + dt.timedelta(days=1), session_id="channel:t:2")
    make_decision(created_at=base + dt.timedelta(days=2), session_id="channel:t:3")

    rows = api_client.get(LIST, {"since": base.isoformat(), "until": (base + dt.timedelta(days=2)).isoformat()}).json()[
        "items"
    ]

    assert [row["id"] for row in rows] == [mid.id, old.id]


def test_an_invalid_decision_filter_is_a_422(api_client):
    response = api_client.get(LIST, {"decision": "UPDATE_EVERYTHING"})

    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["error"]["code"] == "validation_error"


def test_list_pages_with_a_cursor_newest_first(api_client, make_decision):
    now = timezone.now()
    made = [make_decision(created_at=now - dt.timedelta(minutes=i), session_id=f"channel:t:{i}") for i in range(5)]

    first = api_client.get(LIST, {"limit": 2}).json()
    second = api_client.get(LIST, {"limit": 2, "cursor": first["next_cursor"]}).json()
    third = api_client.get(LIST, {"limit": 2, "cursor": second["next_cursor"]}).json()

    seen = [row["id"] for page in (first, second, third) for row in page["items"]]
    assert seen == [d.id for d in made]
    assert third["next_cursor"] is None


def test_list_with_context_adds_the_turn_and_its_window(api_client, make_decision, django_assert_max_num_queries):
    for i in range(3):
        make_decision(session_id=f"channel:t:{i}")

    with django_assert_max_num_queries(6):
        rows = api_client.get(LIST, {"with_context": "true"}).json()["items"]

    assert rows[0]["turn"]["user_message"]["content"] == "I prefer summaries on Fridays."
    assert [item["message"] for item in rows[0]["context"]] == ["Hi there", "Hello! How can I help?"]


def test_show_returns_the_decision_with_raw_reply_turn_and_context(api_client, make_decision):
    made = make_decision("UPDATE_USER")
    url = reverse("api:get_gate_decision", args=[made.id])

    plain = api_client.get(url).json()
    full = api_client.get(url, {"with_context": "true"}).json()

    assert plain["decision"]["id"] == made.id
    assert plain["decision"]["raw_response"] == '{"decision": "UPDATE_USER"}'
    assert plain["turn"]["id"] == made.turn_id
    assert plain["context"] is None
    assert [item["role"] for item in full["context"]] == ["user", "agent"]


def test_show_an_unknown_decision_is_a_404(api_client):
    response = api_client.get(reverse("api:get_gate_decision", args=["nope"]))

    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json()["error"]["code"] == "not_found"


def test_export_streams_jsonl_with_the_filters(api_client, make_decision):
    make_decision("UPDATE_USER", session_id="channel:t:a")
    wanted = make_decision("NO_WRITE", session_id="channel:t:b")

    response = api_client.get("/api/v1/gate/decisions/export", {"session": "channel:t:b", "with_context": "true"})

    assert response.status_code == HTTPStatus.OK
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert "attachment" in response["Content-Disposition"]
    lines = b"".join(response.streaming_content).decode().splitlines()
    (record,) = [json.loads(line) for line in lines]
    assert record["id"] == wanted.id
    assert record["raw_response"] == '{"decision": "NO_WRITE"}'
    assert record["turn"]["user_message"] == "I prefer summaries on Fridays."
    assert len(record["context"]) == 2


def test_stats_daily_weekly_and_by_session(api_client, make_decision):
    make_decision("UPDATE_USER", session_id="channel:t:a", latency=100)
    make_decision("NO_WRITE", session_id="channel:t:b", latency=300)

    daily = api_client.get("/api/v1/gate/stats", {"days": 7}).json()
    weekly = api_client.get("/api/v1/gate/stats", {"period": "weekly", "weeks": 2}).json()
    sessions = api_client.get("/api/v1/gate/stats", {"period": "session"}).json()

    assert daily["period"] == "daily" and len(daily["rows"]) == 7
    today = daily["rows"][-1]
    assert today["date"] == timezone.localdate().isoformat()
    assert (today["total_decisions"], today["session_count"], today["update_user_count"], today["no_write_count"]) == (
        2,
        2,
        1,
        1,
    )
    assert today["avg_latency_ms"] == 200
    assert weekly["rows"][-1]["total_decisions"] == 2 and len(weekly["rows"]) == 2
    assert {row["session_id"] for row in sessions["rows"]} == {"channel:t:a", "channel:t:b"}
    by_decision = {row["decision"]: row for row in daily["by_decision"]}
    assert by_decision["NO_WRITE"] == {"decision": "NO_WRITE", "count": 1, "avg_latency_ms": 300}
    assert by_decision["UPDATE_SOUL"]["count"] == 0


def test_stats_refuses_an_unknown_period(api_client):
    assert api_client.get("/api/v1/gate/stats", {"period": "hourly"}).status_code == HTTPStatus.UNPROCESSABLE_ENTITY


def test_rerun_needs_operate_and_starts_a_new_run(client_for, make_turn, enqueued, django_capture_on_commit_callbacks):
    turn = make_turn(user="My name is Ada.")
    ConversationTurn.objects.filter(id=turn.id).update(gate_status=GateStatus.FAILED, gate_last_error="boom")
    url = reverse("api:rerun_turn_gate", args=[turn.id])

    assert client_for("read").post(url).status_code == HTTPStatus.FORBIDDEN
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for("operate").post(url)

    assert response.status_code == HTTPStatus.ACCEPTED
    assert response.json()["gate_status"] == "pending"
    assert response.json()["gate_last_error"] is None
    assert enqueued == [turn.id]
    turn.refresh_from_db()
    assert turn.gate_run == 2


def test_rerun_of_an_unknown_turn_is_a_404(api_client):
    assert api_client.post(reverse("api:rerun_turn_gate", args=["nope"])).status_code == HTTPStatus.NOT_FOUND


def test_reading_decisions_needs_a_key(anon_client):
    assert anon_client.get(LIST).status_code == HTTPStatus.UNAUTHORIZED
