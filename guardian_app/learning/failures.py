"""Errors the learning guardrails failed open on: logged, counted in the process, and recorded as a
``guardrail_error`` event when the database lets us."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from typing import Any

from django.db import transaction

from guardian_app.learning import DEFAULT_PROJECT
from guardian_app.models import LearningEvent, LearningEventType, LearningSource

logger = logging.getLogger(__name__)

_errors: Counter[str] = Counter()
_errors_lock = threading.Lock()
_last_recorded: dict[str, float] = {}


def guardrail_error_count(component: str | None = None) -> int:
    """Errors the guardrails failed open on, in this process (``guardrail_error`` events are the durable count)."""
    with _errors_lock:
        return _errors[component] if component else sum(_errors.values())


def record_failure(component: str, exc: BaseException | str, *, throttle_s: float = 0, **context: Any) -> None:
    """Count and log a failure, and record a ``guardrail_error`` event (at most one per ``throttle_s``)."""
    with _errors_lock:
        _errors[component] += 1
        count = _errors[component]
        now = time.monotonic()
        due = now - _last_recorded.get(component, -math.inf) >= throttle_s
        if due:
            _last_recorded[component] = now
    if isinstance(exc, BaseException):
        logger.warning("learning guardrails failed open in %s (%d so far): %r", component, count, exc)
    if not due:
        return
    try:
        with transaction.atomic():
            LearningEvent.objects.create(
                event_type=LearningEventType.GUARDRAIL_ERROR,
                reason=component[:64],
                project_id=context.pop("project_id", DEFAULT_PROJECT),
                source=context.pop("source", LearningSource.API_FEEDBACK),
                trace_id=context.pop("trace_id", None),
                user_id=context.pop("user_id", "")[:255],
                payload_json={"error": repr(exc)[:2000], "count_in_process": count, **context},
            )
    except Exception:  # The database may be what failed; the log line and the counter remain.
        logger.warning("could not record the guardrail error of %s", component, exc_info=True)


def reset_error_counts() -> None:
    with _errors_lock:
        _errors.clear()
        _last_recorded.clear()
