"""REQ-004 collection: gate decisions, guardian audits and annotated turns become labelled samples.

The four sample types and the seed's criteria (``datasetCollection.*``, all in settings):

* ``memory_gate_positive``: the gate proposed a write and was right. The write stood (was not rolled back
  within ``notRolledBackWithinDays``, so the sample is collected only once that many days have passed),
  or a person's correction confirmed it; no objection (no thumbs-down on the turn); quality at least
  ``minQualityScore``.
* ``memory_gate_negative``: the gate proposed a write and was wrong: the guardian refused it (and no retry
  wrote it), the write was rolled back within ``notRolledBackWithinDays``, or a behaviour correction says
  so. The sample records the correct decision (NO_WRITE, or the UPDATE_* of the corrected file).
* ``write_guardian_decision``: each written or refused audit with the file content the guardian saw, the
  guardian's decision and, from a correction or a rollback, the person's correction. Collected at once; a
  correction or rollback that comes later amends the sample (``amend_guardian_samples``), and a person's
  approval of it is then asked for again. Audits without a session (learning, reflect) are not samples.
* ``annotated_turn``: a turn with a behaviour correction or user feedback, with both stages' inputs,
  outputs and labels (``correct``/``incorrect``/``corrected``; ``missed``, label ``missed_write``, for a
  thumbs-down on a NO_WRITE: a memory the gate missed).

The latest behaviour correction on any of a decision's audits decides its label; then a rollback within
the window; then the guardian's refusal; then a write that stood.

Every sample is scored (``scoring.py``), checked for PII and secrets (``reflection_site.privacy``), and given
a status: ``auto_approved`` with ``auto_approve`` and one of the seed's auto-approve criteria, else
``needs_review`` when a manual-review criterion holds, else ``pending``.

A source (decision, audit or turn) is collected once per sample type: ``source_key`` is unique, and the
insert is ``bulk_create(ignore_conflicts=True)``, so two collectors running at once add nothing twice.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.utils import timezone

from dataset_app.models import APPROVED_STATUSES, AnnotationStatus, DatasetSample, SampleType
from dataset_app.scoring import Evidence, QualityWeights, ScoringInput, content_tokens, score_sample
from guardian_app.models import BehaviorCorrection, Rollback, WriteGuardianAudit
from reflection_site import privacy
from sessions_app.models import (
    DECISION_FOR_FILE,
    FILE_FOR_DECISION,
    ConversationContext,
    ConversationTurn,
    Decision,
    MemoryGateDecision,
)

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (done, total)

BATCH = 500
COLLECTOR = "collector"

# --type accepts the seed's all | positive | negative, the two other kinds, and the full type names.
TYPE_ALIASES: dict[str, tuple[str, ...]] = {
    "all": tuple(SampleType.values),
    "positive": (SampleType.MEMORY_GATE_POSITIVE,),
    "negative": (SampleType.MEMORY_GATE_NEGATIVE,),
    "guardian": (SampleType.WRITE_GUARDIAN_DECISION,),
    "annotated": (SampleType.ANNOTATED_TURN,),
    **{value: (value,) for value in SampleType.values},
}

WRITTEN = WriteGuardianAudit.Status.WRITTEN
REFUSED = WriteGuardianAudit.Status.REFUSED
ROLLED_BACK = WriteGuardianAudit.Status.ROLLED_BACK
SKIPPED = WriteGuardianAudit.Status.SKIPPED


def sample_types_for(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"all"``, ``"positive"``, a type name, or a list of them -> the sample types. ValueError if unknown."""
    if value is None:
        return TYPE_ALIASES["all"]
    values = [value] if isinstance(value, str) else list(value)
    types: list[str] = []
    for item in values:
        if item not in TYPE_ALIASES:
            raise ValueError(f"unknown sample type {item!r}; use one of {', '.join(TYPE_ALIASES)}")
        types += [t for t in TYPE_ALIASES[item] if t not in types]
    return tuple(types)


@dataclass
class CollectionResult:
    dry_run: bool = False
    considered: int = 0
    created: Counter = field(default_factory=Counter)  # by sample type
    statuses: Counter = field(default_factory=Counter)  # by annotation status
    skipped: Counter = field(default_factory=Counter)  # by reason
    already_collected: int = 0
    superseded: int = 0
    amended: int = 0

    @property
    def total_created(self) -> int:
        return sum(self.created.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "considered": self.considered,
            "created": self.total_created,
            "by_type": {str(k): v for k, v in self.created.items()},
            "by_status": {str(k): v for k, v in self.statuses.items()},
            "skipped": {str(k): v for k, v in self.skipped.items()},
            "already_collected": self.already_collected,
            "superseded": self.superseded,
            "amended": self.amended,
        }


