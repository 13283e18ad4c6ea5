"""Annotation: statuses a person sets, who and when, and moving through the review queue."""

from __future__ import annotations

import pytest

from dataset_app.annotation import (
    annotate_sample,
    approve_sample,
    approve_samples,
    next_in_queue,
    previous_in_queue,
    queue_position,
    reject_sample,
)
from dataset_app.errors import DatasetError
from dataset_app.models import DatasetSample, PendingReviewSample
from tests.dataset_app.factories import SampleFactory, TurnFactory

pytestmark = pytest.mark.django_db


def test_approve_and_reject_record_who_when_and_notes():
    sample = SampleFactory()

    approve_sample(sample, annotated_by="alice", notes="clean")
    sample.refresh_from_db()
    assert (sample.annotation_status, sample.annotated_by, sample.annotation_notes) == ("approved", "alice", "clean")
    first = sample.annotated_at
    assert first is not None

    reject_sample(sample, annotated_by="bob")
    sample.refresh_from_db()
    assert (sample.annotation_status, sample.annotated_by, sample.annotation_notes) == ("rejected", "bob", "clean")
    assert sample.annotated_at >= first


def test_people_cannot_set_collector_statuses_or_annotate_anonymously():
    sample = SampleFactory()
    with pytest.raises(DatasetError):
        annotate_sample(sample, status="auto_approved", annotated_by="alice")
    with pytest.raises(DatasetError):
        annotate_sample(sample, status="approved", annotated_by="  ")
    sample.refresh_from_db()
    assert sample.annotation_status == "pending"


def test_bulk_approval_updates_every_selected_sample():
    SampleFactory.create_batch(3)
    assert approve_samples(DatasetSample.objects.all(), annotated_by="alice") == 3
    assert set(DatasetSample.objects.values_list("annotation_status", "annotated_by")) == {("approved", "alice")}


def test_the_queue_is_needs_review_best_quality_first_then_unscored():
    low = SampleFactory(annotation_status="needs_review", quality_score=0.2)
    none = SampleFactory(annotation_status="needs_review", quality_score=None)
    high = SampleFactory(annotation_status="needs_review", quality_score=0.9)
    SampleFactory(annotation_status="pending", quality_score=1.0)

    assert next_in_queue() == high
    assert next_in_queue(high) == low
    assert next_in_queue(low) == none
    assert next_in_queue(none) == high  # wraps round
    assert previous_in_queue(low) == high
    assert previous_in_queue(high) is None
    assert [queue_position(s) for s in (high, low, none)] == [1, 2, 3]


def test_next_after_an_annotated_sample_continues_from_its_place():
    a = SampleFactory(annotation_status="needs_review", quality_score=0.9)
    b = SampleFactory(annotation_status="needs_review", quality_score=0.5)
    approve_sample(a, annotated_by="x")
    assert next_in_queue(a, exclude_id=a.id) == b


def test_the_pending_review_samples_view_lists_the_queue_with_the_turn():
    turn = TurnFactory(user_message_content="I like jazz.")
    best = SampleFactory(annotation_status="needs_review", quality_score=0.9, turn=turn, session=turn.session)
    SampleFactory(annotation_status="needs_review", quality_score=None)
    worst = SampleFactory(annotation_status="needs_review", quality_score=0.1)
    SampleFactory(annotation_status="approved")

    rows = list(PendingReviewSample.objects.all())

    assert [r.id for r in rows][:2] == [best.id, worst.id]
    assert len(rows) == 3
    assert rows[0].user_message_content == "I like jazz."
    assert rows[0].memory_gate_decision is None
    assert rows[0].annotation_status == "needs_review"


def test_the_view_answers_the_seeds_sql():
    from django.db import connection

    SampleFactory(annotation_status="needs_review", quality_score=0.5)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, memory_gate_decision, write_guardian_status, user_message_content FROM pending_review_samples"
        )
        assert len(cursor.fetchall()) == 1
