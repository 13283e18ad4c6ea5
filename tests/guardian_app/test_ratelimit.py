"""The per-user feedback rate limit: one atomic step on the database counter, failing open."""

from __future__ import annotations

import socket
import time

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from guardian_app.learning import ratelimit
from guardian_app.models import LearningRateLimit

pytestmark = pytest.mark.django_db

MINUTE = 1_700_000_040.0  # The start of a minute bucket.


def test_the_database_counter_allows_the_limit_then_refuses(learning):
    learning.LEARNING_RATE_LIMIT_PER_MIN = 3
    results = [ratelimit.check_feedback("alice", now=MINUTE + i) for i in range(5)]
    assert [r.allowed for r in results] == [True, True, True, False, False]
    assert [r.remaining for r in results] == [2, 1, 0, 0, 0]
    assert {r.backend for r in results} == {"database"}
    assert results[3].reset_s == 57
    row = LearningRateLimit.objects.get()
    assert row.bucket_key == f"learning:feedback:alice:{int(MINUTE // 60)}" and row.count == 5


def test_each_check_is_one_sql_statement(learning):
    with CaptureQueriesContext(connection) as queries:
        ratelimit.check_feedback("alice", now=MINUTE)
    statements = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(statements) == 1
    assert "ON CONFLICT" in statements[0] and "RETURNING" in statements[0]


def test_the_next_minute_starts_a_new_window(learning):
    learning.LEARNING_RATE_LIMIT_PER_MIN = 1
    assert ratelimit.check_feedback("alice", now=MINUTE).allowed
    assert not ratelimit.check_feedback("alice", now=MINUTE + 59.5).allowed
    assert ratelimit.check_feedback("alice", now=MINUTE + 60).allowed


def test_users_are_limited_separately(learning):
    learning.LEARNING_RATE_LIMIT_PER_MIN = 1
    assert ratelimit.check_feedback("alice", now=MINUTE).allowed
    assert ratelimit.check_feedback("bob", now=MINUTE).allowed
    assert not ratelimit.check_feedback("alice", now=MINUTE).allowed


def test_a_very_long_user_id_is_hashed_into_the_key(learning):
    result = ratelimit.check_feedback("x" * 255, now=MINUTE)
    assert result.allowed
    assert LearningRateLimit.objects.get().bucket_key.startswith("learning:feedback:sha256:")


def test_the_headers_follow_the_ietf_draft(learning):
    learning.LEARNING_RATE_LIMIT_PER_MIN = 1
    allowed = ratelimit.check_feedback("alice", now=MINUTE + 20)
    refused = ratelimit.check_feedback("alice", now=MINUTE + 20)
    assert allowed.headers() == {"RateLimit-Policy": '"feedback";q=1;w=60', "RateLimit": '"feedback";r=0;t=40'}
    assert refused.headers()["Retry-After"] == "40"


def test_a_zero_limit_turns_the_limit_off(learning):
    learning.LEARNING_RATE_LIMIT_PER_MIN = 0
    result = ratelimit.check_feedback("alice")
    assert result.allowed and result.backend == "off" and result.headers() == {}
    assert not LearningRateLimit.objects.exists()


def test_a_database_error_fails_open_and_is_counted(learning, monkeypatch):
    def broken(*args, **kwargs):
        raise DatabaseError("database is locked")

    monkeypatch.setattr(ratelimit, "_hit_database", broken)
    result = ratelimit.check_feedback("alice")
    assert result.allowed and result.failed_open and result.headers() == {}
    assert "database is locked" in result.error
    assert ratelimit.fail_open_count("database") == 1


def test_an_unreachable_redis_fails_open_quickly_and_is_counted(learning):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    learning.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    started = time.monotonic()
    results = [ratelimit.check_feedback("alice") for _ in range(3)]
    assert time.monotonic() - started < 2
    assert all(r.allowed and r.backend == "fail_open" for r in results)
    assert ratelimit.fail_open_count("redis") == 3 and ratelimit.fail_open_count() == 3


def test_expired_counters_are_purged(learning):
    ratelimit.check_feedback("old", now=time.time() - 3600)
    ratelimit.check_feedback("new")
    assert ratelimit.purge_expired() == 1
    assert LearningRateLimit.objects.get().bucket_key.startswith("learning:feedback:new:")