# --- What happened to a decision or an audit -------------------------------------------------------


# The label of a NO_WRITE the user objected to: something should have been written (issue 21).
MISSED_WRITE = "missed_write"


@dataclass(frozen=True)
class GateTruth:
    """The correct output of the gate for one decision, and who says so."""

    decision: str
    fact: str | None
    evidence: str
    reason: str
    reason_by_person: bool
    strategy: str
    correction: BehaviorCorrection | None = None


@dataclass(frozen=True)
class GuardianTruth:
    """The correct output of the guardian for one audit, and who says so."""

    original: str  # written | refused: what the guardian did
    label: str  # written | refused: what it should have done
    evidence: str
    reason: str
    reason_by_person: bool
    strategy: str
    correction: dict[str, str] | None = None  # the seed's userCorrection


def _window_days() -> int:
    return max(0, settings.DATASET_NOT_ROLLED_BACK_WITHIN_DAYS)


def _rolled_back_within_window(audit: WriteGuardianAudit) -> Any:
    """The audit's rollback if it came within ``notRolledBackWithinDays`` of the write (0: any rollback)."""
    rollback = getattr(audit, "rollback", None) if audit.status == ROLLED_BACK else None
    if rollback is None:
        return None
    days = _window_days()
    if days and rollback.rolled_back_at - audit.created_at > dt.timedelta(days=days):
        return None
    return rollback


def _latest_correction(audits: Iterable[WriteGuardianAudit]) -> BehaviorCorrection | None:
    corrections = [c for audit in audits for c in audit.corrections.all()]
    return max(corrections, key=lambda c: (c.corrected_at, c.id), default=None)


def _stood(audit: WriteGuardianAudit, now: dt.datetime) -> bool | None:
    """True if the write stood the window, None if it is written but too recent, False if not a write."""
    written = audit.status == WRITTEN or (audit.status == ROLLED_BACK and _rolled_back_within_window(audit) is None)
    if not settings.DATASET_POSITIVE_WAS_WRITTEN:
        written = written or audit.status == SKIPPED  # Already in the file: the gate was right.
    if not written:
        return False
    return True if audit.created_at <= now - dt.timedelta(days=_window_days()) else None


def judge_decision(decision: MemoryGateDecision, *, now: dt.datetime) -> GateTruth | None:
    """The gate's correct output for ``decision``, or None while nothing settles it yet.

    Reads ``decision.audits`` with their ``corrections`` and ``rollback`` (prefetch them).
    """
    audits = list(decision.audits.all())
    correction = _latest_correction(audits)
    if correction is not None:
        if correction.corrected_status == REFUSED:
            return GateTruth(
                Decision.NO_WRITE,
                None,
                Evidence.CORRECTION,
                correction.correction_reason,
                True,
                "behavior_correction",
                correction,
            )
        target = correction.corrected_target_file or decision.target_file
        return GateTruth(
            DECISION_FOR_FILE.get(target, decision.decision),
            correction.corrected_candidate_fact or decision.candidate_fact,
            Evidence.CORRECTION,
            correction.correction_reason,
            True,
            "behavior_correction",
            correction,
        )
    for audit in audits:
        rollback = _rolled_back_within_window(audit)
        if rollback is not None:
            reason = f"Rolled back by {rollback.rolled_back_by}: {rollback.reason}"
            return GateTruth(Decision.NO_WRITE, None, Evidence.ROLLBACK, reason, True, "rollback")
    stood = [_stood(audit, now) for audit in audits]
    if any(stood):
        return GateTruth(
            decision.decision, decision.candidate_fact, Evidence.STOOD, decision.reason, False, "auto_positive"
        )
    if None in stood:
        return None  # Written, but not yet for notRolledBackWithinDays.
    refusals = [audit for audit in audits if audit.status == REFUSED]
    if refusals and len(refusals) == len(audits):
        reason = refusals[-1].reason or "The write guardian refused the fact."
        return GateTruth(Decision.NO_WRITE, None, Evidence.REFUSAL, reason, False, "guardian_refused")
    return None  # No audit yet, or it failed or was skipped: nothing says whether the gate was right.


