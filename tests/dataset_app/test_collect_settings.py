"""Each datasetCollection key changes what collection does (README's settings table), one test a key."""

from __future__ import annotations

import pytest

from dataset_app.collect import collect_samples
from dataset_app.models import DatasetSample
from tests.dataset_app.factories import CorrectionFactory, written_decision

pytestmark = pytest.mark.django_db


def of_type(sample_type: str) -> list[DatasetSample]:
    return list(DatasetSample.objects.filter(sample_type=sample_type))


@pytest.mark.parametrize("enabled", [True, False])
def test_quality_scoring_enabled_scores_or_leaves_unscored(settings, enabled):
    settings.DATASET_QUALITY_SCORING_ENABLED = enabled
    written_decision(days=10)

    collect_samples(sample_type="positive")

    (sample,) = of_type("memory_gate_positive")
    if enabled:
        assert 0 <= sample.quality_score <= 1 and set(sample.quality_factors) >= {"conversationClarity"}
    else:
        assert sample.quality_score is None and not sample.quality_factors


@pytest.mark.parametrize("was_written", [True, False])
def test_positive_was_written_decides_whether_a_skipped_write_is_a_positive(settings, was_written):
    """A write the guardian skipped (the fact was already in the file) shows the gate was right only when
    ``wasWritten`` is not required."""
    settings.DATASET_POSITIVE_WAS_WRITTEN = was_written
    written_decision(days=10, status="skipped")

    collect_samples(sample_type="positive")

    assert len(of_type("memory_gate_positive")) == (0 if was_written else 1)


@pytest.mark.parametrize("proposed_write", [True, False])
def test_negative_gate_proposed_write_turns_refusals_into_negatives_or_not(settings, proposed_write):
    settings.DATASET_NEGATIVE_GATE_PROPOSED_WRITE = proposed_write
    written_decision(days=0, status="refused")

    collect_samples(sample_type="negative")

    assert len(of_type("memory_gate_negative")) == (1 if proposed_write else 0)


@pytest.mark.parametrize("has_correction", [True, False])
def test_negative_has_behavior_correction_turns_corrections_into_negatives_or_not(settings, has_correction):
    settings.DATASET_NEGATIVE_HAS_BEHAVIOR_CORRECTION = has_correction
    decision = written_decision(days=1)
    CorrectionFactory(audit=decision.audits.get(), corrected_status="refused", correction_reason="Small talk.")

    collect_samples(sample_type="negative")

    negatives = of_type("memory_gate_negative")
    assert [s.collection_strategy for s in negatives] == (["behavior_correction"] if has_correction else [])
