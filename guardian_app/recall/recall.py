"""Recall: a small, ranked, attributed set of facts from the index (seeds 001, 003 and 004; issue 22).

The steps live in modules named for them: ``query`` (1 and the time scope), ``fulltext`` (2), ``vectors`` (3),
``ranking`` (4 and 6), ``rows`` (the filters); ``recall()`` here runs them.

Relevance first, measured on public data (``guardian_app/recall/recall_eval.py``, BENCHMARKS.md):

1. **Query understanding** (EN and ZH): stop words dropped, English stemmed by the index's tokenizer (FTS5's
   porter, PostgreSQL's ``english``), CJK runs as bigrams without the bigrams of function characters
   (``了``, ``我``, ``的`` …), a time expression ("last month", "in May", "3 weeks ago", "上个月", "五月",
   "before Tomas moved …") taken out of the words and turned into a time scope.
2. **Keyword**: the terms ORed (each a quoted FTS5 string on SQLite, a ``plainto_tsquery`` each on PostgreSQL),
   ranked by BM25 (``ts_rank_cd``), so k is filled with the best partial matches; a chunk with more of the
   words ranks higher by BM25 itself. User input never reaches the FTS syntax.
3. **Vector** (on by default: the local in-wheel model, or an endpoint): cosine similarity over the per-process
   NumPy matrix of the index's vectors (one read per index generation), the filters as a mask.
4. **Fusion**: the seed's weighted merge, ``RECALL_VECTOR_WEIGHT × cosine + RECALL_KEYWORD_WEIGHT × bm25/best``
   (0.5/0.5 by default: on the public evaluation it beat both the seed's 0.7/0.3 and reciprocal-rank fusion,
   ``RECALL_FUSION=rrf``, which stays available).
5. **Time scope**: chunks of daily logs dated inside the scope rank first, the rest fill the remaining places.
6. **Recency and use** are a bounded boost, ``× (1 + RECALL_RECENCY_WEIGHT·2^(−age/half-life)) ×
   (1 + RECALL_DECAY_ACTIVE_WEIGHT·ln(1 + hits))``, for questions without a time scope: an exact match that is a
   year old still beats a vaguer one from today. Durable facts (the five files, bank pages) count as current.
   The seed's age decay belongs to ``mem_items`` and opinions' confidence (``guardian_app.reflect.opinions``), not here.

Conversations are a source too (seed 003's ``sessions``): ``guardian_app.recall.transcripts.index_sessions`` indexes stored
turns as they arrive; their results have ``origin: "transcript"`` and ``<session id>#<turn>`` sources.
Filters (``since``, ``until``, ``kind``, ``entity``, ``file``) apply before ranking, in the same query.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import F
from django.utils import timezone

from guardian_app.models import MemoryChunk, RecallKind
from guardian_app.recall.embeddings import EmbeddingConfig, EmbeddingError, current_config, embed_query
from guardian_app.recall.fulltext import keyword_search, newest
from guardian_app.recall.query import (
    CJK_STOP_WORDS,
    MAX_QUERY_CHARS,
    STOP_WORDS,
    InvalidRecallQuery,
    TimeScope,
    parse_time,
    query_terms,
    time_scope,
)
from guardian_app.recall.ranking import Ranked, Scores, merge_scores, rank
from guardian_app.recall.rows import Filters, Meta, as_datetime, as_list, fetch
from guardian_app.recall.vectors import vector_search

logger = logging.getLogger(__name__)

MAX_K = 100
MODES = ("auto", "keyword", "hybrid")


@dataclass
class RecallResult:
    id: int
    kind: str | None
    timestamp: dt.datetime
    entities: list[str]
    confidence: float | None
    content: str
    path: str
    start_line: int
    end_line: int
    heading: str
    score: float
    vector: float | None
    keyword: float
    decay: float
    hits: int

    @property
    def origin(self) -> str:
        """``memory`` (a workspace file) or ``transcript`` (a stored conversation turn)."""
        return "transcript" if self.path.startswith("sessions/") else "memory"

    @property
    def source(self) -> str:
        """``USER.md#L4``, ``memory/2026-02-03.md#L6-L9``, or ``<session id>#<turn number>`` for a transcript."""
        if self.path.startswith("sessions/"):
            return f"{self.path.removeprefix('sessions/')}#{self.start_line}"
        if self.start_line == self.end_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    @property
    def score_parts(self) -> dict[str, float | None]:
        return {"vector": self.vector, "keyword": self.keyword, "decay": self.decay}

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "timestamp": self.timestamp.isoformat(),
            "entities": self.entities,
            "confidence": self.confidence,
            "content": self.content,
            "source": self.source,
            "origin": self.origin,
            "heading": self.heading,
            "score": round(self.score, 6),
            "score_parts": {k: (round(v, 6) if v is not None else None) for k, v in self.score_parts.items()},
            "hits": self.hits,
        }


