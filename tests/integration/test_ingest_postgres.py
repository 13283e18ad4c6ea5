"""The ingest and read tests again, on real PostgreSQL; plus concurrency that SQLite cannot show."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus

import pytest
from django.db import connection

from reflection_site.models import ApiKey
from sessions_app.models import ConversationTurn, GateStatus
from tests.conftest import ApiClient, turn_payload
from tests.reflection_site.test_auth_and_errors import *  # noqa: F403  (re-run on PostgreSQL)
from tests.reflection_site.test_rows import *  # noqa: F403
from tests.services import wait_until
from tests.sessions_app.test_api_reads import *  # noqa: F403
from tests.sessions_app.test_ingest import *  # noqa: F403


def test_the_database_is_postgresql(db):
    assert connection.vendor == "postgresql"


@pytest.mark.django_db(transaction=True)
def test_concurrent_ingest_into_one_session_numbers_turns_without_gaps_or_errors():
    _, raw = ApiKey.generate("concurrency", ["ingest", "read"])

    def post(i: int) -> int:
        response = ApiClient(raw).post("/api/v1/turns", turn_payload(user=f"message {i}"))
        connection.close()
        return response.status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(post, range(40)))
    assert codes == [HTTPStatus.CREATED] * 40
    numbers = sorted(ConversationTurn.objects.values_list("turn_number", flat=True))
    assert numbers == list(range(1, 41))


@pytest.mark.django_db(transaction=True)
def test_concurrent_resends_of_one_turn_store_it_once():
    _, raw = ApiKey.generate("resend", ["ingest"])
    payload = turn_payload(user_message={"id": "m-1", "content": "I live in Lyon."})

    def post(_: int) -> int:
        response = ApiClient(raw).post("/api/v1/turns", payload)
        connection.close()
        return response.status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(post, range(16)))
    assert sorted(set(codes)) == [HTTPStatus.OK, HTTPStatus.CREATED]
    assert codes.count(HTTPStatus.CREATED) == 1
    assert ConversationTurn.objects.count() == 1


def test_a_turn_travels_through_redis_to_a_real_worker(worker):
    _, raw = ApiKey.generate("pipeline", ["ingest", "read"])
    body = ApiClient(raw).post("/api/v1/turns", turn_payload(user="Thanks, that's all!")).json()
    turn = wait_until(
        lambda: ConversationTurn.objects.filter(id=body["id"]).exclude(gate_status=GateStatus.PENDING).first(),
        timeout=60,
        message="the worker to run the gate",
    )
    assert turn.gate_status == GateStatus.DONE, worker.log()[-3000:]
