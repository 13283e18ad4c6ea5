"""What happened to a decision or an audit: the correct output of the gate or the guardian, and who says so.

The latest behaviour correction on any of a decision's audits decides its label; then a rollback within
``notRolledBackWithinDays``; then the guardian's refusal; then a write that stood.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from dataset_app.scoring import Evidence
from guardian_app.models import BehaviorCorrection, WriteGuardianAudit
from sessions_app.models import DECISION_FOR_FILE, Decision, MemoryGateDecision

WRITTEN = WriteGuardianAudit.Status.WRITTEN
REFUSED = WriteGuardianAudit.Status.REFUSED
ROLLED_BACK = WriteGuardianAudit.Status.ROLLED_BACK
SKIPPED = WriteGuardianAudit.Status.SKIPPED

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
