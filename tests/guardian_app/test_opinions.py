"""Opinions: the confidence update rule (small steps; a large jump only after strong, repeated
contradiction), matching facts to opinions, the table behind them, and GET /opinions."""

from __future__ import annotations

import datetime as dt
from http import HTTPStatus

import pytest
from django.utils import timezone

from guardian_app.models import Opinion, OpinionEvidence
from guardian_app.reflect.facts import Fact, fact_id
from guardian_app.reflect.opinions import (
    DEFAULT_CONFIDENCE,
    MAX_STEP,
    OpinionState,
    apply_fact,
    is_negative,
    record_fact,
    similarity,
    update_confidence,
)

NOW = dt.datetime(2025, 11, 27, 12, tzinfo=dt.UTC)


# --- The update rule (a pure function) ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("confidence", "supports", "strength", "streak", "expected"),
    [
        # Support: towards 1 by 0.1 × strength × (1 − c).
        (0.5, True, 1.0, 0, 0.55),
        (0.5, True, 0.6, 0, 0.53),
        (0.9, True, 1.0, 0, 0.91),
        (0.0, True, 1.0, 0, 0.1),
        (1.0, True, 1.0, 0, 1.0),
        (0.5, True, 0.0, 0, 0.5),
        # Contradiction: towards 0 by 0.1 × strength × c.
        (0.5, False, 1.0, 1, 0.45),
        (0.9, False, 0.6, 0, 0.846),
        (0.9, False, 0.95, 2, 0.8145),  # Strong, but only the second in a row: still a small step.
        (0.9, False, 0.5, 5, 0.855),  # Many in a row, but weak: still a small step.
        (0.0, False, 1.0, 1, 0.0),
        # The large jump: strong and the third (or later) strong contradiction in a row halves it.
        (0.9, False, 0.8, 3, 0.45),
        (0.9, False, 1.0, 4, 0.45),
        (0.4, False, 0.9, 3, 0.2),
        # Inputs out of range are clamped.
        (1.7, True, 2.0, 0, 1.0),
        (-0.2, False, 1.0, 3, 0.0),
    ],
)
def test_update_confidence(confidence, supports, strength, streak, expected):
    assert update_confidence(confidence, supports=supports, strength=strength, strong_streak=streak) == pytest.approx(
        expected
    )


@pytest.mark.parametrize("c", [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0])
@pytest.mark.parametrize("strength", [0.1, 0.5, 0.8, 1.0])
@pytest.mark.parametrize("supports", [True, False])
def test_one_ordinary_piece_of_evidence_moves_confidence_by_a_small_step(c, strength, supports):
    after = update_confidence(c, supports=supports, strength=strength, strong_streak=1)
    assert 0.0 <= after <= 1.0
    assert abs(after - c) <= MAX_STEP + 1e-9
    assert (after >= c) if supports else (after <= c)


def test_no_amount_of_agreement_makes_an_opinion_certain():
    c = 0.5
    for _ in range(100):
        c = update_confidence(c, supports=True, strength=1.0)
    assert 0.99 < c < 1.0


def test_only_strong_repeated_contradiction_makes_a_large_jump():
    weak = strong = 0.9
    for streak in (1, 2, 3):
        weak = update_confidence(weak, supports=False, strength=0.5, strong_streak=streak)
        strong = update_confidence(strong, supports=False, strength=0.95, strong_streak=streak)
    assert weak > 0.75  # Three weak contradictions: three small steps.
    assert strong < 0.4  # Two small steps, then the jump.


# --- Matching facts to opinions --------------------------------------------------------------------------
def opinion_fact(content: str, *, c: float | None = None, entity: str = "Peter", kind: str = "opinion", line: int = 1):
    path = "memory/2025-11-27.md"
    entities = (entity,) if entity else ()
    return Fact(fact_id(path, content), kind, content, entities, c, f"{path}#L{line}", dt.date(2025, 11, 27), "retain")


@pytest.mark.parametrize(
    ("text", "negative"),
    [
        ("Likes dark mode.", False),
        ("Does not like dark mode.", True),
        ("Doesn't like dark mode.", True),
        ("Dislikes dark mode.", True),
        ("No longer likes dark mode.", True),
        ("Never uses dark mode.", True),
        ("Doesn't dislike dark mode.", False),
        ("不喜欢深色模式", True),
        ("喜欢深色模式", False),
    ],
)
def test_negation(text, negative):
    assert is_negative(text) is negative


def test_a_statement_and_its_negation_compare_as_the_same_words():
    assert similarity("Likes dark mode in every app.", "Does not like dark mode in every app.") == 1.0
    assert similarity("Likes dark mode.", "Lives in Marrakech.") == 0.0


def test_an_opinion_bullet_without_a_match_becomes_a_new_opinion():
    states: list[OpinionState] = []
    changes = apply_fact(states, opinion_fact("Prefers short replies on WhatsApp.", c=0.95), now=NOW)
    assert len(states) == 1 and states[0].confidence == 0.95 and states[0].supporting == 1
    assert changes[0].created and changes[0].stance == "supports"
    apply_fact(states, opinion_fact("Likes tea.", line=2), now=NOW)
    assert states[1].confidence == DEFAULT_CONFIDENCE


