"""Fixtures of the write-guardian tests: decisions to write, written audits, and the workspace files."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from guardian_app.models import WriteGuardianAudit
from guardian_app.write.guardian import write_fact
from sessions_app.models import (
    FILE_FOR_DECISION,
    ConversationSession,
    ConversationTurn,
    GateStatus,
    MemoryGateDecision,
)

_turns = itertools.count(1)


@pytest.fixture(autouse=True)
def offline_guardian(settings: Any) -> None:
    """The offline guardian unless a test starts the fake LLM."""
    settings.LLM_BASE_URL = ""


@pytest.fixture
def make_decision(db: None) -> Callable[..., MemoryGateDecision]:
    """``make_decision("UPDATE_USER", "Prefers tea.", session_id="s1")``: a gate decision on a new turn."""

    def make(
        decision: str = "UPDATE_USER",
        fact: str | None = "Prefers tea in the afternoon.",
        *,
        session_id: str = "channel:test:alice",
        **kw: Any,
    ) -> MemoryGateDecision:
        session, _ = ConversationSession.objects.get_or_create(id=session_id, defaults={"channel_id": "test"})
        number = next(_turns)
        turn = ConversationTurn.objects.create(
            session=session,
            turn_number=number,
            user_message_content=f"turn {number}: {fact}",
            agent_message_content="Noted.",
            gate_status=GateStatus.DONE,
        )
        return MemoryGateDecision.objects.create(
            turn=turn,
            session=session,
            decision=decision,
            reason="test",
            candidate_fact=fact,
            llm_model="test",
            created_at=kw.pop("created_at", timezone.now()),
            **kw,
        )

    return make


@pytest.fixture
def write(make_decision: Callable[..., MemoryGateDecision]) -> Callable[..., WriteGuardianAudit]:
    """``write("Prefers tea.", file="USER.md")``: a decision written through the guardian; returns its audit."""
    decision_for = {file: decision for decision, file in FILE_FOR_DECISION.items()}

    def run(fact: str, *, file: str = "USER.md", session_id: str = "channel:test:alice") -> WriteGuardianAudit:
        return write_fact(make_decision(decision_for[file], fact, session_id=session_id))

    return run


@pytest.fixture
def user_md(workspace: Path) -> Path:
    return workspace / "USER.md"


@pytest.fixture
def written_audit(write: Callable[..., WriteGuardianAudit]) -> WriteGuardianAudit:
    audit = write("Prefers green tea in the afternoon.")
    assert audit.status == WriteGuardianAudit.Status.WRITTEN, audit.reason
    return audit


# --- Learning guardrails ---
LEARNING_TOKEN = "test-learning-token"


@pytest.fixture
def learning(settings: Any) -> Any:
    """Guardrails on and applied (shadow mode off), a feedback token set, the rate limit on the database."""
    from guardian_app.learning import failures, ratelimit

    settings.LEARNING_GUARDRAILS_ENABLED = True
    settings.LEARNING_SHADOW_MODE = False
    settings.LEARNING_FEEDBACK_TOKEN = LEARNING_TOKEN
    settings.LEARNING_RATE_LIMIT_PER_MIN = 20
    settings.REDIS_URL = ""
    ratelimit.reset_for_tests()
    failures.reset_error_counts()
    return settings


@pytest.fixture
def make_turn(db: None) -> Callable[..., ConversationTurn]:
    """``make_turn("I prefer …", fact="Prefers …")``: a stored turn, with a gate decision when ``fact`` is given."""

    def make(
        user: str = "How do I deploy the staging server?",
        agent: str = "Run `make deploy ENV=staging` from the repository root; it takes about 4 minutes.",
        *,
        fact: str | None = None,
        decision: str = "UPDATE_MEMORY",
        session_id: str = "channel:test:alice",
    ) -> ConversationTurn:
        session, _ = ConversationSession.objects.get_or_create(id=session_id, defaults={"channel_id": "test"})
        turn = ConversationTurn.objects.create(
            session=session,
            turn_number=next(_turns),
            user_message_content=user,
            agent_message_content=agent,
            gate_status=GateStatus.DONE,
        )
        if fact is not None or decision == "NO_WRITE":
            MemoryGateDecision.objects.create(
                turn=turn, session=session, decision=decision, reason="test", candidate_fact=fact, llm_model="test"
            )
        return turn

    return make


@pytest.fixture
def guardian_calls(sent_tasks: Any) -> list[tuple[Any, ...]]:
    """The facts handed to the write guardian (``run_guard_write``), instead of a broker."""
    return sent_tasks.to("guardian_app.tasks.run_guard_write")


# --- Recall index (issue 10) ---
@pytest.fixture
def write_md(workspace: Path) -> Callable[[str, str], Path]:
    """``write_md("memory/2026-02-03.md", text)``: a workspace file; its mtime moves forward on every write."""
    import os
    import time

    def write_file(rel: str, text: str) -> Path:
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        before = path.stat().st_mtime_ns if path.exists() else 0
        path.write_text(text, encoding="utf-8")
        stamp = max(time.time_ns(), before + 1_000_000_000)
        os.utime(path, ns=(stamp, stamp))
        return path

    return write_file


# --- Reflect (issue 11) ---
@pytest.fixture
def reflect_log(write_md: Callable[[str, str], Path]) -> Callable[..., Path]:
    """``reflect_log("- W @Peter: In Marrakech.", day=date)``: a daily log with those ``## Retain`` bullets."""
    import datetime as dt

    def write(*bullets: str, day: dt.date | None = None, prose: str = "") -> Path:
        day = day or timezone.localdate()
        body = f"# {day.isoformat()}\n\n{prose}\n\n## Retain\n" + "".join(f"{b}\n" for b in bullets)
        return write_md(f"memory/{day.isoformat()}.md", body)

    return write
