"""Fixtures of the conversation and gate tests: stored turns, decisions, and recorded hand-offs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sessions_app.ingest import ingest_turn
from sessions_app.models import ConversationTurn
from sessions_app.schemas import TurnIn
from tests.conftest import turn_payload


@pytest.fixture
def make_turn(db: None) -> Callable[..., ConversationTurn]:
    """Store a turn through the ingest path (the gate is not run): ``make_turn(user="…", context=[…])``."""

    def make(**kwargs: Any) -> ConversationTurn:
        turn, _ = ingest_turn(TurnIn(**turn_payload(**kwargs)))
        return turn

    return make


@pytest.fixture
def guardian_calls(sent_tasks: Any) -> list[str]:
    """The decision ids the gate hands to the write guardian (recorded, not sent to a broker)."""
    return sent_tasks.to("guardian_app.tasks.run_guardian", single=True)


@pytest.fixture
def enqueued(sent_tasks: Any) -> list[str]:
    """The turn ids handed to the gate task (by the sweep, a re-run or ingest), not sent to a broker."""
    return sent_tasks.to("sessions_app.tasks.run_gate", single=True)


@pytest.fixture
def make_decision(make_turn: Callable[..., ConversationTurn]) -> Callable[..., Any]:
    """A recorded gate decision on a new turn: ``make_decision("UPDATE_USER", session_id=…, created_at=…)``."""
    from django.utils import timezone

    from sessions_app.models import GateStatus, MemoryGateDecision

    def make(
        decision: str = "UPDATE_USER",
        *,
        session_id: str = "channel:test:alice",
        created_at: Any = None,
        latency: int | None = 100,
        model: str = "fake-model-1",
        fact: str | None = "Prefers summaries on Fridays.",
        reason: str = "A stable preference.",
        user: str = "I prefer summaries on Fridays.",
        **turn_kwargs: Any,
    ) -> MemoryGateDecision:
        turn = make_turn(session_id=session_id, user=user, **turn_kwargs)
        ConversationTurn.objects.filter(id=turn.id).update(gate_status=GateStatus.DONE)
        return MemoryGateDecision.objects.create(
            turn=turn,
            session_id=session_id,
            decision=decision,
            reason=reason,
            candidate_fact=None if decision == "NO_WRITE" else fact,
            llm_model=model,
            llm_latency_ms=latency,
            prompt_tokens=50,
            completion_tokens=10,
            raw_response=json.dumps({"decision": decision}),
            prompt_version="gate-v1",
            created_at=created_at or timezone.now(),
        )

    return make