def test_a_fact_that_is_not_an_opinion_creates_none():
    states: list[OpinionState] = []
    assert apply_fact(states, opinion_fact("Lives in Marrakech.", kind="world"), now=NOW) == []
    assert states == []


def test_matching_evidence_supports_or_contradicts_and_counts_once():
    states: list[OpinionState] = []
    apply_fact(states, opinion_fact("Likes dark mode in every app.", c=0.7), now=NOW)
    support = apply_fact(states, opinion_fact("Uses dark mode in every app.", kind="world", line=2), now=NOW)
    assert support[0].stance == "supports" and states[0].confidence > 0.7
    before = states[0].confidence
    against = opinion_fact("Does not like dark mode in every app any more.", c=0.9, line=3)
    contra = apply_fact(states, against, now=NOW)
    assert contra[0].stance == "contradicts" and states[0].confidence < before
    assert states[0].strong_streak == 1 and states[0].contradicting == 1
    assert apply_fact(states, against, now=NOW) == []  # The same fact again: already counted.


def test_evidence_only_reaches_opinions_of_the_same_entity():
    states: list[OpinionState] = []
    apply_fact(states, opinion_fact("Likes dark mode.", c=0.7, entity="Peter"), now=NOW)
    changes = apply_fact(states, opinion_fact("Does not like dark mode.", c=0.9, entity="Anna", line=2), now=NOW)
    assert changes[0].created and changes[0].state.entity == "Anna"
    assert states[0].confidence == 0.7


# --- The table ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_recording_a_fact_twice_changes_nothing_the_second_time():
    first = opinion_fact("Prefers short replies on WhatsApp.", c=0.95)
    assert record_fact(first, run=None, now=NOW)[0].created
    support = opinion_fact("Prefers short replies on WhatsApp, long content in a file.", kind="world", line=5)
    record_fact(support, run=None, now=NOW)
    assert record_fact(support, run=None, now=NOW) == []
    opinion = Opinion.objects.get()
    assert opinion.supporting_count == 2
    assert OpinionEvidence.objects.filter(opinion=opinion).count() == 2
    assert opinion.confidence == pytest.approx(update_confidence(0.95, supports=True, strength=0.6))
    assert opinion.last_updated == NOW


@pytest.mark.django_db
def test_three_strong_contradictions_in_a_row_drop_the_stored_confidence_by_half():
    record_fact(opinion_fact("Likes dark mode in every app.", c=0.9), run=None, now=NOW)
    values = []
    for i in range(3):
        record_fact(
            opinion_fact(f"Does not like dark mode in every app (seen {i}).", c=0.95, line=10 + i), run=None, now=NOW
        )
        values.append(Opinion.objects.get().confidence)
    assert values[0] > 0.8 and values[1] > 0.7  # Small steps…
    assert values[2] == pytest.approx(values[1] / 2, abs=1e-4)  # …then the jump.
    assert Opinion.objects.get().contradiction_streak == 3


@pytest.mark.django_db
def test_the_opinions_api_filters_by_entity_and_shows_the_evidence(client_for):
    record_fact(opinion_fact("Likes dark mode in every app.", c=0.7), run=None, now=NOW)
    record_fact(opinion_fact("Does not like dark mode in every app.", c=0.9, line=4), run=None, now=NOW)
    record_fact(opinion_fact("Prefers tea.", c=0.6, entity="The Castle", line=5), run=None, now=NOW)
    client = client_for("read")

    body = client.get("/api/v1/opinions", {"entity": "@peter"}).json()

    assert [o["statement"] for o in body["items"]] == ["Likes dark mode in every app."]
    opinion = body["items"][0]
    assert [e["source"] for e in opinion["supporting"]] == ["memory/2025-11-27.md#L1"]
    assert [e["source"] for e in opinion["contradicting"]] == ["memory/2025-11-27.md#L4"]
    assert opinion["contradicting"][0]["confidence_before"] == 0.7
    assert 0 < opinion["confidence"] < 0.7
    castle = client.get("/api/v1/opinions", {"entity": "the-castle"}).json()["items"]
    assert [o["entity"] for o in castle] == ["The Castle"]
    one = client.get(f"/api/v1/opinions/{opinion['id']}")
    assert one.status_code == HTTPStatus.OK and one.json()["id"] == opinion["id"]
    assert client.get("/api/v1/opinions/nope").status_code == HTTPStatus.NOT_FOUND


@pytest.mark.django_db
def test_the_opinions_api_needs_a_key(anon_client):
    assert anon_client.get("/api/v1/opinions").status_code == HTTPStatus.UNAUTHORIZED


@pytest.mark.django_db
def test_an_opinion_confidence_outside_zero_one_is_refused_by_the_database():
    from django.db import IntegrityError

    with pytest.raises(IntegrityError):
        Opinion.objects.create(statement="x", fingerprint="f", confidence=1.5, last_updated=timezone.now())
