"""The feedback door's throttles beside the per-user limit (issue 18): per client address (a client that varies
``user_id`` is still one client), and wrong learning tokens per address (429 with Retry-After, the right token
refused too until the minute ends). Both on the database counter here and on Redis when it is up; both fail open."""

from __future__ import annotations

import os
import socket
import time
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guardian_app.learning import ratelimit
from guardian_app.models import LearningEvent, LearningRateLimit
from tests.conftest import ApiClient
from tests.guardian_app.conftest import LEARNING_TOKEN

pytestmark = pytest.mark.django_db


def feedback(turn_id: str, user_id: str, *, token: str | None = LEARNING_TOKEN, address: str = "203.0.113.7") -> Any:
    extra: dict[str, str] = {"REMOTE_ADDR": address}
    if token is not None:
        extra["HTTP_X_LEARNING_TOKEN"] = token
    body = {"user_id": user_id, "feedback": "up"}
    return ApiClient(None).post(f"/api/v1/traces/{turn_id}/feedback", body, **extra)


@pytest.fixture
def turn(learning: Any, make_turn: Any) -> Any:
    learning.LEARNING_SHADOW_MODE = True  # Nothing is learned: the limits are what is under test.
    learning.LEARNING_RATE_LIMIT_PER_MIN = 100
    learning.LEARNING_RATE_LIMIT_PER_CLIENT_PER_MIN = 5
    learning.LEARNING_TOKEN_FAILURES_PER_MIN = 3
    learning.TRUSTED_PROXY_COUNT = 0
    return make_turn()


def _pause_until_a_fresh_minute() -> None:
    # The limits count in minute buckets: a test that must stay inside one bucket starts early in one.
    if time.time() % 60 > 50:
        time.sleep(61 - time.time() % 60)


# --- Per client address ------------------------------------------------------------------------------------
def test_a_client_varying_user_id_is_limited_by_its_address(turn):
    _pause_until_a_fresh_minute()
    answers = [feedback(turn.id, f"user-{i}") for i in range(7)]

    assert [a.status_code for a in answers] == [HTTPStatus.OK] * 5 + [HTTPStatus.TOO_MANY_REQUESTS] * 2
    refused = answers[-1]
    assert refused.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused["RateLimit-Policy"] == '"feedback-client";q=5;w=60'
    assert refused.json()["error"]["details"] == {"limit_per_min": 5, "retry_after_s": int(refused["Retry-After"])}
    # Another address is not held back by this one.
    assert feedback(turn.id, "user-x", address="198.51.100.9").status_code == HTTPStatus.OK


def test_a_refused_client_changes_nothing(turn):
    _pause_until_a_fresh_minute()
    for i in range(5):
        assert feedback(turn.id, f"u{i}").status_code == HTTPStatus.OK
    events = LearningEvent.objects.count()
    turn.refresh_from_db()
    stored = turn.feedback_json

    assert feedback(turn.id, "u-new").status_code == HTTPStatus.TOO_MANY_REQUESTS
    turn.refresh_from_db()
    assert turn.feedback_json == stored and LearningEvent.objects.count() == events


def test_the_client_limit_counts_requests_for_unknown_turns_too(turn):
    _pause_until_a_fresh_minute()
    codes = [feedback("01NOSUCHTURN0000000000000", f"u{i}").status_code for i in range(6)]
    assert codes == [HTTPStatus.NOT_FOUND] * 5 + [HTTPStatus.TOO_MANY_REQUESTS]