def judge_audit(audit: WriteGuardianAudit, *, now: dt.datetime) -> GuardianTruth | None:
    """The guardian's correct output for ``audit`` (written or refused), or None for other statuses."""
    if audit.status in (WRITTEN, ROLLED_BACK):
        original = WRITTEN
    elif audit.status == REFUSED:
        original = REFUSED
    else:
        return None
    correction = _latest_correction([audit])
    if correction is not None:
        label = correction.corrected_status
        user_correction = {
            "originalDecision": original,
            "correctedDecision": label,
            "reason": correction.correction_reason,
        }
        return GuardianTruth(
            original,
            label,
            Evidence.CORRECTION,
            correction.correction_reason,
            True,
            "behavior_correction",
            user_correction,
        )
    rollback = _rolled_back_within_window(audit)
    if rollback is not None:
        reason = f"Rolled back by {rollback.rolled_back_by}: {rollback.reason}"
        user_correction = {"originalDecision": WRITTEN, "correctedDecision": REFUSED, "reason": reason}
        return GuardianTruth(original, REFUSED, Evidence.ROLLBACK, reason, True, "rollback", user_correction)
    if original == REFUSED:
        return GuardianTruth(REFUSED, REFUSED, Evidence.NONE, audit.reason or "", False, "guardian_decision")
    # A write is collected at once; once it has stood the window it is as good as confirmed. A later
    # correction or rollback amends the sample (amend_guardian_samples).
    stood = audit.created_at <= now - dt.timedelta(days=_window_days())
    return GuardianTruth(
        WRITTEN, WRITTEN, Evidence.STOOD if stood else Evidence.NONE, audit.reason or "", False, "guardian_decision"
    )


# --- Content of the four sample types --------------------------------------------------------------


def _window(turn: ConversationTurn) -> list[dict[str, str]]:
    size = settings.MEMORY_GATE_WINDOW_SIZE
    items = [{"role": c.role, "message": c.message} for c in turn.context.all()]
    return items[-size:] if size > 0 else []


def _conversation(turn: ConversationTurn) -> list[dict[str, str]]:
    """The context window, then the turn itself as its last two messages (user, agent)."""
    return [
        *_window(turn),
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
    words = " ".join(sorted(content_tokens(text or "")))
    return hashlib.sha256(f"{sample_type}|{label}|{extra}|{words}".encode()).hexdigest()[:40]


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
    turn: ConversationTurn, truth: GateTruth, decision: MemoryGateDecision, feedback: str | None
) -> ScoringInput:
    return ScoringInput(
        user_message=turn.user_message_content,
        agent_reply=turn.agent_message_content,
        context=[item["message"] for item in _window(turn)],
        fact=truth.fact if truth.decision != Decision.NO_WRITE else None,
        reason=truth.reason,
        reason_by_person=truth.reason_by_person,
        evidence=truth.evidence,
        agrees_with_gate=truth.decision == decision.decision,
        gate_confidence=decision.confidence,
        feedback=feedback,
    )


