"""The content of the four sample types, drafted from a decision, an audit or a turn before insert.

A gate sample's conversation is the context window the gate saw (``sessions_app.gate.context_window``: the
context the agent sent with the turn, or, when it sent none, the session's previous turns), then the turn.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from dataset_app.collect.judge import (
    MISSED_WRITE,
    WRITTEN,
    GateTruth,
    _latest_correction,
    judge_audit,
    judge_decision,
)
from dataset_app.models import DatasetSample, SampleType
from dataset_app.scoring import Evidence, ScoringInput, content_tokens
from guardian_app.models import WriteGuardianAudit
from reflection_site.text import fingerprint
from sessions_app.gate import context_window
from sessions_app.models import FILE_FOR_DECISION, ConversationTurn, Decision, MemoryGateDecision

Messages = list[dict[str, str]]


def window_of(turn: ConversationTurn | None) -> Messages:
    """The context window the gate saw for ``turn``, oldest first, as ``{"role", "message"}`` items."""
    if turn is None:
        return []
    return [{"role": role, "message": message} for role, message in context_window(turn)]


def _conversation(turn: ConversationTurn, window: Messages) -> Messages:
    """The context window, then the turn itself as its last two messages (user, agent)."""
    return [
        *window,
        {"role": "user", "message": turn.user_message_content},
        {"role": "agent", "message": turn.agent_message_content},
    ]


def feedback_of(turn: ConversationTurn | None) -> tuple[list[dict[str, Any]], bool, str | None]:
    """(events, has an objection, last) from ``turn.feedback_json`` (interfaces.md's format)."""
    data = (turn.feedback_json if turn is not None else None) or {}
    events = [e for e in data.get("events") or [] if isinstance(e, dict)] if isinstance(data, dict) else []
    objection = any(e.get("feedback") == "down" for e in events)
    last = data.get("last") if isinstance(data, dict) else None
    if last not in ("up", "down"):
        last = events[-1].get("feedback") if events else None
    return events, objection, last if last in ("up", "down") else None


def _feedback_signal(objection: bool, last: str | None) -> str | None:
    return "down" if objection else last


def _snapshot_text(audit: WriteGuardianAudit | None) -> str:
    if audit is None or audit.before_snapshot is None:
        return ""
    return audit.before_snapshot.content


def _gate_output(decision: MemoryGateDecision) -> dict[str, Any]:
    return {"decision": decision.decision, "reason": decision.reason, "candidateFact": decision.candidate_fact}


def _fingerprint(sample_type: str, label: str, text: str | None, extra: str = "") -> str:
    """Same type, label and content words (in any order): the same pattern. ``reflection_site.text``'s fingerprint
    of the sorted words, salted with the rest, is the SHA-256 of ``type|label|extra|words`` it always was."""
    words = " ".join(sorted(content_tokens(text or "")))
    return fingerprint(words, salt=f"{sample_type}|{label}|{extra}|")[:40]


@dataclass
class Draft:
    """A sample before insert, with what the status rules need to know about it."""

    sample: DatasetSample
    signals: ScoringInput
    gate_confidence: float | None
    has_feedback: bool
    confirmed_correction: bool


def _draft(
    *,
    sample_type: str,
    source_id: str,
    session_id: str,
    content: dict[str, Any],
    label: str,
    signals: ScoringInput,
    strategy: str,
    fingerprint_text: str | None,
    turn_id: str | None = None,
    decision: MemoryGateDecision | None = None,
    audit_id: str | None = None,
    has_feedback: bool = False,
    confirmed_correction: bool = False,
    fingerprint_extra: str = "",
    now: dt.datetime,
) -> Draft:
    sample = DatasetSample(
        sample_type=sample_type,
        source_key=f"{sample_type}:{source_id}",
        session_id=session_id,
        turn_id=turn_id,
        decision_id=decision.id if decision is not None else None,
        audit_id=audit_id,
        content=content,
        label=label,
        collection_strategy=strategy,
        fingerprint=_fingerprint(sample_type, label, fingerprint_text, fingerprint_extra),
        created_at=now,
    )
    return Draft(
        sample=sample,
        signals=signals,
        gate_confidence=decision.confidence if decision is not None else None,
        has_feedback=has_feedback,
        confirmed_correction=confirmed_correction,
    )


def _gate_signals(
    turn: ConversationTurn, window: Messages, truth: GateTruth, decision: MemoryGateDecision, feedback: str | None
) -> ScoringInput:
    return ScoringInput(
        user_message=turn.user_message_content,
        agent_reply=turn.agent_message_content,
        context=[item["message"] for item in window],
        fact=truth.fact if truth.decision != Decision.NO_WRITE else None,
        reason=truth.reason,
        reason_by_person=truth.reason_by_person,
        evidence=truth.evidence,
        agrees_with_gate=truth.decision == decision.decision,
        gate_confidence=decision.confidence,
        feedback=feedback,
    )


def _positive_content(
    decision: MemoryGateDecision, truth: GateTruth, conversation: Messages, *, last: str | None
) -> dict[str, Any]:
    by_person = truth.evidence == Evidence.CORRECTION
    fact_changed = by_person and (truth.fact or "") != (decision.candidate_fact or "")
    if fact_changed:
        user_feedback = "corrected"
    elif by_person or last == "up":
        user_feedback = "confirmed"
    else:
        user_feedback = None
    return {
        "type": SampleType.MEMORY_GATE_POSITIVE.value,
        "conversation": conversation,
        "correctDecision": truth.decision,
        "correctFact": truth.fact or "",
        "reason": decision.reason if not fact_changed else truth.reason,
        "targetFile": FILE_FOR_DECISION.get(truth.decision),
        "evidence": {"wasWritten": truth.evidence == Evidence.STOOD, "userFeedback": user_feedback},
    }


def _negative_content(decision: MemoryGateDecision, truth: GateTruth, conversation: Messages) -> dict[str, Any]:
    return {
        "type": SampleType.MEMORY_GATE_NEGATIVE.value,
        "conversation": conversation,
        "incorrectDecision": decision.decision,
        "incorrectFact": decision.candidate_fact or "",
        "correctDecision": truth.decision,
        "correctFact": truth.fact if truth.decision != Decision.NO_WRITE else None,
        "rejectionReason": truth.reason,
        "evidence": {
            "guardianRefused": truth.strategy == "guardian_refused",
            "rolledBack": truth.strategy == "rollback",
            "correctionId": truth.correction.id if truth.correction is not None else None,
        },
    }


def _why_not_positive(truth: GateTruth, types: Sequence[str], *, objection: bool) -> str:
    """Why a decision the gate got right is no positive sample, or "" if it is one."""
    if SampleType.MEMORY_GATE_POSITIVE not in types:
        return "type_not_requested"
    if truth.evidence not in (Evidence.STOOD, Evidence.CORRECTION):
        return "not_settled"
    by_person = truth.evidence == Evidence.CORRECTION
    if settings.DATASET_POSITIVE_NO_USER_OBJECTION and objection and not by_person:
        return "user_objection"
    return ""


def _why_not_negative(truth: GateTruth, types: Sequence[str]) -> str:
    """Why a decision the gate got wrong is no negative sample, or "" if it is one."""
    if SampleType.MEMORY_GATE_NEGATIVE not in types:
        return "type_not_requested"
    if truth.strategy == "guardian_refused" and not (
        settings.DATASET_NEGATIVE_GATE_PROPOSED_WRITE and settings.DATASET_NEGATIVE_GUARDIAN_REFUSED
    ):
        return "criterion_disabled"
    if truth.strategy == "behavior_correction" and not settings.DATASET_NEGATIVE_HAS_BEHAVIOR_CORRECTION:
        return "criterion_disabled"
    return ""


def draft_gate_sample(
    decision: MemoryGateDecision, *, now: dt.datetime, types: Sequence[str]
) -> tuple[Draft | None, str]:
    """A positive or negative sample for an UPDATE_* decision, or (None, why not)."""
    truth = judge_decision(decision, now=now)
    if truth is None:
        return None, "not_settled"
    turn = decision.turn
    events, objection, last = feedback_of(turn)
    window = window_of(turn)
    conversation = _conversation(turn, window)
    by_person = truth.evidence == Evidence.CORRECTION
    if truth.decision == decision.decision:
        why_not = _why_not_positive(truth, types, objection=objection)
        sample_type, fingerprint_text = SampleType.MEMORY_GATE_POSITIVE, truth.fact
        strategy = "confirmed_correction" if by_person else truth.strategy
        content = None if why_not else _positive_content(decision, truth, conversation, last=last)
    else:
        why_not = _why_not_negative(truth, types)
        sample_type, fingerprint_text, strategy = (
            SampleType.MEMORY_GATE_NEGATIVE,
            decision.candidate_fact,
            truth.strategy,
        )
        content = None if why_not else _negative_content(decision, truth, conversation)
    if content is None:
        return None, why_not
    draft = _draft(
        sample_type=sample_type,
        source_id=decision.id,
        session_id=decision.session_id,
        content=content,
        label=truth.decision,
        signals=_gate_signals(turn, window, truth, decision, _feedback_signal(objection, last)),
        strategy=strategy,
        fingerprint_text=fingerprint_text,
        turn_id=turn.id,
        decision=decision,
        audit_id=_main_audit_id(decision),
        has_feedback=bool(events),
        confirmed_correction=by_person,
        now=now,
    )
    return draft, ""


def _main_audit_id(decision: MemoryGateDecision) -> str | None:
    audits = sorted(decision.audits.all(), key=lambda a: (a.created_at, a.id))
    return audits[-1].id if audits else None


def draft_guardian_sample(audit: WriteGuardianAudit, *, now: dt.datetime) -> tuple[Draft | None, str]:
    truth = judge_audit(audit, now=now)
    if truth is None:
        return None, "not_written_or_refused"
    turn = audit.turn
    events, objection, last = feedback_of(turn)
    content = {
        "type": SampleType.WRITE_GUARDIAN_DECISION.value,
        "candidateFact": audit.candidate_fact,
        "targetFile": audit.target_file,
        "currentFileContent": _snapshot_text(audit),
        "decision": truth.original,
        "reason": audit.reason or "",
        "diff": audit.diff or "",
        "edits": audit.edits if isinstance(audit.edits, list) else [],
        "userCorrection": truth.correction,
    }
    signals = ScoringInput(
        user_message=turn.user_message_content if turn is not None else audit.candidate_fact,
        agent_reply=turn.agent_message_content if turn is not None else "",
        context=[item["message"] for item in window_of(turn)],
        fact=audit.candidate_fact if truth.label == WRITTEN else None,
        reason=truth.reason,
        reason_by_person=truth.reason_by_person,
        evidence=truth.evidence,
        agrees_with_gate=truth.label == truth.original,
        gate_confidence=None,
        feedback=_feedback_signal(objection, last),
    )
    draft = _draft(
        sample_type=SampleType.WRITE_GUARDIAN_DECISION,
        source_id=audit.id,
        session_id=audit.session_id,
        content=content,
        label=truth.label,
        signals=signals,
        strategy=truth.strategy,
        fingerprint_text=audit.candidate_fact,
        fingerprint_extra=audit.target_file,
        turn_id=audit.turn_id,
        decision=audit.decision,
        audit_id=audit.id,
        has_feedback=bool(events),
        confirmed_correction=truth.evidence == Evidence.CORRECTION,
        now=now,
    )
    draft.gate_confidence = None  # The gate's confidence says nothing about the guardian's decision.
    return draft, ""


def _annotated_truth(
    decision: MemoryGateDecision, events: list[dict[str, Any]], *, objection: bool, now: dt.datetime
) -> GateTruth:
    """The gate's correct output for an annotated turn's decision."""
    truth = judge_decision(decision, now=now) if decision.decision != Decision.NO_WRITE else None
    if decision.decision == Decision.NO_WRITE and objection:
        # A thumbs-down on NO_WRITE ("you should have remembered that", the seed's userLaterRequestedSimilar):
        # the gate missed a memory. The right file is not known, so the label says what is: a missed write.
        why = next((e.get("reason") for e in reversed(events) if e.get("feedback") == "down" and e.get("reason")), "")
        truth = GateTruth(
            MISSED_WRITE, None, Evidence.FEEDBACK, why or "the user objected to NO_WRITE", False, "missed_memory"
        )
    if truth is None:
        truth = GateTruth(
            decision.decision, decision.candidate_fact, Evidence.FEEDBACK, decision.reason, False, "annotated_feedback"
        )
    return truth


def _gate_label(decision: MemoryGateDecision, truth: GateTruth) -> tuple[str, dict[str, Any] | None]:
    """(label of the gate's output, the corrected output or None)."""
    fact_changed = (truth.fact or "") != (decision.candidate_fact or "")
    if truth.decision == MISSED_WRITE:
        return "missed", {"decision": MISSED_WRITE, "reason": truth.reason, "candidateFact": None}
    if truth.decision != decision.decision or (truth.evidence == Evidence.CORRECTION and fact_changed):
        label = "corrected" if truth.evidence == Evidence.CORRECTION else "incorrect"
        return label, {"decision": truth.decision, "reason": truth.reason, "candidateFact": truth.fact}
    return "correct", None


def _guardian_part(audit: WriteGuardianAudit, *, now: dt.datetime) -> dict[str, Any]:
    """The write guardian's input, output and label for an annotated turn's last audit."""
    g = judge_audit(audit, now=now)
    output = {"status": audit.status, "reason": audit.reason or "", "diff": audit.diff or ""}
    if g is None or g.label == g.original:
        g_label, g_corrected = "correct", None
    else:
        g_label = "corrected" if g.evidence == Evidence.CORRECTION else "incorrect"
        g_corrected = {"status": g.label, "reason": g.reason, "diff": ""}
    return {
        "input": {
            "candidateFact": audit.candidate_fact,
            "targetFile": audit.target_file,
            "currentContent": _snapshot_text(audit),
        },
        "output": output,
        "label": g_label,
        "correctedOutput": g_corrected,
    }


def draft_annotated_turn(turn: ConversationTurn, *, now: dt.datetime) -> tuple[Draft | None, str]:
    decisions = sorted(turn.decisions.all(), key=lambda d: (d.run_number, d.created_at))
    if not decisions:
        return None, "no_decision"
    decision = decisions[-1]
    events, objection, last = feedback_of(turn)
    audits = sorted(decision.audits.all(), key=lambda a: (a.created_at, a.id))
    correction = _latest_correction(audits)
    if not events and correction is None:
        return None, "no_annotation"
    truth = _annotated_truth(decision, events, objection=objection, now=now)
    gate_label, corrected_output = _gate_label(decision, truth)
    audit = audits[-1] if audits else None
    window = window_of(turn)
    content = {
        "type": SampleType.ANNOTATED_TURN.value,
        "conversationId": turn.session_id,
        "turnNumber": turn.turn_number,
        "context": window,
        "memoryGate": {
            "input": {"userMessage": turn.user_message_content, "agentReply": turn.agent_message_content},
            "output": _gate_output(decision),
            "label": gate_label,
            "correctedOutput": corrected_output,
        },
        "writeGuardian": _guardian_part(audit, now=now) if audit is not None else None,
        "feedback": {"events": events, "last": last} if events else None,
    }
    draft = _draft(
        sample_type=SampleType.ANNOTATED_TURN,
        source_id=turn.id,
        session_id=turn.session_id,
        content=content,
        label=truth.decision,
        signals=_gate_signals(turn, window, truth, decision, _feedback_signal(objection, last)),
        strategy="annotated_correction" if correction is not None else "annotated_feedback",
        fingerprint_text=truth.fact or decision.candidate_fact or turn.user_message_content,
        turn_id=turn.id,
        decision=decision,
        audit_id=audit.id if audit is not None else None,
        has_feedback=bool(events),
        confirmed_correction=correction is not None,
        now=now,
    )
    return draft, ""
