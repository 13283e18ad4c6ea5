"""``GET /healthz``: the state of the database, the broker, the cache, the worker and the gate's backlog.

``status`` is ``ok`` when every part is, ``down`` (HTTP 503) when the database is down, and ``degraded`` (still
HTTP 200, so that a load balancer keeps sending the API its turns, which are stored and wait) otherwise: in
particular when no worker recorded a heartbeat for ``WORKER_STALE_S`` seconds or a turn has waited for its gate
longer than ``PENDING_TURN_STALE_S``. The admin index shows the same two in a red banner (``runtime_problems``).

The turns' backlog is sessions_app's: it registers that probe (``register_probe``) when it is ready, so that this
bottom layer imports no app above it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

logger = logging.getLogger(__name__)


def check_database() -> dict[str, object]:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # Any failure here means "down"; the reason goes to the log, not the wire.
        logger.warning("healthz: database down: %s", exc)
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True, "vendor": connection.vendor, "latency_ms": round((time.perf_counter() - started) * 1000, 2)}


def check_broker() -> dict[str, object]:
    from reflection_site.celery import app

    transport = "redis" if settings.REDIS_URL else "filesystem"
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=1)
    except Exception as exc:
        logger.warning("healthz: broker down: %s", exc)
        return {"ok": False, "transport": transport, "error": type(exc).__name__}
    return {"ok": True, "transport": transport}


def check_cache() -> dict[str, object]:
    try:
        cache.set("healthz", "1", 10)
        ok = cache.get("healthz") == "1"
    except Exception as exc:
        logger.warning("healthz: cache down: %s", exc)
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": ok, "backend": settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]}


def check_worker() -> dict[str, object]:
    """Whether a worker recorded its heartbeat (reflection_site.celery.Heartbeat) in the last ``WORKER_STALE_S``."""
    from reflection_site.celery import HEARTBEAT_KEY

    if settings.CELERY_TASK_ALWAYS_EAGER:  # Tasks run in the caller's process: there is no worker to wait for.
        return {"ok": True, "last_seen_s": None, "eager": True}
    try:
        beat = cache.get(HEARTBEAT_KEY)
    except Exception as exc:
        logger.warning("healthz: cache down, worker heartbeat unknown: %s", exc)
        return {"ok": False, "last_seen_s": None, "error": type(exc).__name__}
    if not isinstance(beat, dict) or "at" not in beat:
        return {"ok": False, "last_seen_s": None, "stale_after_s": settings.WORKER_STALE_S}
    age = max(0.0, time.time() - float(beat["at"]))
    return {
        "ok": age <= settings.WORKER_STALE_S,
        "last_seen_s": round(age, 1),
        "stale_after_s": settings.WORKER_STALE_S,
    }


@dataclass(frozen=True)
class Probe:
    """A part an app adds to ``/healthz`` (``check``, asked while the database is up) and to the admin's banner
    (``problem``: what a failed check means in words, or None)."""

    check: Callable[[], dict[str, object]]
    problem: Callable[[dict[str, object]], str | None]


# name -> probe, registered by the apps above this one in their AppConfig.ready() (sessions_app: pending_turns).
_PROBES: dict[str, Probe] = {}


def register_probe(
    name: str, check: Callable[[], dict[str, object]], problem: Callable[[dict[str, object]], str | None]
) -> None:
    """Add ``check`` to ``/healthz`` under ``name`` (its ``ok`` counts towards ``status``) and ``problem`` to
    the admin's banner. Registering a name again replaces it."""
    _PROBES[name] = Probe(check=check, problem=problem)


def runtime_problems() -> list[str]:
    """What keeps turns from being decided, in words for the admin's banner (empty when nothing does)."""
    problems = []
    worker = check_worker()
    if not worker["ok"]:
        if worker.get("last_seen_s") is None:
            problems.append("No background worker has been seen: turns are stored but not decided.")
        else:
            problems.append(
                f"No background worker seen for {worker['last_seen_s']:.0f} s: turns are stored but not decided."
            )
    for probe in _PROBES.values():
        problem = probe.problem(probe.check())
        if problem:
            problems.append(problem)
    return problems


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    database = check_database()
    body = {"database": database, "broker": check_broker(), "cache": check_cache()}
    body["worker"] = check_worker()
    if database["ok"]:
        body.update({name: probe.check() for name, probe in _PROBES.items()})
    body["status"] = "ok" if all(part["ok"] for part in body.values()) else ("degraded" if database["ok"] else "down")
    return JsonResponse(body, status=HTTPStatus.OK if database["ok"] else HTTPStatus.SERVICE_UNAVAILABLE)
