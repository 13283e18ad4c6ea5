"""REQ-004 collection along its pipeline: ``judge`` (what happened to a decision or an audit), ``drafts`` (the
content of the four sample types), ``status`` (score, privacy, annotation status) and ``collect`` (candidates,
batches, insert, amend). ``collect_samples`` is the entry point."""

from dataset_app.collect.collect import (
    TYPE_ALIASES,
    CollectionResult,
    amend_guardian_samples,
    collect_samples,
    sample_types_for,
    supersede_contradicted,
)
from dataset_app.collect.drafts import (
    Draft,
    draft_annotated_turn,
    draft_gate_sample,
    draft_guardian_sample,
    feedback_of,
)
from dataset_app.collect.judge import MISSED_WRITE, GateTruth, GuardianTruth, judge_audit, judge_decision
from dataset_app.collect.status import check_privacy, finish_drafts

__all__ = [
    "MISSED_WRITE",
    "TYPE_ALIASES",
    "CollectionResult",
    "Draft",
    "GateTruth",
    "GuardianTruth",
    "amend_guardian_samples",
    "check_privacy",
    "collect_samples",
    "draft_annotated_turn",
    "draft_gate_sample",
    "draft_guardian_sample",
    "feedback_of",
    "finish_drafts",
    "judge_audit",
    "judge_decision",
    "sample_types_for",
    "supersede_contradicted",
]
