from __future__ import annotations

from http import HTTPStatus

import pytest

from tests.conftest import turn_payload as _payload

pytestmark = pytest.mark.django_db


def test_get_turn_and_its_context_in_order(api_client, ingest):
    turn = ingest()
    got = api_client.get(f"/api/v1/turns/{turn['id']}").json()
    assert got["user_message"]["content"] == "I prefer summaries on Fridays."
    assert got["agent_reply"]["content"] == "Noted, summaries on Fridays."
    context = api_client.get(f"/api/v1/turns/{turn['id']}/context").json()
    assert [c["sequence_number"] for c in context] == [0, 1]
    assert [c["role"] for c in context] == ["user", "agent"]


def test_session_ids_with_colons_work_in_paths(api_client, ingest):
    ingest(session_id="channel:discord:1234:5678")
    response = api_client.get("/api/v1/sessions/channel:discord:1234:5678")
    assert response.status_code == HTTPStatus.OK
    assert response.json()["turn_count"] == 1
    turns = api_client.get("/api/v1/sessions/channel:discord:1234:5678/turns").json()
    assert len(turns["items"]) == 1


def test_sessions_filter_by_channel_newest_activity_first(api_client, ingest):
    ingest(session_id="channel:a:1")
    ingest(session_id="channel:b:1")
    ingest(session_id="channel:a:2")
    body = api_client.get("/api/v1/sessions", {"channel": "a"}).json()
    assert [s["id"] for s in body["items"]] == ["channel:a:2", "channel:a:1"]


def test_session_turns_paginate_with_a_cursor_and_before(api_client, ingest):
    for i in range(7):
        ingest(user=f"message {i}")
    page = api_client.get("/api/v1/sessions/channel:test:alice/turns", {"limit": 3}).json()
    assert [t["turn_number"] for t in page["items"]] == [7, 6, 5]
    page2 = api_client.get(
        "/api/v1/sessions/channel:test:alice/turns", {"limit": 3, "cursor": page["next_cursor"]}
    ).json()
    assert [t["turn_number"] for t in page2["items"]] == [4, 3, 2]
    page3 = api_client.get(
        "/api/v1/sessions/channel:test:alice/turns", {"limit": 3, "cursor": page2["next_cursor"]}
    ).json()
    assert [t["turn_number"] for t in page3["items"]] == [1]
    assert page3["next_cursor"] is None
    before = api_client.get("/api/v1/sessions/channel:test:alice/turns", {"before": 3}).json()
    assert [t["turn_number"] for t in before["items"]] == [2, 1]


def test_a_forged_cursor_is_a_422(api_client, ingest):
    ingest()
    response = api_client.get("/api/v1/sessions", {"cursor": "not-a-cursor"})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["error"]["code"] == "validation_error"


def test_unknown_ids_are_404_in_the_error_shape(api_client):
    for path in ["/api/v1/turns/01HZZZZZZZZZZZZZZZZZZZZZZZ", "/api/v1/sessions/nope", "/api/v1/sessions/nope/turns"]:
        response = api_client.get(path)
        assert response.status_code == HTTPStatus.NOT_FOUND, path
        assert response.json()["error"]["code"] == "not_found"


def test_the_sender_round_trips_as_from(api_client):
    body = api_client.post("/api/v1/turns", _payload(user_message={"content": "hi there", "from": "ada"})).json()
    assert body["user_message"]["from"] == "ada", body
    got = api_client.get(f"/api/v1/turns/{body['id']}").json()
    assert got["user_message"]["from"] == "ada"
    assert "from_" not in got["user_message"]