def draft_gate_sample(
    decision: MemoryGateDecision, *, now: dt.datetime, types: Sequence[str]
) -> tuple[Draft | None, str]:
    """A positive or negative sample for an UPDATE_* decision, or (None, why not)."""
    truth = judge_decision(decision, now=now)
    if truth is None:
        return None, "not_settled"
    turn = decision.turn
    events, objection, last = feedback_of(turn)
    conversation = _conversation(turn)
    signals = _gate_signals(turn, truth, decision, _feedback_signal(objection, last))
    by_person = truth.evidence == Evidence.CORRECTION
    if truth.decision == decision.decision:
        if SampleType.MEMORY_GATE_POSITIVE not in types:
            return None, "type_not_requested"
        if truth.evidence not in (Evidence.STOOD, Evidence.CORRECTION):
            return None, "not_settled"
        if settings.DATASET_POSITIVE_NO_USER_OBJECTION and objection and not by_person:
            return None, "user_objection"
        fact_changed = by_person and (truth.fact or "") != (decision.candidate_fact or "")
        if fact_changed:
            user_feedback = "corrected"
        elif by_person or last == "up":
            user_feedback = "confirmed"
        else:
            user_feedback = None
        content = {
            "type": SampleType.MEMORY_GATE_POSITIVE.value,
            "conversation": conversation,
            "correctDecision": truth.decision,
            "correctFact": truth.fact or "",
            "reason": decision.reason if not fact_changed else truth.reason,
            "targetFile": FILE_FOR_DECISION.get(truth.decision),
            "evidence": {"wasWritten": truth.evidence == Evidence.STOOD, "userFeedback": user_feedback},
        }
        return (
            _draft(
                sample_type=SampleType.MEMORY_GATE_POSITIVE,
                source_id=decision.id,
                session_id=decision.session_id,
                content=content,
                label=truth.decision,
                signals=signals,
                strategy="confirmed_correction" if by_person else truth.strategy,
                fingerprint_text=truth.fact,
                turn_id=turn.id,
                decision=decision,
                audit_id=_main_audit_id(decision),
                has_feedback=bool(events),
                confirmed_correction=by_person,
                now=now,
            ),
            "",
        )
    if SampleType.MEMORY_GATE_NEGATIVE not in types:
        return None, "type_not_requested"
    if truth.strategy == "guardian_refused" and not (
        settings.DATASET_NEGATIVE_GATE_PROPOSED_WRITE and settings.DATASET_NEGATIVE_GUARDIAN_REFUSED
    ):
        return None, "criterion_disabled"
    if truth.strategy == "behavior_correction" and not settings.DATASET_NEGATIVE_HAS_BEHAVIOR_CORRECTION:
        return None, "criterion_disabled"
    content = {
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
    return (
        _draft(
            sample_type=SampleType.MEMORY_GATE_NEGATIVE,
            source_id=decision.id,
            session_id=decision.session_id,
            content=content,
            label=truth.decision,
            signals=signals,
            strategy=truth.strategy,
            fingerprint_text=decision.candidate_fact,
            turn_id=turn.id,
            decision=decision,
            audit_id=_main_audit_id(decision),
            has_feedback=bool(events),
            confirmed_correction=by_person,
            now=now,
        ),
        "",
    )


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
        context=[item["message"] for item in _window(turn)] if turn is not None else [],
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
    fact_changed = (truth.fact or "") != (decision.candidate_fact or "")
    if truth.decision == MISSED_WRITE:
        gate_label = "missed"
        corrected_output = {"decision": MISSED_WRITE, "reason": truth.reason, "candidateFact": None}
    elif truth.decision != decision.decision or (truth.evidence == Evidence.CORRECTION and fact_changed):
        gate_label = "corrected" if truth.evidence == Evidence.CORRECTION else "incorrect"
        corrected_output = {"decision": truth.decision, "reason": truth.reason, "candidateFact": truth.fact}
    else:
        gate_label, corrected_output = "correct", None

    guardian: dict[str, Any] | None = None
    audit = audits[-1] if audits else None
    if audit is not None:
        g = judge_audit(audit, now=now)
        output = {"status": audit.status, "reason": audit.reason or "", "diff": audit.diff or ""}
        if g is None or g.label == g.original:
            g_label, g_corrected = "correct", None
        else:
            g_label = "corrected" if g.evidence == Evidence.CORRECTION else "incorrect"
            g_corrected = {"status": g.label, "reason": g.reason, "diff": ""}
        guardian = {
            "input": {
                "candidateFact": audit.candidate_fact,
                "targetFile": audit.target_file,
                "currentContent": _snapshot_text(audit),
            },
            "output": output,
            "label": g_label,
            "correctedOutput": g_corrected,
        }
    content = {
        "type": SampleType.ANNOTATED_TURN.value,
        "conversationId": turn.session_id,
        "turnNumber": turn.turn_number,
        "context": _window(turn),
        "memoryGate": {
            "input": {"userMessage": turn.user_message_content, "agentReply": turn.agent_message_content},
            "output": _gate_output(decision),
            "label": gate_label,
            "correctedOutput": corrected_output,
        },
        "writeGuardian": guardian,
        "feedback": {"events": events, "last": last} if events else None,
    }
    signals = _gate_signals(turn, truth, decision, _feedback_signal(objection, last))
    strategy = "annotated_correction" if correction is not None else "annotated_feedback"
    draft = _draft(
        sample_type=SampleType.ANNOTATED_TURN,
        source_id=turn.id,
        session_id=turn.session_id,
        content=content,
        label=truth.decision,
        signals=signals,
        strategy=strategy,
        fingerprint_text=truth.fact or decision.candidate_fact or turn.user_message_content,
        turn_id=turn.id,
        decision=decision,
        audit_id=audit.id if audit is not None else None,
        has_feedback=bool(events),
        confirmed_correction=correction is not None,
        now=now,
    )
    return draft, ""


# --- Score, privacy, status ------------------------------------------------------------------------


def check_privacy(sample: DatasetSample) -> None:
    """Set ``privacy_checked``, ``contains_pii`` and ``pii_redacted_content`` from ``sample.content``.

    The redacted content is checked again; if anything is still found (it should not be), it is not kept,
    and the sample is left out of every redacted export.
    """
    if not settings.DATASET_PRIVACY_FILTERING_ENABLED:
        sample.privacy_checked = False
        sample.contains_pii = False
        sample.pii_redacted_content = None
        return
    sample.privacy_checked = True
    sample.contains_pii = any(privacy.contains_pii(text) for text in iter_strings(sample.content))
    if not sample.contains_pii:
        sample.pii_redacted_content = None
        return
    redacted = privacy.redact_data(sample.content)
    if any(privacy.contains_pii(text) for text in iter_strings(redacted)):
        logger.warning("sample %s: redaction left PII behind; it is kept out of redacted exports", sample.source_key)
        redacted = None
    sample.pii_redacted_content = redacted


def iter_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from iter_strings(item)


def review_reasons(draft: Draft) -> list[str]:
    """The seed's manualReviewCriteria that hold for this sample."""
    sample = draft.sample
    reasons = []
    confidence = (sample.quality_factors or {}).get("decisionConfidence")
    low = settings.DATASET_LOW_CONFIDENCE
    if settings.DATASET_REVIEW_LOW_CONFIDENCE and (
        (draft.gate_confidence is not None and draft.gate_confidence < low)
        or (confidence is not None and confidence < low)
    ):
        reasons.append("low_confidence")
    if settings.DATASET_REVIEW_SENSITIVE_INFO and sample.contains_pii:
        reasons.append("sensitive_info")
    if settings.DATASET_REVIEW_USER_FEEDBACK and draft.has_feedback:
        reasons.append("user_feedback")
    score = sample.quality_score
    if (
        settings.DATASET_REVIEW_MEDIUM_QUALITY
        and score is not None
        and settings.DATASET_MEDIUM_QUALITY_SCORE <= score < settings.DATASET_HIGH_QUALITY_SCORE
    ):
        reasons.append("medium_quality")
    return reasons


def auto_approve_reason(draft: Draft, *, doubts: Sequence[str], matches_pattern: bool) -> str | None:
    """The seed's autoApproveCriteria: the first that holds, or None."""
    sample = draft.sample
    if settings.DATASET_AUTO_APPROVE_CONFIRMED_CORRECTION and draft.confirmed_correction and not sample.contains_pii:
        return "confirmed_correction"
    if doubts:
        return None
    score = sample.quality_score or 0.0
    if settings.DATASET_AUTO_APPROVE_HIGH_QUALITY and score >= settings.DATASET_HIGH_QUALITY_SCORE:
        return "high_quality"
    if settings.DATASET_AUTO_APPROVE_MATCHES_PATTERN and matches_pattern:
        return "matches_approved_pattern"
    return None


def finish_drafts(drafts: Sequence[Draft], *, auto_approve: bool, now: dt.datetime, weights: QualityWeights) -> None:
    """Score, privacy-check and set the status of each draft, in place."""
    approved_fingerprints: set[str] = set()
    if auto_approve and settings.DATASET_AUTO_APPROVE_MATCHES_PATTERN:
        approved_fingerprints = set(
            DatasetSample.objects.filter(
                fingerprint__in={d.sample.fingerprint for d in drafts}, annotation_status__in=APPROVED_STATUSES
            ).values_list("fingerprint", flat=True)
        )
    for draft in drafts:
        sample = draft.sample
        if settings.DATASET_QUALITY_SCORING_ENABLED:
            quality = score_sample(draft.signals, weights=weights)
            sample.quality_score, sample.quality_factors = quality.score, quality.factors
        check_privacy(sample)
        doubts = review_reasons(draft)
        approval = (
            auto_approve_reason(draft, doubts=doubts, matches_pattern=sample.fingerprint in approved_fingerprints)
            if auto_approve
            else None
        )
        if approval:
            sample.annotation_status = AnnotationStatus.AUTO_APPROVED
            sample.annotated_by = COLLECTOR
            sample.annotated_at = now
            sample.annotation_notes = f"auto-approved: {approval}"
        elif doubts:
            sample.annotation_status = AnnotationStatus.NEEDS_REVIEW
            sample.annotation_notes = f"needs review: {', '.join(doubts)}"
        else:
            sample.annotation_status = AnnotationStatus.PENDING


# --- Candidates ------------------------------------------------------------------------------------


def _sampled(sample_types: Sequence[str], **outer: str) -> Exists:
    return Exists(
        DatasetSample.objects.filter(sample_type__in=sample_types, **{k: OuterRef(v) for k, v in outer.items()})
    )


def _in_range(
    queryset: QuerySet,
    *,
    since: dt.datetime | None,
    until: dt.datetime | None,
    session_id: str | None,
    session_field: str = "session_id",
) -> QuerySet:
    if since is not None:
        queryset = queryset.filter(created_at__gte=since)
    if until is not None:
        queryset = queryset.filter(created_at__lt=until)
    if session_id:
        queryset = queryset.filter(**{session_field: session_id})
    return queryset


_AUDITS = Prefetch(
    "audits",
    queryset=WriteGuardianAudit.objects.select_related("before_snapshot", "rollback").prefetch_related("corrections"),
)
_CONTEXT = Prefetch("context", queryset=ConversationContext.objects.order_by("sequence_number"))


GATE_TYPES: tuple[str, ...] = (SampleType.MEMORY_GATE_POSITIVE, SampleType.MEMORY_GATE_NEGATIVE)


def decision_candidates(types: Sequence[str], **window: Any) -> list[str]:
    """UPDATE_* decisions with an audit and no gate sample yet, or with a correction or rollback newer than
    their gate sample (which may turn a positive into a negative); ids, oldest first."""
    if not any(t in GATE_TYPES for t in types):
        return []
    latest_sample = (
        DatasetSample.objects.filter(decision_id=OuterRef(OuterRef("pk")), sample_type__in=GATE_TYPES)
        .order_by("-created_at")
        .values("created_at")[:1]
    )
    newer_correction = Exists(
        BehaviorCorrection.objects.filter(audit__decision_id=OuterRef("pk"), corrected_at__gt=Subquery(latest_sample))
    )
    newer_rollback = Exists(
        Rollback.objects.filter(audit__decision_id=OuterRef("pk"), rolled_back_at__gt=Subquery(latest_sample))
    )
    decisions = (
        MemoryGateDecision.objects.exclude(decision=Decision.NO_WRITE)
        .filter(Exists(WriteGuardianAudit.objects.filter(decision=OuterRef("pk"))))
        .filter(~_sampled(GATE_TYPES, decision_id="pk") | newer_correction | newer_rollback)
    )
    return list(_in_range(decisions, **window).order_by("created_at", "id").values_list("id", flat=True))


def audit_candidates(**window: Any) -> list[str]:
    audits = WriteGuardianAudit.objects.filter(
        status__in=[WRITTEN, REFUSED, ROLLED_BACK], session__isnull=False
    ).exclude(_sampled([SampleType.WRITE_GUARDIAN_DECISION], audit_id="pk"))
    return list(_in_range(audits, **window).order_by("created_at", "id").values_list("id", flat=True))


def turn_candidates(**window: Any) -> list[str]:
    corrected = Exists(BehaviorCorrection.objects.filter(audit__turn=OuterRef("pk")))
    turns = (
        ConversationTurn.objects.filter(Q(feedback_json__isnull=False) | corrected)
        .filter(Exists(MemoryGateDecision.objects.filter(turn=OuterRef("pk"))))
        .exclude(_sampled([SampleType.ANNOTATED_TURN], turn_id="pk"))
    )
    return list(_in_range(turns, **window).order_by("created_at", "id").values_list("id", flat=True))


def _batches(ids: Sequence[str], size: int = BATCH) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def _drafts_for(
    kind: str, ids: Sequence[str], *, now: dt.datetime, types: Sequence[str], result: CollectionResult
) -> list[Draft]:
    drafts: list[Draft] = []
    if kind == "decision":
        rows = (
            MemoryGateDecision.objects.filter(id__in=ids)
            .select_related("turn")
            .prefetch_related(
                _AUDITS, Prefetch("turn__context", queryset=ConversationContext.objects.order_by("sequence_number"))
            )
        )
        made = [draft_gate_sample(row, now=now, types=types) for row in rows]
    elif kind == "audit":
        rows = (
            WriteGuardianAudit.objects.filter(id__in=ids)
            .select_related("before_snapshot", "rollback", "turn", "decision")
            .prefetch_related(
                "corrections",
                Prefetch("turn__context", queryset=ConversationContext.objects.order_by("sequence_number")),
            )
        )
        made = [draft_guardian_sample(row, now=now) for row in rows]
    else:
        rows = ConversationTurn.objects.filter(id__in=ids).prefetch_related(
            _CONTEXT, Prefetch("decisions", queryset=MemoryGateDecision.objects.prefetch_related(_AUDITS))
        )
        made = [draft_annotated_turn(row, now=now) for row in rows]
    candidates = [draft for draft, _ in made if draft is not None]
    collected = set(
        DatasetSample.objects.filter(source_key__in=[d.sample.source_key for d in candidates]).values_list(
            "source_key", flat=True
        )
    )
    for draft, why_not in made:
        if draft is None:
            result.skipped[why_not] += 1
        elif draft.sample.source_key in collected:
            result.skipped["already_collected"] += 1
        else:
            drafts.append(draft)
    return drafts


def _insert(drafts: Sequence[Draft], result: CollectionResult) -> list[DatasetSample]:
    """Insert the drafts; those whose source was collected meanwhile are left out by the constraint."""
    keys = [d.sample.source_key for d in drafts]
    existing = set(DatasetSample.objects.filter(source_key__in=keys).values_list("source_key", flat=True))
    DatasetSample.objects.bulk_create([d.sample for d in drafts], ignore_conflicts=True, batch_size=BATCH)
    stored = set(DatasetSample.objects.filter(source_key__in=keys).values_list("source_key", flat=True))
    result.already_collected += len(existing)
    return [d.sample for d in drafts if d.sample.source_key in stored and d.sample.source_key not in existing]


def supersede_contradicted(new_samples: Sequence[DatasetSample], *, now: dt.datetime) -> int:
    """A decision judged again (a later correction or rollback): the gate sample of the other kind for the
    same decision is rejected, or sent back to review if a person approved it, so the dataset never
    teaches both answers."""
    changed = 0
    for sample in new_samples:
        if sample.sample_type not in GATE_TYPES or sample.decision_id is None:
            continue
        other = [t for t in GATE_TYPES if t != sample.sample_type]
        stale = DatasetSample.objects.filter(decision_id=sample.decision_id, sample_type__in=other).exclude(
            annotation_status=AnnotationStatus.REJECTED
        )
        note = f"Contradicted by {sample.sample_type} sample {sample.id} ({sample.collection_strategy})."
        # Rejected first: the approved ones it leaves are then sent back to review (not rejected too).
        changed += stale.exclude(annotation_status=AnnotationStatus.APPROVED).update(
            annotation_status=AnnotationStatus.REJECTED, annotated_by=COLLECTOR, annotated_at=now, annotation_notes=note
        )
        changed += stale.filter(annotation_status=AnnotationStatus.APPROVED).update(
            annotation_status=AnnotationStatus.NEEDS_REVIEW, annotation_notes=note
        )
    return changed


def amend_guardian_samples(
    *, now: dt.datetime, auto_approve: bool, weights: QualityWeights, dry_run: bool = False
) -> int:
    """Guardian samples whose audit was corrected or rolled back after collection get the new label.

    A sample a person approved goes back to review; one a person rejected stays rejected; any other gets
    its status from the rules again. Returns how many samples changed (or would, with ``dry_run``).
    """
    touched = (
        DatasetSample.objects.filter(sample_type=SampleType.WRITE_GUARDIAN_DECISION, audit__isnull=False)
        .filter(
            Exists(BehaviorCorrection.objects.filter(audit_id=OuterRef("audit_id")))
            | Exists(Rollback.objects.filter(audit_id=OuterRef("audit_id")))
        )
        .select_related("audit__before_snapshot", "audit__rollback", "audit__turn")
        .prefetch_related(
            "audit__corrections",
            Prefetch("audit__turn__context", queryset=ConversationContext.objects.order_by("sequence_number")),
        )
    )
    changed = 0
    for sample in touched.iterator(chunk_size=200):
        draft, _ = draft_guardian_sample(sample.audit, now=now)
        if draft is None or (
            draft.sample.label == sample.label
            and draft.sample.content.get("userCorrection") == sample.content.get("userCorrection")
        ):
            continue
        changed += 1
        if dry_run:
            continue
        finish_drafts([draft], auto_approve=auto_approve, now=now, weights=weights)
        new = draft.sample
        previous = sample.annotation_status
        sample.content, sample.label = new.content, new.label
        sample.quality_score, sample.quality_factors = new.quality_score, new.quality_factors
        sample.privacy_checked, sample.contains_pii = new.privacy_checked, new.contains_pii
        sample.pii_redacted_content = new.pii_redacted_content
        sample.collection_strategy, sample.fingerprint = new.collection_strategy, new.fingerprint
        note = f"Amended: the audit was {new.collection_strategy.replace('_', ' ')} after collection."
        if previous == AnnotationStatus.APPROVED:
            sample.annotation_status, sample.annotation_notes = AnnotationStatus.NEEDS_REVIEW, note
        elif previous != AnnotationStatus.REJECTED:
            sample.annotation_status = new.annotation_status
            sample.annotated_by, sample.annotated_at = new.annotated_by, new.annotated_at
            sample.annotation_notes = f"{note} {new.annotation_notes or ''}".strip()
        sample.save()
    return changed


def collect_samples(
    *,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    session_id: str | None = None,
    sample_type: str | Sequence[str] | None = "all",
    auto_approve: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
    now: dt.datetime | None = None,
) -> CollectionResult:
    """Collect samples from decisions, audits and turns not yet collected.

    1. List candidates of each requested kind that have no sample of that kind yet (``since``/``until``
       bound the source's creation time, ``session_id`` its session).
    2. In batches: build each sample's content, score it, check its privacy, set its status.
    3. Unless ``dry_run``, insert each batch with ``ignore_conflicts``: the unique ``source_key`` keeps a
       source that another collector took meanwhile from being collected twice.
    4. A new gate sample rejects the contradicted one of the same decision (``supersede_contradicted``).
    5. Guardian samples whose audit was corrected or rolled back since get the new label (``amend_guardian_samples``).
    Raises ValueError for an unknown ``sample_type``.
    """
    types = sample_types_for(sample_type)
    now = now or timezone.now()
    result = CollectionResult(dry_run=dry_run)
    if not settings.DATASET_COLLECTION_ENABLED:
        result.skipped["collection_disabled"] += 1
        return result
    window = {"since": since, "until": until, "session_id": session_id}
    weights = QualityWeights.from_settings()
    work: list[tuple[str, list[str]]] = [("decision", decision_candidates(types, **window))]
    if SampleType.WRITE_GUARDIAN_DECISION in types:
        work.append(("audit", audit_candidates(**window)))
    if SampleType.ANNOTATED_TURN in types:
        work.append(("turn", turn_candidates(**window)))
    total = sum(len(ids) for _, ids in work)
    done = 0
    if progress:
        progress(0, total)
    for kind, ids in work:
        for batch in _batches(ids):
            drafts = _drafts_for(kind, batch, now=now, types=types, result=result)
            finish_drafts(drafts, auto_approve=auto_approve, now=now, weights=weights)
            # Quality below minQualityScore keeps a positive out of the dataset altogether.
            kept = []
            for draft in drafts:
                sample = draft.sample
                if (
                    sample.sample_type == SampleType.MEMORY_GATE_POSITIVE
                    and sample.quality_score is not None
                    and sample.quality_score < settings.DATASET_MIN_QUALITY_SCORE
                ):
                    result.skipped["below_min_quality"] += 1
                else:
                    kept.append(draft)
            if dry_run:
                created = [d.sample for d in kept]
            else:
                with transaction.atomic():
                    created = _insert(kept, result)
                    result.superseded += supersede_contradicted(created, now=now)
            for sample in created:
                result.created[sample.sample_type] += 1
                result.statuses[sample.annotation_status] += 1
            result.considered += len(batch)
            done += len(batch)
            if progress:
                progress(done, total)
    if SampleType.WRITE_GUARDIAN_DECISION in types:
        result.amended = amend_guardian_samples(now=now, auto_approve=auto_approve, weights=weights, dry_run=dry_run)
    logger.info("dataset collection: %s", result.as_dict())
    return result
