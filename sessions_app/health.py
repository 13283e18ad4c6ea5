"""The gate's backlog as a part of ``/healthz`` and of the admin's banner (registered in ``SessionsAppConfig.ready``
with ``reflection_site.health.register_probe``)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.utils import timezone

from sessions_app.models import ConversationTurn, GateStatus

logger = logging.getLogger(__name__)


def check_pending_turns() -> dict[str, object]:
    """The age of the oldest turn still waiting for its gate; not ok beyond ``PENDING_TURN_STALE_S``."""
    try:
        oldest = (
            ConversationTurn.objects.filter(gate_status=GateStatus.PENDING)
            .order_by("created_at")
            .values_list("created_at", flat=True)
            .first()
        )
    except Exception as exc:
        logger.warning("healthz: pending turns unknown: %s", exc)
        return {"ok": False, "oldest_pending_s": None, "error": type(exc).__name__}
    age = max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0
    return {
        "ok": age <= settings.PENDING_TURN_STALE_S,
        "oldest_pending_s": round(age, 1),
        "stale_after_s": settings.PENDING_TURN_STALE_S,
    }


def pending_turns_problem(pending: dict[str, object]) -> str | None:
    """The banner's line while a turn waits too long (None when none does, or the age is unknown)."""
    if pending["ok"] or pending.get("oldest_pending_s") is None:
        return None
    return f"A turn has waited {pending['oldest_pending_s']:.0f} s for the memory gate."
