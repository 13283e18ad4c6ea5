"""The memory gate end to end: a turn through the API, real Redis and a real Celery worker to a decision,
with the offline gate and with an OpenAI-compatible endpoint; failures end visible and re-runnable; a
worker killed mid-call loses nothing."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from django.db import connection

from reflection_site.models import ApiKey
from sessions_app.gate import sweep_pending_turns
from sessions_app.models import ConversationTurn, GateStatus, MemoryGateDecision
from tests.conftest import ApiClient, turn_payload
from tests.fake_llm import FakeReply, smart_responder
from tests.services import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(transactional_db) -> ApiClient:
    _, raw = ApiKey.generate("gate-pipeline", ["ingest", "read", "operate"])
    return ApiClient(raw)


def _decision(turn_id: str, run: int = 1) -> MemoryGateDecision | None:
    return MemoryGateDecision.objects.filter(turn_id=turn_id, run_number=run).first()


def test_the_offline_gate_decides_a_posted_turn(client, make_worker, settings):
    settings.LLM_BASE_URL = ""
    worker = make_worker().start()

    body = client.post("/api/v1/turns", turn_payload(user="I prefer summaries on Fridays.")).json()

    decision = wait_until(lambda: _decision(body["id"]), timeout=60, message="the worker to record a decision")
    assert decision.decision == "UPDATE_USER", worker.log()[-3000:]
    assert decision.llm_model == "heuristic-gate-v1"
    assert decision.candidate_fact == "Prefers summaries on Fridays."
    listed = client.get("/api/v1/gate/decisions", {"session": "channel:test:alice"}).json()["items"]
    assert [row["id"] for row in listed] == [decision.id]
    assert ConversationTurn.objects.get(id=body["id"]).gate_status == GateStatus.DONE


def test_an_llm_endpoint_decides_with_its_model_and_token_counts(client, fake_llm, make_worker):
    worker = make_worker().start()

    body = client.post("/api/v1/turns", turn_payload(user="Remember that the demo is on Thursday.")).json()

    decision = wait_until(lambda: _decision(body["id"]), timeout=60, message="the worker to record a decision")
    assert decision.llm_model == "fake-model-1", worker.log()[-3000:]
    assert (decision.prompt_tokens, decision.completion_tokens) == (11, 7)
    assert decision.decision == "UPDATE_MEMORY"
    assert decision.prompt_version == "gate-v1"
    assert fake_llm.chat_requests[0]["messages"][0]["content"].startswith("ROLE: memory_gate")


def test_llm_failures_end_in_a_failed_turn_that_can_be_run_again(client, fake_llm, make_worker):
    fake_llm.set_default(lambda body: FakeReply(status=503, content="upstream down"))
    worker = make_worker(
        extra_env={
            "LLM_MAX_RETRIES": "1",
            "LLM_RETRY_BACKOFF_S": "0",
            "GATE_TASK_MAX_RETRIES": "1",
            "GATE_TASK_RETRY_BACKOFF_S": "1",
        }
    ).start()

    body = client.post("/api/v1/turns", turn_payload(user="My name is Ada.")).json()

    turn = wait_until(
        lambda: ConversationTurn.objects.filter(id=body["id"], gate_status=GateStatus.FAILED).first(),
        timeout=60,
        message="the turn to fail",
    )
    assert "upstream down" in turn.gate_last_error, worker.log()[-3000:]
    assert len(fake_llm.chat_requests) == 4  # (1 + 1 in-call retry) × (1 + 1 task retry).
    assert client.get(f"/api/v1/turns/{turn.id}").json()["gate_status"] == "failed"

    fake_llm.set_default(smart_responder)
    response = client.post(f"/api/v1/turns/{turn.id}/gate")

    assert response.status_code == HTTPStatus.ACCEPTED
    decision = wait_until(lambda: _decision(turn.id, run=2), timeout=60, message="the re-run's decision")
    assert decision.decision == "UPDATE_USER"


def test_a_worker_killed_mid_call_loses_no_turn_and_decides_it_once(client, fake_llm, make_worker):
    fake_llm.queue(FakeReply(content={"decision": "NO_WRITE", "reason": "slow"}, delay=30))
    first = make_worker().start()

    body = client.post("/api/v1/turns", turn_payload(user="I live in Lisbon.")).json()
    wait_until(lambda: fake_llm.chat_requests, timeout=60, message="the worker to call the LLM")
    first.kill()

    turn = ConversationTurn.objects.get(id=body["id"])
    assert turn.gate_status == GateStatus.PENDING
    assert turn.gate_attempts == 1
    # The killed worker's message is not redelivered before Redis's visibility timeout: the sweep sends it.
    second = make_worker().start()
    assert sweep_pending_turns(grace_s=0) == 1

    decision = wait_until(lambda: _decision(body["id"]), timeout=60, message="the swept turn's decision")
    assert decision.decision == "UPDATE_USER", second.log()[-3000:]
    assert MemoryGateDecision.objects.filter(turn_id=body["id"]).count() == 1


def test_a_worker_whose_database_connection_died_reconnects_for_the_next_turn(client, make_worker, settings):
    # The worker keeps its connection between tasks (CELERY_DB_REUSE_MAX): a connection the database dropped
    # (a restart, a failover, an idle timeout) must fail its health check before the next task, not the task.
    settings.LLM_BASE_URL = ""
    worker = make_worker().start()
    first = client.post("/api/v1/turns", turn_payload(user="I prefer tea.", turn_number=1)).json()
    wait_until(lambda: _decision(first["id"]), timeout=60, message="the first decision")

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        assert cursor.fetchall(), "the worker holds no connection to terminate"

    second = client.post("/api/v1/turns", turn_payload(user="I prefer green tea.", turn_number=2)).json()
    decision = wait_until(lambda: _decision(second["id"]), timeout=60, message="the worker to reconnect and decide")
    assert decision.decision == "UPDATE_USER", worker.log()[-3000:]
    turn = ConversationTurn.objects.get(id=second["id"])
    assert (turn.gate_status, turn.gate_attempts) == (GateStatus.DONE, 1)