@dataclass
class RecallAnswer:
    query: str
    mode: str  # "keyword" | "hybrid"
    results: list[RecallResult]
    terms: list[str]
    operator: str  # "AND" | "OR": how the keyword terms were joined
    filters: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    took_ms: float = 0.0
    scope: TimeScope | None = None

    @property
    def time_scope(self) -> dict[str, Any] | None:
        return self.scope.as_dict() if self.scope else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "note": self.note,
            "terms": self.terms,
            "operator": self.operator,
            "time_scope": self.time_scope,
            "filters": {k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in self.filters.items()},
            "took_ms": round(self.took_ms, 2),
            "results": [r.as_dict() for r in self.results],
        }


def _snippet(text: str) -> str:
    limit = settings.RECALL_SNIPPET_MAX_CHARS
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _event_date(event: str, filters: Filters) -> dt.datetime | None:
    """The date of the daily-log chunk that best matches ``event`` ("Tomas moved to day shifts"), or None."""
    meta: dict[int, Meta] = {}
    found, _ = keyword_search(query_terms(event), replace(filters, dated=True), 1, meta=meta)
    if not found:
        return None
    return as_datetime(meta[next(iter(found))][0])


def _resolve_scope(scope: TimeScope | None, filters: Filters) -> TimeScope | None:
    if scope is None or not scope.phrase.startswith(("before:", "after:")):
        return scope
    side, _, event = scope.phrase.partition(":")
    anchor = _event_date(event, filters)
    if anchor is None:
        return None
    if side == "before":
        return TimeScope(None, anchor, scope.phrase)
    return TimeScope(anchor + dt.timedelta(days=1), None, scope.phrase)


def _scoped(filters: Filters, scope: TimeScope) -> Filters:
    since = max((t for t in (filters.since, scope.start) if t is not None), default=None)
    until = min((t for t in (filters.until, scope.end) if t is not None), default=None)
    return replace(filters, since=since, until=until, dated=True)


def recall(
    query: str,
    *,
    k: int | None = None,
    since: str | dt.datetime | None = None,
    until: str | dt.datetime | None = None,
    kind: str | None = None,
    entity: str | None = None,
    file: str | None = None,
    mode: str = "auto",
    now: dt.datetime | None = None,
    query_vector: np.ndarray | None = None,
) -> RecallAnswer:
    """The ``k`` best facts for ``query``: keyword and vector candidates, fused, time-scoped, boosted.

    1. Take a time expression out of the query (``time_scope``); ``before X`` is dated by searching for X.
    2. Search keyword (BM25, terms ORed) and, unless ``mode="keyword"``, vectors; fuse (``RECALL_FUSION``).
    3. With a time scope, search again inside it (daily logs dated in the window): those rank first, the
       unscoped candidates fill the rest of k. Without one, apply the bounded recency and use boost.
    ``mode`` is ``auto`` (hybrid when an embedder is configured: the local model by default), ``keyword`` or
    ``hybrid``. When the embedder is missing or fails, the answer is keyword-only and its ``note`` says why.
    Raises InvalidRecallQuery for a bad ``k``, ``kind``, ``mode`` or time.
    """
    started = time.perf_counter()
    now = now or timezone.now()
    k = settings.RECALL_DEFAULT_K if k is None else k
    _check_arguments(k=k, mode=mode, kind=kind)
    query = (query or "").strip()[:MAX_QUERY_CHARS]
    filters = Filters(
        since=parse_time(since, now=now),
        until=parse_time(until, now=now, end_of_day=True),
        kind=kind or None,
        entity=(entity or "").strip() or None,
        file=(file or "").strip() or None,
    )
    scope, rest = time_scope(query, now=now)
    terms = query_terms(rest)
    if scope is not None and all(t in STOP_WORDS or t in CJK_STOP_WORDS for t in terms):
        terms = []  # "What did I do last month?": the scope is the whole question.
    scope = _resolve_scope(scope, filters)
    search = _Search(terms=terms, candidates=max(50, 4 * k))
    note = search.embed(mode, rest if scope is not None and rest.strip() else query, query_vector)
    merged, operator = search.run(filters)
    scoped: Scores = search.run(_scoped(filters, scope))[0] if scope is not None else {}
    if not terms and not merged and not scoped:
        note = note or "The query has no words to search for."
    ranked = rank(scoped, merged, search.meta, now=now, k=k, recency=scope is None)
    return RecallAnswer(
        query=query,
        mode="hybrid" if search.hybrid else "keyword",
        results=_results(ranked, scoped, merged, hybrid=search.hybrid),
        terms=terms,
        operator=operator,
        filters=filters.as_dict(),
        note=note,
        took_ms=(time.perf_counter() - started) * 1000,
        scope=scope,
    )


