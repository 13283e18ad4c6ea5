"""From a sample's content to a training example: what the gate (or the guardian) saw and the answer it should
have given, in a neutral form (``Example``) that each format lays out its way. Evaluation reads the same cases
(``gate_case``, ``guardian_case``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from dataset_app.sample_types import SampleType

GATE_INSTRUCTION = (
    "Based on the following conversation, decide if this should be written to memory and which file it belongs to."
)
GATE_SYSTEM = (
    "You are the memory gate of an AI agent. " + GATE_INSTRUCTION + " Decisions: NO_WRITE, UPDATE_MEMORY "
    "(MEMORY.md: things to remember, ongoing work), UPDATE_USER (USER.md: stable facts and preferences of the "
    "user), UPDATE_SOUL (SOUL.md: the agent's manner), UPDATE_IDENTITY (IDENTITY.md: the agent's identity), "
    "UPDATE_TOOLS (TOOLS.md: tools and environment). Reply with one JSON object: "
    '{"decision": …, "reason": …, "candidate_fact": … or null}.'
)
GUARDIAN_INSTRUCTION = (
    "Decide whether the candidate fact should be written to the memory file, given the file's current content. "
    "Refuse duplicates, contradictions, low-value facts and secrets."
)
GUARDIAN_SYSTEM = (
    "You are the write guardian of an AI agent's memory files. "
    + GUARDIAN_INSTRUCTION
    + ' Reply with one JSON object: {"decision": "written" or "refused", "reason": …}.'
)


@dataclass(frozen=True)
class GateCase:
    """What the gate saw and what it should have answered."""

    window: list[tuple[str, str]]
    user_message: str
    agent_reply: str
    decision: str
    fact: str | None
    reason: str


@dataclass(frozen=True)
class GuardianCase:
    candidate_fact: str
    target_file: str
    current_content: str
    decision: str  # written | refused: the correct one
    reason: str


def _pairs(messages: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(str(m.get("role", "")), str(m.get("message", ""))) for m in messages or ()]


def gate_case(content: dict[str, Any]) -> GateCase | None:
    """The gate's input and correct output from a gate sample's content; None for a guardian sample."""
    kind = content.get("type")
    if kind in (SampleType.MEMORY_GATE_POSITIVE, SampleType.MEMORY_GATE_NEGATIVE):
        conversation = _pairs(content.get("conversation") or [])
        window, turn = conversation[:-2], conversation[-2:]
        user = next((m for r, m in turn if r == "user"), "")
        agent = next((m for r, m in turn if r == "agent"), "")
        reason = content.get("reason") if kind == SampleType.MEMORY_GATE_POSITIVE else content.get("rejectionReason")
        return GateCase(
            window, user, agent, content.get("correctDecision") or "", content.get("correctFact") or None, reason or ""
        )
    if kind == SampleType.ANNOTATED_TURN:
        gate = content.get("memoryGate") or {}
        given = gate.get("input") or {}
        output = gate.get("correctedOutput") or gate.get("output") or {}
        return GateCase(
            _pairs(content.get("context") or []),
            given.get("userMessage") or "",
            given.get("agentReply") or "",
            output.get("decision") or "",
            output.get("candidateFact") or None,
            output.get("reason") or "",
        )
    return None


def guardian_case(content: dict[str, Any]) -> GuardianCase | None:
    if content.get("type") != SampleType.WRITE_GUARDIAN_DECISION:
        return None
    correction = content.get("userCorrection") or None
    return GuardianCase(
        candidate_fact=content.get("candidateFact") or "",
        target_file=content.get("targetFile") or "",
        current_content=content.get("currentFileContent") or "",
        decision=(correction or {}).get("correctedDecision") or content.get("decision") or "",
        reason=(correction or {}).get("reason") or content.get("reason") or "",
    )


_SPEAKER = {"user": "User", "agent": "Agent"}


def render_conversation(window: Sequence[tuple[str, str]], user_message: str, agent_reply: str) -> str:
    """``User: …\\nAgent: …`` lines, oldest first, ending with the turn (the seed's alpaca ``input``)."""
    lines = [f"{_SPEAKER.get(role, role.title())}: {message}" for role, message in window]
    lines.append(f"User: {user_message}")
    if agent_reply:
        lines.append(f"Agent: {agent_reply}")
    return "\n".join(lines)


class Example(NamedTuple):
    """One training example in neutral form; each writer lays it out in its format."""

    stage: str
    system: str
    instruction: str
    input: str
    output_text: str  # the seed's "Decision: …\nFact: …\nReason: …"
    output_json: str  # the JSON object the model replies with
    decision: str
    fact: str | None


def _render(messages: Sequence[dict[str, Any]]) -> str:
    """``render_conversation`` straight from the stored messages (the export's hot path)."""
    lines = [f"{_SPEAKER.get(m.get('role'), 'Agent')}: {m.get('message') or ''}" for m in messages]
    if messages and messages[-1].get("role") == "agent" and not messages[-1].get("message"):
        lines.pop()  # The turn had no agent reply.
    return "\n".join(lines)


def _gate_example(decision: str, fact: str | None, reason: str, conversation: str) -> Example:
    output = (
        f"Decision: {decision}\nFact: {fact}\nReason: {reason}" if fact else f"Decision: {decision}\nReason: {reason}"
    )
    answer = orjson.dumps({"decision": decision, "reason": reason, "candidate_fact": fact}).decode()
    return Example("gate", GATE_SYSTEM, GATE_INSTRUCTION, conversation, output, answer, decision, fact)


def example_of(content: dict[str, Any]) -> Example | None:
    """The training example of a sample's content, or None if it has none (an unknown shape)."""
    kind = content.get("type")
    if kind == SampleType.MEMORY_GATE_POSITIVE:
        conversation = _render(content.get("conversation") or [])
        return _gate_example(
            content.get("correctDecision") or "",
            content.get("correctFact") or None,
            content.get("reason") or "",
            conversation,
        )
    if kind == SampleType.MEMORY_GATE_NEGATIVE:
        conversation = _render(content.get("conversation") or [])
        return _gate_example(
            content.get("correctDecision") or "",
            content.get("correctFact") or None,
            content.get("rejectionReason") or "",
            conversation,
        )
    if kind == SampleType.ANNOTATED_TURN:
        case = gate_case(content)
        if case is None:
            return None
        conversation = render_conversation(case.window, case.user_message, case.agent_reply)
        return _gate_example(case.decision, case.fact, case.reason, conversation)
    g = guardian_case(content)
    if g is not None:
        given = (
            f"Target file: {g.target_file}\nCandidate fact: {g.candidate_fact}\n"
            f"Current content of {g.target_file}:\n{g.current_content or '(empty file)'}"
        )
        return Example(
            "guardian",
            GUARDIAN_SYSTEM,
            GUARDIAN_INSTRUCTION,
            given,
            f"Decision: {g.decision}\nReason: {g.reason}",
            orjson.dumps({"decision": g.decision, "reason": g.reason}).decode(),
            g.decision,
            g.candidate_fact,
        )
    return None
