"""Recall's ranking: the keyword and vector candidates fused, then boosted by recency and use.

**Fusion**: the seed's weighted merge, ``RECALL_VECTOR_WEIGHT × cosine + RECALL_KEYWORD_WEIGHT × bm25/best``
(0.5/0.5 by default: on the public evaluation it beat both the seed's 0.7/0.3 and reciprocal-rank fusion,
``RECALL_FUSION=rrf``, which stays available).

**Recency and use** are a bounded boost, ``× (1 + RECALL_RECENCY_WEIGHT·2^(−age/half-life)) ×
(1 + RECALL_DECAY_ACTIVE_WEIGHT·ln(1 + hits))``, for questions without a time scope: an exact match that is a
year old still beats a vaguer one from today. Durable facts (the five files, bank pages) count as current.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from guardian_app.recall.rows import META_COLUMNS, Meta, as_datetime, fetch
from reflection_site.decay import recall_boost

# A ranked candidate: (group: 0 inside the time scope, 1 outside; score; path; start_line; chunk id; timestamp;
# hits; boost). Sorted by group, then score (best first), then path and line.
Ranked = tuple[int, float, str, int, int, dt.datetime, int, float]
Scores = dict[int, tuple[float, float, float]]  # {chunk id: (merged, vector part, keyword part)}


def merge_scores(
    keyword: dict[int, float],
    vector: dict[int, float],
    *,
    vector_weight: float,
    keyword_weight: float,
    hybrid: bool,
    fusion: str = "weighted",
    rrf_k: int = 60,
) -> dict[int, tuple[float, float, float]]:
    """``{id: (merged, vector part, keyword part)}``; the parts are each list's scores normalised to [0, 1].

    ``weighted`` (seed 003 §3.4): ``vector_weight × cosine + keyword_weight × bm25 / best bm25``.
    ``rrf``: ``Σ 1 / (rrf_k + rank)`` over the two lists, scaled so that first in both is 1: ranks only, so
    BM25's unbounded scores and the model's narrow band of cosines need no normalisation that could be wrong.
    """
    best = max(keyword.values(), default=0.0)
    keyword_norm = {i: (s / best if best > 0 else 0.0) for i, s in keyword.items()}
    vector_norm = {i: min(1.0, max(0.0, s)) for i, s in vector.items()}
    merged: dict[int, tuple[float, float, float]] = {}
    if hybrid and fusion == "rrf":
        keyword_rank = {i: r for r, i in enumerate(sorted(keyword, key=lambda i: (-keyword[i], i)), start=1)}
        vector_rank = {i: r for r, i in enumerate(sorted(vector, key=lambda i: (-vector[i], i)), start=1)}
        top = 2 / (rrf_k + 1)
        for chunk_id in keyword.keys() | vector.keys():
            fused = sum(1 / (rrf_k + ranks[chunk_id]) for ranks in (keyword_rank, vector_rank) if chunk_id in ranks)
            merged[chunk_id] = (fused / top, vector_norm.get(chunk_id, 0.0), keyword_norm.get(chunk_id, 0.0))
        return merged
    for chunk_id in keyword_norm.keys() | vector_norm.keys():
        v = vector_norm.get(chunk_id, 0.0)
        k = keyword_norm.get(chunk_id, 0.0)
        merged[chunk_id] = ((vector_weight * v + keyword_weight * k) if hybrid else k, v, k)
    return merged


def is_durable(path: str) -> bool:
    """The five files and bank pages hold facts that stay true until edited: they never age in ranking.

    Daily logs (``memory/``) and conversations (``sessions/``) are dated and do.
    """
    return not path.startswith(("memory/", "sessions/"))


def boost_factor(
    age_days: float | None, hits: int, *, half_life_days: float, recency_weight: float, active_weight: float
) -> float:
    """``reflection_site.decay.recall_boost``: ``(1 + recency_weight·2^(−age/half_life)) × (1 + active_weight·ln(1 +
    hits))``; ``age_days=None``: durable.

    Bounded: with the defaults, today's chunk gets at most 10 % over one of any age, so recency only breaks
    near-ties. A durable fact gets the full recency part.
    """
    return recall_boost(
        age_days, hits, half_life_days=half_life_days, recency_weight=recency_weight, active_weight=active_weight
    )


def rank(
    scoped: Scores, merged: Scores, meta: dict[int, Meta], *, now: dt.datetime, k: int, recency: bool
) -> list[Ranked]:
    """The ``k`` best candidates: those found inside the time scope (``scoped``) first, then the others.

    Every candidate is ranked on the few columns the boost needs (``meta``; read here for those the searches
    did not return them for); ``recency=False`` (a time-scoped question) leaves only the use part of the boost.
    Candidates below ``RECALL_MIN_SCORE`` (seed 004's recallMinScore) are dropped.
    """
    missing = [chunk_id for chunk_id in merged.keys() | scoped.keys() if chunk_id not in meta]
    meta.update({row[0]: row[1:] for row in fetch(META_COLUMNS, missing)})
    half_life = settings.RECALL_DECAY_HALF_LIFE_DAYS
    recency_weight = settings.RECALL_RECENCY_WEIGHT if recency else 0.0
    active_weight = settings.RECALL_DECAY_ACTIVE_WEIGHT
    boost_on = settings.RECALL_DECAY_ENABLED
    ranked: list[Ranked] = []
    for group, scores in enumerate((scoped, merged)):
        for chunk_id, (base, _, _) in scores.items():
            if chunk_id not in meta or (group == 1 and chunk_id in scoped):
                continue  # Deleted since the vector matrix was loaded, or already ranked inside the scope.
            raw_time, hits, path, start_line = meta[chunk_id]
            timestamp = as_datetime(raw_time)
            age = None if is_durable(path) else (now - timestamp).total_seconds() / 86400
            boost = (
                boost_factor(
                    age, hits, half_life_days=half_life, recency_weight=recency_weight, active_weight=active_weight
                )
                if boost_on
                else 1.0
            )
            ranked.append((group, base * boost, path, start_line, chunk_id, timestamp, hits, boost))
    ranked.sort(key=lambda r: (r[0], -r[1], r[2], r[3]))
    min_score = settings.RECALL_MIN_SCORE
    return [r for r in ranked if r[1] >= min_score][:k]
