"""Score, privacy check and annotation status of drafted samples (the seed's review and auto-approve criteria).

Every sample is scored (``scoring.py``), checked for PII and secrets (``reflection_site.privacy``), and given
a status: ``auto_approved`` with ``auto_approve`` and one of the seed's auto-approve criteria, else
``needs_review`` when a manual-review criterion holds, else ``pending``.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from django.conf import settings

from dataset_app.collect.drafts import Draft
from dataset_app.models import APPROVED_STATUSES, AnnotationStatus, DatasetSample
from dataset_app.scoring import QualityWeights, score_sample
from reflection_site import privacy

logger = logging.getLogger("dataset_app.collect")

COLLECTOR = "collector"


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