def _check_arguments(*, k: int, mode: str, kind: str | None) -> None:
    if not 1 <= k <= MAX_K:
        raise InvalidRecallQuery(f"k must be between 1 and {MAX_K}.", details={"k": k})
    if mode not in MODES:
        raise InvalidRecallQuery(f"mode must be one of {', '.join(MODES)}.", details={"mode": mode})
    if kind and kind not in RecallKind.values:
        raise InvalidRecallQuery(f"kind must be one of {', '.join(RecallKind.values)}.", details={"kind": kind})


@dataclass
class _Search:
    """One question's searches: its terms, its vector when hybrid, and the candidates' ranking columns as read."""

    terms: list[str]
    candidates: int
    hybrid: bool = False
    config: EmbeddingConfig | None = None
    query_vector: np.ndarray | None = None
    meta: dict[int, Meta] = field(default_factory=dict)

    def embed(self, mode: str, text: str, query_vector: np.ndarray | None) -> str | None:
        """Hybrid or keyword-only, and the question's vector; returns the note that says why keyword-only."""
        note = None
        self.config = current_config()
        self.hybrid = mode != "keyword" and self.config is not None
        if mode == "hybrid" and not self.hybrid:
            note = "No embedder is configured (EMBEDDING_PROVIDER, EMBEDDING_BASE_URL): keyword-only recall."
        elif mode == "auto" and not self.hybrid:
            note = "Keyword-only recall: no embedder is configured."
        elif mode == "keyword":
            note = "Keyword-only recall, as asked."
        if self.hybrid and query_vector is None and text:
            try:
                query_vector = embed_query(text, config=self.config)
            except EmbeddingError as exc:
                logger.warning("recall: %s; answering keyword-only", exc)
                self.hybrid = False
                note = f"Keyword-only recall: the embedder failed ({exc})."
        self.query_vector = query_vector
        return note

    def run(self, within: Filters) -> tuple[Scores, str]:
        """Keyword and vector candidates that pass ``within``, fused; and how the keyword terms were joined."""
        keyword, operator = keyword_search(self.terms, within, self.candidates, meta=self.meta)
        vector: dict[int, float] = {}
        if self.hybrid and self.query_vector is not None:
            vector = vector_search(self.query_vector, self.config.label, within, self.candidates)
        if not self.terms and not vector and within.dated:
            keyword = newest(within, self.candidates, self.meta)
        merged = merge_scores(
            keyword,
            vector,
            vector_weight=settings.RECALL_VECTOR_WEIGHT,
            keyword_weight=settings.RECALL_KEYWORD_WEIGHT,
            hybrid=self.hybrid and bool(vector),
            fusion=settings.RECALL_FUSION,
            rrf_k=settings.RECALL_RRF_K,
        )
        return merged, operator


def _results(ranked: list[Ranked], scoped: Scores, merged: Scores, *, hybrid: bool) -> list[RecallResult]:
    """The ranked candidates as results, with the columns read for these k only."""
    details = {
        row[0]: row[1:]
        for row in fetch("c.kind, c.entities, c.confidence, c.content, c.end_line, c.heading", [r[4] for r in ranked])
    }
    results: list[RecallResult] = []
    for group, score, path, start_line, chunk_id, timestamp, hits, boost in ranked:
        kind, entities, confidence, content, end_line, heading = details[chunk_id]
        _, v, kw = (scoped if group == 0 else merged)[chunk_id]
        results.append(
            RecallResult(
                id=chunk_id,
                kind=kind,
                timestamp=timestamp,
                entities=as_list(entities),
                confidence=confidence,
                content=_snippet(content),
                path=path,
                start_line=start_line,
                end_line=end_line,
                heading=heading,
                score=score,
                vector=v if hybrid else None,
                keyword=kw,
                decay=boost,
                hits=hits,
            )
        )
    return results


def record_hits(ids: list[int], *, now: dt.datetime | None = None) -> int:
    """The agent used these results: bump their hit counts (the decay's activity boost). Unknown ids are ignored."""
    unique = sorted({int(i) for i in ids})
    if not unique:
        return 0
    return MemoryChunk.objects.filter(id__in=unique).update(hits=F("hits") + 1, last_hit_at=now or timezone.now())
