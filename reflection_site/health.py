"""``GET /healthz``: the state of the database, the broker and the cache; 503 when the database is down."""

from __future__ import annotations

import logging
import time
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


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    database = check_database()
    body = {"database": database, "broker": check_broker(), "cache": check_cache()}
    body["status"] = "ok" if all(part["ok"] for part in body.values()) else ("degraded" if database["ok"] else "down")
    return JsonResponse(body, status=HTTPStatus.OK if database["ok"] else HTTPStatus.SERVICE_UNAVAILABLE)
