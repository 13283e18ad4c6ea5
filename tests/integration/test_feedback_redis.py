"""The feedback endpoint against real Redis and PostgreSQL: the Lua rate limit, Redis down (no 5xx), the worker."""

from __future__ import annotations

import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from guardian_app.learning import failures, ratelimit
from guardian_app.models import LearningEvent, MemoryItem, WriteGuardianAudit
from guardian_app.write.history import INTERRUPTED
from sessions_app.models import ConversationSession, ConversationTurn, GateStatus, MemoryGateDecision
from tests.conftest import ApiClient
from tests.services import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "integration-learning-token"
FACT = "The production database is PostgreSQL 15 on host db-2; backups run nightly at 02:00 UTC."


@pytest.fixture
def learning(settings: Any) -> Any:
    settings.LEARNING_GUARDRAILS_ENABLED = True
    settings.LEARNING_SHADOW_MODE = False
    settings.LEARNING_FEEDBACK_TOKEN = TOKEN
    settings.LEARNING_RATE_LIMIT_PER_MIN = 3
    ratelimit.reset_for_tests()
    failures.reset_error_counts()
    yield settings
    ratelimit.reset_for_tests()


@pytest.fixture
def user_id() -> str:
    """A user of this test alone: the Redis database is shared with the other tests of the run."""
    return f"it-{uuid.uuid4().hex[:12]}"


def make_turn(fact: str | None = FACT) -> ConversationTurn:
    session, _ = ConversationSession.objects.get_or_create(id="channel:it:learning", defaults={"channel_id": "it"})
    number = ConversationTurn.objects.filter(session=session).count() + 1
    turn = ConversationTurn.objects.create(
        session=session,
        turn_number=number,
        user_message_content="Where is the production database and when is it backed up?",
        agent_message_content="On db-2 (PostgreSQL 15); backups run nightly at 02:00 UTC.",
        gate_status=GateStatus.DONE,
    )
    if fact:
        MemoryGateDecision.objects.create(
            turn=turn, session=session, decision="UPDATE_MEMORY", reason="it", candidate_fact=fact, llm_model="it"
        )
    return turn


def post(turn_id: str, user_id: str, feedback: str = "up") -> Any:
    body = {"user_id": user_id, "feedback": feedback, "reason": "Never use emoji in replies"}
    return ApiClient(None).post(f"/api/v1/traces/{turn_id}/feedback", body, HTTP_X_LEARNING_TOKEN=TOKEN)


def away_from_the_minute_edge(margin: float = 4.0) -> None:
    """The window is the minute bucket: keep a test's requests inside one minute."""
    into = time.time() % 60
    if into > 60 - margin:
        time.sleep(60 - into + 0.1)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_rate_limit_counts_in_redis_and_answers_429(learning, user_id):
    assert django_settings.REDIS_URL
    turns = [make_turn(f"{FACT} Replica {i} runs on db-{i + 3}.") for i in range(4)]
    away_from_the_minute_edge()
    codes = [post(t.id, user_id).status_code for t in turns]
    assert codes == [HTTPStatus.OK] * 3 + [HTTPStatus.TOO_MANY_REQUESTS]
    refused = post(turns[0].id, user_id)
    assert refused.status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert 1 <= int(refused["Retry-After"]) <= 60 and refused["RateLimit-Policy"] == '"feedback";q=3;w=60'
    key = f"learning:feedback:{user_id}:{int(time.time() // 60)}"
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    assert int(client.get(key)) == 5
    assert 0 < client.ttl(key) <= 120
    assert ratelimit.fail_open_count() == 0
    assert LearningEvent.objects.filter(event_type="rate_limited", user_id=user_id).count() == 2


def test_concurrent_requests_never_pass_the_limit(learning, user_id):
    """INCR, EXPIRE and TTL run as one Lua script: 40 concurrent checks let exactly the limit through."""
    learning.LEARNING_RATE_LIMIT_PER_MIN = 7
    away_from_the_minute_edge()
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda _: ratelimit.check_feedback(user_id), range(40)))
    assert sum(r.allowed for r in results) == 7
    assert {r.backend for r in results} == {"redis"}
    assert sorted(r.remaining for r in results if r.allowed) == list(range(7))


def test_concurrent_feedback_over_http_is_limited_and_written_once(learning, user_id):
    learning.LEARNING_RATE_LIMIT_PER_MIN = 5
    turn = make_turn()
    away_from_the_minute_edge()

    def send(_: int) -> int:
        try:
            return post(turn.id, user_id).status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=10) as pool:
        codes = list(pool.map(send, range(20)))
    assert sorted(set(codes)) == [HTTPStatus.OK, HTTPStatus.TOO_MANY_REQUESTS]
    assert codes.count(HTTPStatus.OK) == 5
    assert MemoryItem.objects.count() == 1  # one write, whatever the races between the five
    turn.refresh_from_db()
    assert len(turn.feedback_json["events"]) == 1


def test_with_redis_down_feedback_never_fails_and_the_outage_is_counted(learning, user_id):
    learning.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    learning.LEARNING_RATE_LIMIT_PER_MIN = 1
    ratelimit.reset_for_tests()
    turns = [make_turn(f"{FACT} Replica {i} runs on db-{i + 3}.") for i in range(5)]
    started = time.monotonic()
    responses = [post(t.id, user_id) for t in turns]
    assert [r.status_code for r in responses] == [HTTPStatus.OK] * 5  # failed open: no 5xx, no 429
    assert time.monotonic() - started < 5
    assert all("RateLimit" not in r for r in responses)
    assert MemoryItem.objects.count() == 5  # the guardrails behind the limiter still ran
    # Three checks a request, each failing open: the token throttle, the per-address and the per-user limit.
    assert ratelimit.fail_open_count("redis") == 3 * 5
    error = LearningEvent.objects.get(event_type="guardrail_error")
    assert error.reason == "ratelimit" and "redis" in error.payload_json["error"]


def test_when_redis_comes_back_the_limit_applies_again(learning, user_id):
    real = django_settings.REDIS_URL
    learning.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    learning.LEARNING_RATE_LIMIT_PER_MIN = 1
    turn = make_turn()
    assert post(turn.id, user_id).status_code == HTTPStatus.OK
    learning.REDIS_URL = real
    away_from_the_minute_edge()
    other = make_turn(f"{FACT} A replica runs on db-9.")
    assert post(other.id, user_id, "down").status_code == HTTPStatus.OK
    assert post(other.id, user_id).status_code == HTTPStatus.TOO_MANY_REQUESTS


def test_accepted_feedback_reaches_memory_md_through_a_real_worker(learning, user_id, worker):
    turn = make_turn()
    response = post(turn.id, user_id)
    assert response.json()["guardrails"]["reason"] == "mem_accept", response.content
    item = MemoryItem.objects.get()
    # The guardian commits its audit as "failed (interrupted …)" before it writes (write-ahead): wait for the end.
    audit = wait_until(
        lambda: (
            WriteGuardianAudit.objects.filter(source="learning", source_ref=item.id)
            .exclude(status="failed", reason=INTERRUPTED)
            .first()
        ),
        timeout=60,
        message="the guardian to write the learned fact",
    )
    assert (audit.target_file, audit.status) == ("MEMORY.md", "written"), (audit.reason, worker.log()[-3000:])
    assert "db-2" in (django_settings.WORKSPACE_DIR / "MEMORY.md").read_text()
    assert WriteGuardianAudit.objects.filter(source="learning", source_ref=item.id).count() == 1
