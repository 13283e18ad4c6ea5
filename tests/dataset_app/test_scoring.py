"""The quality score: three documented deterministic factors in [0, 1] and their weighted mean."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataset_app.scoring import (
    Evidence,
    QualityWeights,
    ScoringInput,
    content_tokens,
    conversation_clarity,
    decision_confidence,
    fact_verifiability,
    score_sample,
)


def test_a_clear_message_with_a_reply_is_fully_clear():
    assert conversation_clarity("I prefer morning check-ins with the team.", "Noted.") == 1.0


def test_clarity_grows_with_length_up_to_four_words():
    assert conversation_clarity("", "ok") == 0.0
    assert conversation_clarity("hi", "hello") == 0.25
    assert conversation_clarity("I like tea", "ok") == 0.75


def test_an_empty_reply_costs_some_clarity():
    assert conversation_clarity("I prefer morning check-ins.", "") == 0.85


def test_code_and_noise_are_less_clear_than_prose():
    prose = conversation_clarity("Please remember that the deploy runs on Fridays.", "ok")
    noise = conversation_clarity("$ x=1; y=[2,3]; {k:v} 0x1f 0x2e >> /dev/null && 42 || 99", "ok")
    assert noise < prose


def test_repetition_and_walls_of_text_lower_clarity():
    assert conversation_clarity("buy " * 40, "ok") < 0.7
    assert conversation_clarity(" ".join(f"word{i}" for i in range(2000)), "ok") < 0.6


def test_chinese_counts_as_words():
    assert conversation_clarity("我喜欢喝绿茶,不喝咖啡。", "好的") == 1.0


def test_decision_confidence_ranks_the_evidence():
    values = [
        decision_confidence(evidence=e) for e in ("correction", "rollback", "stood", "refusal", "feedback", "none")
    ]
    assert values == sorted(values, reverse=True)
    assert values[0] == 1.0 and values[-1] == 0.5


def test_the_gates_own_confidence_counts_only_when_it_was_right():
    assert decision_confidence(evidence=Evidence.STOOD, gate_confidence=1.0) == pytest.approx(0.84)
    assert decision_confidence(evidence=Evidence.STOOD, gate_confidence=0.0) == pytest.approx(0.64)
    assert decision_confidence(evidence=Evidence.ROLLBACK, agrees_with_gate=False, gate_confidence=1.0) == 0.9


def test_feedback_moves_confidence():
    assert decision_confidence(evidence=Evidence.STOOD, feedback="up") == pytest.approx(0.9)
    assert decision_confidence(evidence=Evidence.STOOD, feedback="down") == pytest.approx(0.55)
    assert decision_confidence(evidence=Evidence.ROLLBACK, agrees_with_gate=False, feedback="down") == 1.0


def test_a_fact_in_the_users_words_is_verifiable():
    assert fact_verifiability("Prefers morning check-ins.", user_message="I prefer morning check-ins.") == 1.0


def test_a_fact_the_user_never_said_is_not():
    assert fact_verifiability("Owns a yacht in Monaco.", user_message="I prefer morning check-ins.") == 0.0


def test_a_fact_found_only_in_the_context_is_partly_verifiable():
    value = fact_verifiability(
        "Works at Acme Corp.", user_message="Yes, that one.", conversation=["Do you still work at Acme Corp?"]
    )
    assert value == pytest.approx(0.25)


def test_chinese_facts_are_grounded_by_character_bigrams():
    assert fact_verifiability("喜欢喝绿茶", user_message="我喜欢喝绿茶,不喝咖啡。") == 1.0


def test_a_one_word_fact_is_too_vague_to_be_fully_verifiable():
    assert fact_verifiability("Tea.", user_message="Tea please") == 0.5


def test_no_fact_is_judged_by_its_reason():
    assert (
        fact_verifiability(None, user_message="x", reason="Small talk, nothing to keep.", reason_by_person=True) == 1.0
    )
    assert fact_verifiability(None, user_message="x", reason="No.", reason_by_person=True) == 0.8
    assert fact_verifiability(None, user_message="x", reason="Duplicate of an existing line.") == 0.6
    assert fact_verifiability(None, user_message="x") == 0.4


def test_the_score_is_the_weighted_mean_with_the_seeds_weights():
    signals = ScoringInput(
        user_message="I prefer morning check-ins.",
        agent_reply="Noted.",
        fact="Prefers morning check-ins.",
        evidence=Evidence.STOOD,
    )
    result = score_sample(signals, weights=QualityWeights())
    assert result.factors == {"conversationClarity": 1.0, "decisionConfidence": 0.8, "factVerifiability": 1.0}
    assert result.score == pytest.approx(0.4 * 1.0 + 0.35 * 0.8 + 0.25 * 1.0)


def test_weights_are_configurable(settings):
    settings.DATASET_WEIGHT_CONVERSATION_CLARITY = 0
    settings.DATASET_WEIGHT_DECISION_CONFIDENCE = 1
    settings.DATASET_WEIGHT_FACT_VERIFIABILITY = 0
    result = score_sample(ScoringInput(user_message="hi", evidence=Evidence.ROLLBACK, agrees_with_gate=False))
    assert result.score == 0.9


def test_content_tokens_drop_stop_words_and_stem():
    assert content_tokens("The user prefers morning coffee") == {"prefer", "morn", "coffee"}
    assert content_tokens("我喜欢喝绿茶") == {"喜欢", "欢喝", "喝绿", "绿茶"}


def test_content_tokens_read_words_as_reflection_site_text_does():
    """Issue 20: scoring's own word pattern, stemmer and stop words gave way to ``reflection_site.text``. Decided:
    a hyphen splits a word (``check-ins`` was one token), the one stemmer reads ``likes`` as ``like`` (the copy made
    it ``lik``) and leaves ``ins``, a word of one letter or digit counts (the copy dropped it), and non-ASCII
    letters stay inside their word (``café`` was ``caf``). Text a person wrote is read the same in every app."""
    assert content_tokens("The user likes morning check-ins") == {"like", "morn", "check", "ins"}
    assert content_tokens("Uses C on 5 boards") == {"use", "c", "5", "board"}
    assert content_tokens("Orders a café au lait") == {"order", "café", "au", "lait"}
    assert conversation_clarity("check-ins") == conversation_clarity("check ins")  # two words either way


@given(
    user=st.text(max_size=300),
    reply=st.text(max_size=50),
    fact=st.one_of(st.none(), st.text(max_size=100)),
    evidence=st.sampled_from(["correction", "rollback", "stood", "refusal", "feedback", "none", "unknown"]),
    agrees=st.booleans(),
    confidence=st.one_of(st.none(), st.floats(min_value=-5, max_value=5)),
    feedback=st.sampled_from([None, "up", "down"]),
)
def test_every_score_and_factor_stays_in_range_and_is_deterministic(
    user, reply, fact, evidence, agrees, confidence, feedback
):
    signals = ScoringInput(
        user_message=user,
        agent_reply=reply,
        fact=fact,
        evidence=evidence,
        agrees_with_gate=agrees,
        gate_confidence=confidence,
        feedback=feedback,
    )
    first = score_sample(signals, weights=QualityWeights())
    assert 0.0 <= first.score <= 1.0
    assert all(0.0 <= value <= 1.0 for value in first.factors.values())
    assert score_sample(signals, weights=QualityWeights()) == first