def test_behind_trusted_proxies_the_address_is_the_one_the_proxy_saw(turn, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    _pause_until_a_fresh_minute()
    client = ApiClient(None)

    def send(forwarded: str, user: str) -> int:
        return client.post(
            f"/api/v1/traces/{turn.id}/feedback",
            {"user_id": user, "feedback": "up"},
            HTTP_X_LEARNING_TOKEN=LEARNING_TOKEN,
            REMOTE_ADDR="10.0.0.2",  # the proxy
            HTTP_X_FORWARDED_FOR=forwarded,
        ).status_code

    # The client cannot pick its address by prepending entries: the proxy's own entry (the last) counts.
    codes = [send(f"192.0.2.{i}, 203.0.113.50", f"u{i}") for i in range(6)]
    assert codes == [HTTPStatus.OK] * 5 + [HTTPStatus.TOO_MANY_REQUESTS]
    assert send("203.0.113.51", "other") == HTTPStatus.OK


def test_client_address(rf, settings):
    settings.TRUSTED_PROXY_COUNT = 0
    request = rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.1.1.1, 2.2.2.2")
    assert ratelimit.client_address(request) == "10.0.0.2"
    settings.TRUSTED_PROXY_COUNT = 1
    assert ratelimit.client_address(request) == "2.2.2.2"
    settings.TRUSTED_PROXY_COUNT = 2
    assert ratelimit.client_address(request) == "1.1.1.1"
    settings.TRUSTED_PROXY_COUNT = 3  # fewer hops than proxies: the header is not what the proxies wrote
    assert ratelimit.client_address(request) == "10.0.0.2"


def test_a_zero_client_limit_turns_it_off(turn, settings):
    settings.LEARNING_RATE_LIMIT_PER_CLIENT_PER_MIN = 0
    assert all(feedback(turn.id, f"u{i}").status_code == HTTPStatus.OK for i in range(8))


# --- Wrong learning tokens --------------------------------------------------------------------------------
def test_wrong_tokens_are_throttled_by_address_and_then_even_the_right_one_waits(turn):
    _pause_until_a_fresh_minute()
    wrong = [feedback(turn.id, "u", token=f"guess-{i}").status_code for i in range(3)]
    assert wrong == [HTTPStatus.FORBIDDEN] * 3

    fourth = feedback(turn.id, "u", token="guess-4")
    assert fourth.status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert fourth.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(fourth["Retry-After"]) <= 60
    assert fourth["RateLimit-Policy"] == '"learning-token";q=3;w=60'

    # Locked out: a right guess is not told apart from a wrong one.
    right = feedback(turn.id, "u")
    assert right.status_code == HTTPStatus.TOO_MANY_REQUESTS and "Retry-After" in right
    turn.refresh_from_db()
    assert not turn.feedback_json
    # A missing token counts as a wrong one, and another address is unaffected.
    assert feedback(turn.id, "u", address="198.51.100.9").status_code == HTTPStatus.OK


def test_a_missing_token_counts_as_a_wrong_one(turn):
    _pause_until_a_fresh_minute()
    codes = [feedback(turn.id, "u", token=None).status_code for _ in range(4)]
    assert codes == [HTTPStatus.FORBIDDEN] * 3 + [HTTPStatus.TOO_MANY_REQUESTS]


def test_the_lockout_ends_with_the_minute(turn):
    start = 1_700_000_040.0
    for i in range(3):
        assert ratelimit.count_token_failure("203.0.113.7", now=start + i).allowed
    assert not ratelimit.count_token_failure("203.0.113.7", now=start + 4).allowed
    locked = ratelimit.token_locked_out("203.0.113.7", now=start + 30)
    assert locked is not None and locked.reset_s == 30 and locked.headers()["Retry-After"] == "30"
    assert ratelimit.token_locked_out("203.0.113.7", now=start + 60) is None
    assert ratelimit.token_locked_out("198.51.100.9", now=start + 30) is None


def test_right_tokens_are_not_counted(turn):
    _pause_until_a_fresh_minute()
    for i in range(4):
        assert feedback(turn.id, f"u{i}").status_code == HTTPStatus.OK
    assert not LearningRateLimit.objects.filter(bucket_key__startswith="learning:token:").exists()


def test_the_token_check_reads_one_row_and_counts_in_one_statement(turn):
    with CaptureQueriesContext(connection) as queries:
        ratelimit.token_locked_out("203.0.113.7")
        ratelimit.count_token_failure("203.0.113.7")
    statements = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(statements) == 2
    assert statements[0].startswith("SELECT") and "ON CONFLICT" in statements[1] and "RETURNING" in statements[1]


# --- Failing open --------------------------------------------------------------------------------------------
@pytest.fixture
def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_dead_redis_fails_open_for_both_limits(turn, settings, unused_port):
    settings.REDIS_URL = f"redis://127.0.0.1:{unused_port}/0"
    ratelimit.reset_for_tests()
    settings.LEARNING_GUARDRAILS_ENABLED = False  # the per-user limit is not under test here

    assert all(feedback(turn.id, f"u{i}").status_code == HTTPStatus.OK for i in range(7))
    assert all(feedback(turn.id, "u", token="wrong").status_code == HTTPStatus.FORBIDDEN for _ in range(5))
    assert ratelimit.fail_open_count("redis") >= 12
    ratelimit.reset_for_tests()


def _redis_url() -> str | None:
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/4"
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=0.3).ping()
    except Exception:
        if os.environ.get("REQUIRE_SERVICES"):
            raise
        return None
    return url


def test_both_limits_on_redis(turn, settings):
    url = _redis_url()
    if url is None:
        pytest.skip("Redis is not running")
    settings.REDIS_URL = url
    ratelimit.reset_for_tests()
    import redis

    client = redis.Redis.from_url(url)
    for key in client.scan_iter("learning:*:203.0.113.*"):
        client.delete(key)
    _pause_until_a_fresh_minute()
    address = f"203.0.113.{int(time.time()) % 200 + 20}"  # fresh keys even if a test before left some

    codes = [feedback(turn.id, f"u{i}", address=address).status_code for i in range(6)]
    assert codes == [HTTPStatus.OK] * 5 + [HTTPStatus.TOO_MANY_REQUESTS]
    other = f"198.51.100.{int(time.time()) % 200 + 20}"
    codes = [feedback(turn.id, "u", token="x", address=other).status_code for _ in range(4)]
    assert codes == [HTTPStatus.FORBIDDEN] * 3 + [HTTPStatus.TOO_MANY_REQUESTS]
    assert feedback(turn.id, "u", address=other).status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert ratelimit.fail_open_count() == 0
    assert not LearningRateLimit.objects.exists()  # counted in Redis, not in the database
    ratelimit.reset_for_tests()
