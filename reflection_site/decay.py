"""Age and use as numbers: one half-life, and the two ways the apps combine it with use. Django-free: the
caller passes its settings (``LEARNING_DECAY_*``, ``RECALL_*``).

- ``decayed_score`` (seed 004 P1-001, the learning guardrails' memory items and rules):
  ``base × 2^(−age/half_life) × (1 + active_weight·ln(1 + hits))``, kept within [0, 1].
- ``recall_boost`` (recall's ranking): ``(1 + recency_weight·2^(−age/half_life)) × (1 + active_weight·ln(1 + hits))``,
  a bounded boost, so recency only breaks near-ties.

Both read age and use the same way (``half_life`` and ``use_factor``): a negative age counts as 0, negative hits
as none, a half-life of 0 or less turns decay off, and an age of None (a durable fact) is fresh.
"""

from __future__ import annotations

import math


def half_life(age_days: float | None, half_life_days: float) -> float:
    """``2^(−age/half_life)``: 1 when new, ½ after one half-life; 1 for no age or no half-life."""
    if age_days is None or half_life_days <= 0:
        return 1.0
    return math.pow(2, -max(0.0, age_days) / half_life_days)


def use_factor(hits: int, weight: float) -> float:
    """``1 + weight·ln(1 + hits)``: each use counts less than the one before."""
    return 1 + weight * math.log1p(max(0, hits))


def decayed_score(base: float, *, age_days: float, hits: int, half_life_days: float, active_weight: float) -> float:
    """A learned item's score after ``age_days`` with ``hits`` uses, within [0, 1]."""
    return min(1.0, max(0.0, base * half_life(age_days, half_life_days) * use_factor(hits, active_weight)))


def recall_boost(
    age_days: float | None, hits: int, *, half_life_days: float, recency_weight: float, active_weight: float
) -> float:
    """The factor recall multiplies a result's relevance by; ``age_days=None`` (a durable fact) is fresh."""
    return (1 + recency_weight * half_life(age_days, half_life_days)) * use_factor(hits, active_weight)
