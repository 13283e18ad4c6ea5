from __future__ import annotations

from http import HTTPStatus

import pytest
from django.db import IntegrityError, transaction
from kombu.exceptions import OperationalError

from reflection_site.celery import BrokerHeldOff
from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, MemoryGateDecision
from tests.conftest import turn_payload

pytestmark = pytest.mark.django_db


def test_a_new_turn_is_stored_with_its_context_and_enqueues_the_gate(api_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = api_client.post("/api/v1/turns", turn_payload())
    assert response.status_code == HTTPStatus.CREATED
    body = response.json()
    assert body["session_id"] == "channel:test:alice"
    assert body["turn_number"] == 1
    assert body["gate_status"] == "pending"
    assert len(callbacks) == 1
    turn = ConversationTurn.objects.get(id=body["id"])
    assert turn.user_message_content == "I prefer summaries on Fridays."
    context = list(turn.context.order_by("sequence_number").values_list("sequence_number", "role", "message"))
    assert context == [(0, "user", "Hi there"), (1, "agent", "Hello! How can I help?")]
    assert turn.context.first().timestamp.year == 2023


def test_a_turn_ingested_while_the_broker_is_held_off_is_stored_pending_for_the_sweep_without_a_log_line(
    api_client, django_capture_on_commit_callbacks, monkeypatch, caplog
):
    tried: list[str] = []

    def held_off(task_path: str, turn_id: str) -> None:
        tried.append(turn_id)
        raise BrokerHeldOff("a send failed a moment ago")

    monkeypatch.setattr("reflection_site.celery.send", held_off)
    with caplog.at_level("WARNING"), django_capture_on_commit_callbacks(execute=True):
        response = api_client.post("/api/v1/turns", turn_payload())
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert tried == [response.json()["id"]]
    assert ConversationTurn.objects.get(id=tried[0]).gate_status == "pending"
    assert not caplog.records  # The send that found the broker gone logged it; the sweep takes this one.


def test_a_broker_error_of_the_gate_hand_off_is_logged_and_the_turn_still_stored(
    api_client, django_capture_on_commit_callbacks, monkeypatch, caplog
):
    def refused(task_path: str, turn_id: str) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("reflection_site.celery.send", refused)
    with caplog.at_level("ERROR"), django_capture_on_commit_callbacks(execute=True):
        response = api_client.post("/api/v1/turns", turn_payload())
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert ConversationTurn.objects.get(id=response.json()["id"]).gate_status == "pending"
    assert "Connection refused" in caplog.text


def test_no_turn_number_takes_the_next_one(ingest):
    assert ingest(user="one")["turn_number"] == 1
    assert ingest(user="two")["turn_number"] == 2
    assert ingest(session_id="channel:test:bob", user="other")["turn_number"] == 1


def test_the_session_is_upserted_and_its_activity_bumped(ingest):
    ingest(user="one")
    first = ConversationSession.objects.get(id="channel:test:alice").last_activity_at
    ingest(user="two")
    session = ConversationSession.objects.get(id="channel:test:alice")
    assert session.last_activity_at > first
    assert ConversationSession.objects.count() == 1


def test_resending_the_same_turn_number_returns_the_stored_turn(api_client):
    payload = turn_payload(turn_number=7)
    first = api_client.post("/api/v1/turns", payload)
    again = api_client.post("/api/v1/turns", payload)
    assert first.status_code == HTTPStatus.CREATED
    assert again.status_code == HTTPStatus.OK
    assert again.json()["id"] == first.json()["id"]
    assert ConversationTurn.objects.count() == 1
    assert ConversationContext.objects.count() == 2


def test_resending_the_same_user_message_id_returns_the_stored_turn(api_client):
    payload = turn_payload(user_message={"id": "msg-1", "content": "I live in Lyon."})
    first = api_client.post("/api/v1/turns", payload)
    again = api_client.post("/api/v1/turns", payload)
    assert (first.status_code, again.status_code) == (HTTPStatus.CREATED, HTTPStatus.OK)
    assert again.json()["id"] == first.json()["id"]
    assert ConversationTurn.objects.count() == 1


def test_same_turn_number_with_different_content_is_a_conflict_that_changes_nothing(api_client):
    api_client.post("/api/v1/turns", turn_payload(turn_number=3))
    response = api_client.post("/api/v1/turns", turn_payload(turn_number=3, user="Something else entirely."))
    assert response.status_code == HTTPStatus.CONFLICT
    assert response.json()["error"]["code"] == "turn_conflict"
    assert ConversationTurn.objects.get().user_message_content == "I prefer summaries on Fridays."


def test_same_message_id_with_different_content_is_a_conflict(api_client):
    api_client.post("/api/v1/turns", turn_payload(user_message={"id": "m-9", "content": "first"}))
    response = api_client.post("/api/v1/turns", turn_payload(user_message={"id": "m-9", "content": "changed"}))
    assert response.status_code == HTTPStatus.CONFLICT
    assert ConversationTurn.objects.count() == 1


def test_created_at_accepts_milliseconds_and_iso(ingest):
    assert ingest(user="a", created_at=1_700_000_000_000)["created_at"].startswith("2023-11-14T22:13:20")
    assert ingest(user="b", created_at="2024-02-03T04:05:06Z")["created_at"].startswith("2024-02-03T04:05:06")


def test_gate_disabled_stores_the_turn_without_enqueueing(api_client, settings, django_capture_on_commit_callbacks):
    settings.MEMORY_GATE_ENABLED = False
    with django_capture_on_commit_callbacks() as callbacks:
        body = api_client.post("/api/v1/turns", turn_payload()).json()
    assert body["gate_status"] == "disabled"
    assert callbacks == []


def test_unique_turn_number_per_session_is_a_database_constraint(ingest):
    ingest(turn_number=1)
    turn = ConversationTurn.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        ConversationTurn.objects.create(
            session_id=turn.session_id, turn_number=1, user_message_content="x", agent_message_content="y"
        )


def test_context_role_is_checked_by_the_database(ingest):
    ingest()
    turn = ConversationTurn.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        ConversationContext.objects.create(
            turn=turn, role="system", message="x", timestamp=turn.created_at, sequence_number=9
        )


def test_a_decision_needs_a_fact_unless_no_write(ingest):
    ingest()
    turn = ConversationTurn.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        MemoryGateDecision.objects.create(
            turn=turn, session=turn.session, decision="UPDATE_USER", reason="r", llm_model="m"
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        MemoryGateDecision.objects.create(
            turn=turn, session=turn.session, decision="MAYBE", reason="r", candidate_fact="f", llm_model="m"
        )
    MemoryGateDecision.objects.create(turn=turn, session=turn.session, decision="NO_WRITE", reason="r", llm_model="m")


def test_deleting_a_session_cascades_to_turns_and_context(ingest):
    ingest()
    ConversationSession.objects.all().delete()
    assert ConversationTurn.objects.count() == 0
    assert ConversationContext.objects.count() == 0


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_time_with_no_utc_equivalent_is_a_422_not_a_500(api_client, when):
    """Found by the API fuzzer: the time was stored in UTC only after validation, and overflowed there."""
    payload = turn_payload()
    payload["created_at"] = when
    payload["context"] = [{"role": "user", "message": "hi", "timestamp": when}]

    response = api_client.post("/api/v1/turns", payload)

    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY, response.content
    assert "out of range" in response.json()["error"]["message"]
    assert not ConversationTurn.objects.exists()
