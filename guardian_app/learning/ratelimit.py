"""The feedback door's rate limits: one atomic step per request, failing open.

Three limits share one design, each counted in the seed's minute buckets (seed 002 §4.3):

- ``feedback``: per user, ``LEARNING_RATE_LIMIT_PER_MIN``, key ``learning:feedback:{user_id}:{minute_bucket}``.
  The ``user_id`` is the client's word, so on its own it limits nothing a client wants to get around;
- ``feedback-client``: per client address, ``LEARNING_RATE_LIMIT_PER_CLIENT_PER_MIN``, beside it;
- ``learning-token``: wrong learning tokens per client address, ``LEARNING_TOKEN_FAILURES_PER_MIN``; an address
  over it is refused whatever token it sends until the minute ends, so guessing gains nothing.

The address is ``REMOTE_ADDR``, or with ``TRUSTED_PROXY_COUNT`` proxies in front the address the outermost of
them saw (``client_address``); django-axes uses the same for the admin's login. With
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
import ipaddress
import logging
import math
import threading
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import redis
from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.template.response import TemplateResponse
from django.utils import timezone

from guardian_app.models import LearningRateLimit

logger = logging.getLogger(__name__)

WINDOW_S = 60
POLICY_NAME = "feedback"
CLIENT_POLICY = "feedback-client"
TOKEN_POLICY = "learning-token"
_KEY_PREFIX = {
    POLICY_NAME: "learning:feedback",
    CLIENT_POLICY: "learning:feedback-client",
    TOKEN_POLICY: "learning:token",
}

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

_failures: Counter[tuple[str, str]] = Counter()  # (policy, backend) -> checks failed open
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
    policy: str = POLICY_NAME

    @property
    def failed_open(self) -> bool:
        return self.backend == "fail_open"

    def headers(self) -> dict[str, str]:
        """``RateLimit-Policy`` and ``RateLimit`` (IETF httpapi draft), plus ``Retry-After`` when refused."""
        if self.backend in {"fail_open", "off"}:
            return {}
        headers = {
            "RateLimit-Policy": f'"{self.policy}";q={self.limit};w={self.window_s}',
            "RateLimit": f'"{self.policy}";r={self.remaining};t={self.reset_s}',
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.reset_s)
        return headers


def fail_open_count(backend: str | None = None, *, policy: str | None = None) -> int:
    """How many checks failed open in this process: all backends or one, all policies or one."""
    with _lock:
        return sum(
            count
            for (failed_policy, failed_backend), count in _failures.items()
            if backend in (None, failed_backend) and policy in (None, failed_policy)
        )


def bucket_key(user_id: str, minute_bucket: int, *, policy: str = POLICY_NAME) -> str:
    # Very long ids are hashed so that a key always fits the table's column.
    who = user_id if len(user_id) <= 200 else "sha256:" + hashlib.sha256(user_id.encode()).hexdigest()
    return f"{_KEY_PREFIX[policy]}:{who}:{minute_bucket}"


def client_address(request: Any) -> str | None:
    """The client's address: ``REMOTE_ADDR``, or behind ``TRUSTED_PROXY_COUNT`` proxies the address that the
    outermost trusted proxy saw (the entry that many from the right of ``X-Forwarded-For``; entries further left
    are the client's own word). None when there is no valid address. Also django-axes' ``AXES_CLIENT_IP_CALLABLE``.
    """
    remote = _valid_ip(request.META.get("REMOTE_ADDR"))
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies <= 0:
        return remote
    hops = [hop.strip() for hop in str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",") if hop.strip()]
    if len(hops) < proxies:  # Not what the proxies wrote: the request did not come through them.
        return remote
    return _valid_ip(hops[-proxies]) or remote


def _valid_ip(value: object) -> str | None:
    try:
        return str(ipaddress.ip_address(str(value).strip())) if value else None
    except ValueError:
        return None


def check_feedback(user_id: str, *, now: float | None = None) -> RateLimitResult:
    """Count one feedback request of ``user_id`` against ``LEARNING_RATE_LIMIT_PER_MIN``."""
    return hit(POLICY_NAME, user_id, limit=settings.LEARNING_RATE_LIMIT_PER_MIN, now=now)


def check_feedback_client(address: str, *, now: float | None = None) -> RateLimitResult:
    """Count one feedback request from ``address`` against ``LEARNING_RATE_LIMIT_PER_CLIENT_PER_MIN``."""
    return hit(CLIENT_POLICY, address, limit=settings.LEARNING_RATE_LIMIT_PER_CLIENT_PER_MIN, now=now)


def token_locked_out(address: str, *, now: float | None = None) -> RateLimitResult | None:
    """The refusal for ``address`` if it sent ``LEARNING_TOKEN_FAILURES_PER_MIN`` wrong tokens this minute, else
    None. Only reads the counter: a right token must not count."""
    limit = settings.LEARNING_TOKEN_FAILURES_PER_MIN
    if limit <= 0:
        return None
    now = time.time() if now is None else now
    bucket, reset_s = _window(now)
    key = bucket_key(address, bucket, policy=TOKEN_POLICY)
    backend = "redis" if settings.REDIS_URL else "database"
    try:
        count = _peek_redis(key) if backend == "redis" else _peek_database(key)
    except Exception as exc:
        _failed_open(backend, exc, limit=limit, reset_s=reset_s, policy=TOKEN_POLICY)
        return None
    if count < limit:
        return None
    return RateLimitResult(
        allowed=False, limit=limit, remaining=0, reset_s=reset_s, backend=backend, policy=TOKEN_POLICY
    )


def count_token_failure(address: str, *, now: float | None = None) -> RateLimitResult:
    """Count one wrong learning token from ``address``; ``allowed`` is False once it is over the limit."""
    return hit(TOKEN_POLICY, address, limit=settings.LEARNING_TOKEN_FAILURES_PER_MIN, now=now)


def _window(now: float) -> tuple[int, int]:
    bucket = int(now // WINDOW_S)
    return bucket, max(1, math.ceil((bucket + 1) * WINDOW_S - now))


def hit(policy: str, who: str, *, limit: int, now: float | None = None) -> RateLimitResult:
    """Count one request of ``who`` under ``policy`` against ``limit`` a minute (0 or less: no limit)."""
    now = time.time() if now is None else now
    if limit <= 0:
        return RateLimitResult(allowed=True, limit=0, remaining=0, reset_s=0, backend="off", policy=policy)
    bucket, reset_s = _window(now)
    key = bucket_key(who, bucket, policy=policy)
    backend = "redis" if settings.REDIS_URL else "database"
    try:
        count = _hit_redis(key) if backend == "redis" else _hit_database(key, expires_at=(bucket + 2) * WINDOW_S)
    except Exception as exc:  # Any failure of the limiter fails open.
        return _failed_open(backend, exc, limit=limit, reset_s=reset_s, policy=policy)
    return RateLimitResult(
        allowed=count <= limit,
        limit=limit,
        remaining=max(0, limit - count),
        reset_s=reset_s,
        backend=backend,
        policy=policy,
    )


def _failed_open(
    backend: str, exc: Exception, *, limit: int, reset_s: int, policy: str = POLICY_NAME
) -> RateLimitResult:
    with _lock:
        _failures[policy, backend] += 1
        total = sum(count for (_, failed_backend), count in _failures.items() if failed_backend == backend)
        last = _last_warning.get(backend, 0.0)
        loud = time.monotonic() - last > 60
        if loud:
            _last_warning[backend] = time.monotonic()
    # One warning a minute per backend, however many requests fail meanwhile.
    if loud:
        logger.warning("%s rate limit failed open (%s, %d so far in this process): %r", policy, backend, total, exc)
    return RateLimitResult(
        allowed=True,
        limit=limit,
        remaining=limit,
        reset_s=reset_s,
        backend="fail_open",
        error=f"{backend}: {exc!r}",
        policy=policy,
    )


# --- Redis ---------------------------------------------------------------------------------------
def _redis_script(url: str) -> Any:
    with _lock:
        script = _clients.get(url)
        if script is None:
            # Short timeouts: a dead or unreachable Redis costs a request at most a fraction of a second.
            client = redis.Redis.from_url(url, socket_connect_timeout=0.25, socket_timeout=0.5)
            script = client.register_script(LUA_HIT)
            _clients[url] = script
    return script


def _hit_redis(key: str) -> int:
    script = _redis_script(settings.REDIS_URL)
    count, _ttl = script(keys=[key], args=[WINDOW_S * 2])
    return int(count)


def _peek_redis(key: str) -> int:
    value = _redis_script(settings.REDIS_URL).registered_client.get(key)
    return int(value) if value is not None else 0


# --- Database ------------------------------------------------------------------------------------
def _hit_database(key: str, *, expires_at: float) -> int:
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


def _peek_database(key: str) -> int:
    count = LearningRateLimit.objects.filter(bucket_key=key).values_list("count", flat=True).first()
    return int(count or 0)


def purge_expired() -> int:
    """Delete the counters of windows that have ended; the decay job calls it too."""
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


# --- The admin's login (django-axes) ---------------------------------------------------------------
def admin_lockout_response(request: Any, original_response: Any = None, credentials: Any = None) -> Any:
    """django-axes' ``AXES_LOCKOUT_CALLABLE``: a 429 page that says what to do, with ``Retry-After``."""
    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds()) if cool_off else 0
    context = {
        "failure_limit": get_failure_limit(request, credentials),
        "username": get_client_username(request, credentials) or "",
        "cooloff_minutes": math.ceil(seconds / 60) if seconds else None,
        "title": "Sign-in paused",
    }
    response = TemplateResponse(request, "admin/lockout.html", context, status=429)
    response.render()
    if seconds:
        response["Retry-After"] = str(seconds)
    return response
