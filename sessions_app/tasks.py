"""Celery tasks of the conversation app; each takes ids and calls one domain function."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from reflection_site import llm
from reflection_site.rows import RowReader
from sessions_app.gate import decide_turn, describe_error, mark_gate_failed, sweep_pending_turns
from sessions_app.models import ConversationTurn
from sessions_app.stats import roll_up_gate_stats

logger = logging.getLogger(__name__)


def _gate_failed(self: Any, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
    # Retries spent (or an error no retry would cure): the turn stays visible as failed, not lost.
    turn_id = args[0] if args else kwargs.get("turn_id")
    try:
        mark_gate_failed(turn_id, error=describe_error(exc))
    except Exception:  # A failure handler must not raise; the sweep still sees the turn pending.
        logger.exception("could not record the gate failure of turn %s", turn_id)


@shared_task(
    autoretry_for=llm.TRANSIENT_ERRORS,
    retry_backoff=settings.GATE_TASK_RETRY_BACKOFF_S,
    retry_backoff_max=600,
    max_retries=settings.GATE_TASK_MAX_RETRIES,
    on_failure=_gate_failed,
)
def run_gate(turn_id: str) -> str | None:
    """Ask the memory gate about one turn; a redelivered message finds it already decided."""
    turn = RowReader.of(ConversationTurn, "WHERE {id} = %s").first([turn_id])  # One a turn: not compiled each time.
    if turn is None:
        logger.warning("gate: turn %s no longer exists", turn_id)
        return None
    decision = decide_turn(turn)
    return decision.id if decision is not None else None


@shared_task
def run_gate_sweep() -> int:
    """Re-enqueue turns whose gate is still pending after the grace period."""
    return sweep_pending_turns()


@shared_task
def run_gate_stats_rollup() -> int:
    """Roll decisions up into one MemoryGateStats row per day."""
    return roll_up_gate_stats()
