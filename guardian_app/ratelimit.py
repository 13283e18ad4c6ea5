"""The per-user feedback rate limit (seed 002 §4.3): one atomic step per request, failing open.

The window is the seed's minute bucket, key ``learning:feedback:{user_id}:{minute_bucket}``. With
``REDIS_URL`` set the counter is a Redis key bumped by a Lua script (INCR, EXPIRE and TTL in one
atomic call); without it, a row of ``learning_rate_limits`` bumped by one ``INSERT … ON CONFLICT DO
UPDATE … RETURNING`` statement (SQLite ≥ 3.35 and PostgreSQL). Either way two concurrent requests
can never both read the same count.

A limiter must not turn its own outage into an outage of the endpoint (django-ratelimit fails closed
and answers a Redis outage with a 500): when Redis or the database errors, the request is allowed,
the failure is logged and counted (``fail_open_count()``), and the caller records it as a learning
event. The counter is per process; the events are the durable count.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import math
import threading
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

logger = logging.getLogger(__name__)

WINDOW_S = 60
POLICY_NAME = "feedback"

# One round trip, atomic on the server: count this request, make sure the key expires, report the TTL.
LUA_HIT = """
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('TTL', KEYS[1])
if ttl < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
"""

_failures: Counter[str] = Counter()
_lock = threading.Lock()
_clients: dict[str, Any] = {}
_last_warning: dict[str, float] = {}
_calls = 0
PURGE_EVERY = 256


@dataclass(frozen=True)
class RateLimitResult:
    allowed: bool
    limit: int
    remaining: int
    reset_s: int  # seconds until the current window ends
    window_s: int = WINDOW_S
    backend: str = "database"  # redis | database | fail_open | off
    error: str | None = None  # what failed, when the limiter failed open

    @property
    def failed_open(self) -> bool:
        return self.backend == "fail_open"

    def headers(self) -> dict[str, str]:
        """``RateLimit-Policy`` and ``RateLimit`` (IETF httpapi draft), plus ``Retry-After`` when refused."""
        if self.backend in {"fail_open", "off"}:
            return {}
        headers = {
            "RateLimit-Policy": f'"{POLICY_NAME}";q={self.limit};w={self.window_s}',
            "RateLimit": f'"{POLICY_NAME}";r={self.remaining};t={self.reset_s}',
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.reset_s)
        return headers


def fail_open_count(backend: str | None = None) -> int:
    """How many checks failed open in this process (all backends, or one)."""
    with _lock:
        return _failures[backend] if backend else sum(_failures.values())


def bucket_key(user_id: str, minute_bucket: int) -> str:
    # Very long ids are hashed so that a key always fits the table's column.
    who = user_id if len(user_id) <= 200 else "sha256:" + hashlib.sha256(user_id.encode()).hexdigest()
    return f"learning:feedback:{who}:{minute_bucket}"


def check_feedback(user_id: str, *, now: float | None = None) -> RateLimitResult:
    """Count one feedback request of ``user_id`` against ``LEARNING_RATE_LIMIT_PER_MIN``."""
    limit = settings.LEARNING_RATE_LIMIT_PER_MIN
    now = time.time() if now is None else now
    if limit <= 0:
        return RateLimitResult(allowed=True, limit=0, remaining=0, reset_s=0, backend="off")
    bucket = int(now // WINDOW_S)
    reset_s = max(1, math.ceil((bucket + 1) * WINDOW_S - now))
    key = bucket_key(user_id, bucket)
    backend = "redis" if settings.REDIS_URL else "database"
    try:
        count = _hit_redis(key) if backend == "redis" else _hit_database(key, expires_at=(bucket + 2) * WINDOW_S)
    except Exception as exc:  # Any failure of the limiter fails open.
        return _failed_open(backend, exc, limit=limit, reset_s=reset_s)
    return RateLimitResult(
        allowed=count <= limit, limit=limit, remaining=max(0, limit - count), reset_s=reset_s, backend=backend
    )


def _failed_open(backend: str, exc: Exception, *, limit: int, reset_s: int) -> RateLimitResult:
    with _lock:
        _failures[backend] += 1
        total = _failures[backend]
        last = _last_warning.get(backend, 0.0)
        loud = time.monotonic() - last > 60
        if loud:
            _last_warning[backend] = time.monotonic()
    # One warning a minute per backend, however many requests fail meanwhile.
    if loud:
        logger.warning("feedback rate limit failed open (%s, %d so far in this process): %r", backend, total, exc)
    return RateLimitResult(
        allowed=True, limit=limit, remaining=limit, reset_s=reset_s, backend="fail_open", error=f"{backend}: {exc!r}"
    )


# --- Redis ---------------------------------------------------------------------------------------
def _redis_script(url: str) -> Any:
    with _lock:
        script = _clients.get(url)
        if script is None:
            import redis

            # Short timeouts: a dead or unreachable Redis costs a request at most a fraction of a second.
            client = redis.Redis.from_url(url, socket_connect_timeout=0.25, socket_timeout=0.5)
            script = client.register_script(LUA_HIT)
            _clients[url] = script
    return script


def _hit_redis(key: str) -> int:
    script = _redis_script(settings.REDIS_URL)
    count, _ttl = script(keys=[key], args=[WINDOW_S * 2])
    return int(count)


# --- Database ------------------------------------------------------------------------------------
def _hit_database(key: str, *, expires_at: float) -> int:
    from guardian_app.models import LearningRateLimit

    global _calls
    table = connection.ops.quote_name(LearningRateLimit._meta.db_table)
    expires = connection.ops.adapt_datetimefield_value(dt.datetime.fromtimestamp(expires_at, tz=dt.UTC))
    sql = (
        f"INSERT INTO {table} (bucket_key, count, expires_at) VALUES (%s, 1, %s) "
        f"ON CONFLICT (bucket_key) DO UPDATE SET count = {table}.count + 1 RETURNING count"
    )
    # Inside a caller's transaction a savepoint keeps a failure from poisoning it (PostgreSQL).
    with transaction.atomic() if connection.in_atomic_block else nullcontext():
        with connection.cursor() as cursor:
            cursor.execute(sql, [key, expires])
            count = int(cursor.fetchone()[0])
    _calls += 1
    if _calls % PURGE_EVERY == 0:
        purge_expired()
    return count


def purge_expired() -> int:
    """Delete the counters of windows that have ended; the decay job calls it too."""
    from guardian_app.models import LearningRateLimit

    try:
        deleted, _ = LearningRateLimit.objects.filter(expires_at__lt=timezone.now()).delete()
    except DatabaseError as exc:
        logger.warning("could not purge rate-limit counters: %s", exc)
        return 0
    return deleted


def reset_for_tests() -> None:
    """Forget cached Redis clients and counters (a test points REDIS_URL somewhere else)."""
    global _calls
    with _lock:
        _clients.clear()
        _failures.clear()
        _last_warning.clear()
        _calls = 0
