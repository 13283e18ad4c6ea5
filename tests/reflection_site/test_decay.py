"""One half-life and the two compositions of age and use (reflection_site.decay), pinned to today's values."""

from __future__ import annotations

import math

import pytest

from reflection_site.decay import decayed_score, half_life, recall_boost, use_factor


def test_half_life_halves_per_half_life_and_is_off_without_one():
    assert half_life(0, 30) == 1.0
    assert half_life(30, 30) == 0.5
    assert half_life(90, 30) == 0.125
    assert half_life(-5, 30) == 1.0  # a time in the future is new
    assert half_life(400, 0) == 1.0 and half_life(400, -1) == 1.0  # decay off
    assert half_life(None, 30) == 1.0  # a durable fact


def test_use_counts_less_each_time():
    assert use_factor(0, 0.1) == 1.0
    assert use_factor(-3, 0.1) == 1.0
    assert use_factor(3, 0.1) == pytest.approx(1 + 0.1 * math.log(4), rel=1e-12)


def test_the_learning_score_is_base_times_half_life_times_use_within_0_and_1():
    # Seed 004 P1-001 with the defaults (LEARNING_DECAY_HALF_LIFE_DAYS=30, LEARNING_DECAY_ACTIVE_WEIGHT=0.1).
    assert decayed_score(0.8, age_days=30, hits=0, half_life_days=30, active_weight=0.1) == pytest.approx(0.4)
    assert decayed_score(0.5, age_days=10, hits=3, half_life_days=30, active_weight=0.1) == pytest.approx(
        0.45186539117153235, rel=1e-12
    )
    assert decayed_score(0.9, age_days=0, hits=100, half_life_days=30, active_weight=0.1) == 1.0
    assert decayed_score(-0.2, age_days=0, hits=0, half_life_days=30, active_weight=0.1) == 0.0


def test_the_recall_boost_is_bounded_and_a_durable_fact_is_fresh():
    # RECALL_RECENCY_WEIGHT=0.1, RECALL_DECAY_HALF_LIFE_DAYS=30 and an active weight of 0.05.
    kwargs = {"half_life_days": 30, "recency_weight": 0.1, "active_weight": 0.05}
    assert recall_boost(0, 0, **kwargs) == pytest.approx(1.1)
    assert recall_boost(None, 0, **kwargs) == pytest.approx(1.1)
    assert recall_boost(30, 3, **kwargs) == pytest.approx(1.1227804539587942, rel=1e-12)
    assert recall_boost(10_000, 0, **kwargs) == pytest.approx(1.0)
    assert recall_boost(10_000, 0, half_life_days=0, recency_weight=0.1, active_weight=0.05) == pytest.approx(1.1)
