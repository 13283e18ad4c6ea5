"""Missed memories become negatives (issue 21, item 5): a thumbs-down on a NO_WRITE decision ("you should have
remembered that", the seed's userLaterRequestedSimilar) yields an annotated sample labelled as a miss."""

from __future__ import annotations

import pytest

from dataset_app.collect import MISSED_WRITE, collect_samples
from dataset_app.models import DatasetSample
from tests.dataset_app.factories import DecisionFactory, TurnFactory

pytestmark = pytest.mark.django_db


def _no_write_turn(feedback: str, reason: str | None):
    turn = TurnFactory(user_message_content="My daughter starts school on 2 September.")
    DecisionFactory(turn=turn, session=turn.session, decision="NO_WRITE", candidate_fact=None)
    turn.feedback_json = {
        "events": [{"user_id": "u1", "feedback": feedback, "reason": reason, "at": "t"}],
        "last": feedback,
    }
    turn.save()
    return turn


def test_a_thumbs_down_on_no_write_is_a_missed_memory():
    turn = _no_write_turn("down", "You should have remembered that.")

    collect_samples(sample_type="annotated")

    (sample,) = DatasetSample.objects.filter(sample_type="annotated_turn")
    assert sample.label == MISSED_WRITE
    gate = sample.content["memoryGate"]
    assert gate["output"]["decision"] == "NO_WRITE"
    assert gate["label"] == "missed"
    assert gate["correctedOutput"]["reason"] == "You should have remembered that."
    assert gate["input"]["userMessage"] == turn.user_message_content


def test_a_thumbs_up_on_no_write_stays_correct():
    _no_write_turn("up", None)

    collect_samples(sample_type="annotated")

    (sample,) = DatasetSample.objects.filter(sample_type="annotated_turn")
    assert sample.label == "NO_WRITE"
    assert sample.content["memoryGate"]["label"] == "correct"
