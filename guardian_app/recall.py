"""Recall: a small, ranked, attributed set of facts from the index (seeds 001, 003 and 004).

1. **Keyword**: the query's words (CJK as bigrams, see ``guardian_app.chunking``) are each quoted and
   ANDed; when that finds nothing they are ORed (seed 003's query builder). User input never reaches the
   FTS syntax: only letters and digits survive tokenising, each term is a quoted string on SQLite and a
   ``plainto_tsquery`` parameter on PostgreSQL. SQLite ranks with FTS5's BM25, PostgreSQL with
   ``ts_rank_cd`` over a GIN-indexed tsvector.
2. **Vector** (when an embedding endpoint is configured): cosine similarity against every chunk's vector,
   by NumPy brute force over a per-process matrix that is reloaded when the index changes; above
   ``RECALL_BRUTE_FORCE_MAX_CHUNKS`` vectors on SQLite, by sqlite-vec's ``vec_distance_cosine`` when the
   extension loads (NumPy otherwise).
3. **Hybrid merge** (seed 003 §3.4): keyword scores are divided by the best one (BM25 has no upper bound),
   vector scores are cosine similarities clipped to [0, 1]; ``RECALL_VECTOR_WEIGHT × vector +
   RECALL_KEYWORD_WEIGHT × keyword``. Keyword-only recall uses the keyword score alone, and says so.
4. **Decay** (seed 004 P1-001): ``score × 2^(−age_days / RECALL_DECAY_HALF_LIFE_DAYS) × (1 + 0.1·ln(1 + hits))``.

Filters (``since``, ``until``, ``kind``, ``entity``, ``file``) apply before ranking, in the same query.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import re
import threading
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import F
from django.utils import timezone

from guardian_app.chunking import MAX_TOKEN_CHARS, WORD, is_cjk
from guardian_app.embeddings import EmbeddingConfig, EmbeddingError, current_config, embed_query, from_blob
from guardian_app.index import index_generation
from guardian_app.models import MemoryChunk, RecallKind
from guardian_app.retain import entity_key
from reflection_site.errors import ReflectionError

logger = logging.getLogger(__name__)

MAX_TERMS = 24
MAX_K = 100
MAX_QUERY_CHARS = 1000
MODES = ("auto", "keyword", "hybrid")

# Question words and function words: "what did we decide about the staging server" searches for
# "decide staging server". Only dropped when something else is left.
STOP_WORDS = frozenset(
    """a about above after again all also am an and any are as at be been before being below between both but by
    can could did do does doing done down during each else ever every few for from further had has have having he
    her here hers herself him himself his how i if in into is it its itself just know let me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own please same she should so some such
    tell than that the their theirs them themselves then there these they this those through to too under until up
    us very was we were what when where which while who whom whose why will with would you your yours yourself
    yourselves s t d ll m re ve""".split()
)
CJK_STOP_WORDS = frozenset(
    "什么 我们 你们 他们 关于 怎么 哪些 是否 知道 一下 这个 那个 哪个 有没 没有 的 了 吗 呢 吧 是".split()
)


class InvalidRecallQuery(ReflectionError):
    code = "invalid_query"
    status = HTTPStatus.UNPROCESSABLE_ENTITY


# --- Query parsing --------------------------------------------------------------------------------------
_RELATIVE = re.compile(r"^\s*(\d{1,6})\s*([hdwmy])\s*$", re.IGNORECASE)
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}


def parse_time(
    value: str | dt.date | dt.datetime | None, *, now: dt.datetime, end_of_day: bool = False
) -> dt.datetime | None:
    """``30d`` / ``12h`` / ``2w`` / ``6m`` / ``1y`` before ``now``, or an ISO date or time (naive = the server's zone).

    A bare date as an upper bound means the end of that day (``until=2026-02-03`` includes the 3rd).
    """
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value if timezone.is_aware(value) else timezone.make_aware(value)
    if isinstance(value, dt.date):
        value = value.isoformat()
    text = str(value).strip()
    relative = _RELATIVE.match(text)
    if relative:
        return now - dt.timedelta(days=int(relative.group(1)) * _UNIT_DAYS[relative.group(2).lower()])
    try:
        if len(text) == 10:
            day = dt.date.fromisoformat(text)
            moment = dt.datetime.combine(day + dt.timedelta(days=1) if end_of_day else day, dt.time())
        else:
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidRecallQuery(
            f"{text[:40]!r} is not a time: use 30d, 12h, 2w, 6m, 1y, or an ISO date such as 2026-02-03.",
            details={"value": text[:40]},
        ) from exc
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


def query_terms(query: str) -> list[str]:
    """The query's search terms: lower-cased words, CJK runs as bigrams, stop words dropped, each once."""
    words: list[str] = []
    for match in WORD.finditer(unicodedata.normalize("NFKC", query)):
        word = match.group()
        if is_cjk(word[0]):
            words.extend([word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)])
        else:
            words.append(word[:MAX_TOKEN_CHARS].lower())
    words = list(dict.fromkeys(words))
    content = [w for w in words if w not in STOP_WORDS and w not in CJK_STOP_WORDS]
    return (content or words)[:MAX_TERMS]


def fts5_query(terms: list[str], operator: str = "AND") -> str:
    """Seed 003's ``buildFtsQuery``: each term a quoted FTS5 string (quotes doubled), joined by AND or OR."""
    if operator not in ("AND", "OR"):
        raise ValueError(operator)
    return f" {operator} ".join('"' + term.replace('"', '""') + '"' for term in terms)


@dataclass(frozen=True)
class Filters:
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    kind: str | None = None
    entity: str | None = None
    file: str | None = None

    def sql(self, alias: str = "c") -> tuple[str, list[Any]]:
        """`` AND …`` conditions on the chunks table and their parameters."""
        parts: list[str] = []
        params: list[Any] = []
        adapt = connection.ops.adapt_datetimefield_value
        if self.since is not None:
            parts.append(f"{alias}.timestamp >= %s")
            params.append(adapt(self.since))
        if self.until is not None:
            parts.append(f"{alias}.timestamp < %s")
            params.append(adapt(self.until))
        if self.kind:
            parts.append(f"{alias}.kind = %s")
            params.append(self.kind)
        if self.entity:
            parts.append(f"{alias}.entity_keys LIKE %s ESCAPE '\\'")
            params.append(f"%|{_like_escape(entity_key(self.entity))}|%")
        if self.file:
            if self.file.endswith("/"):
                parts.append(f"{alias}.path LIKE %s ESCAPE '\\'")
                params.append(_like_escape(self.file) + "%")
            else:
                parts.append(f"{alias}.path = %s")
                params.append(self.file)
        return "".join(f" AND {p}" for p in parts), params

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# --- Keyword search ---------------------------------------------------------------------------------------
# What ranking needs of a candidate, read with its score: (timestamp, hits, path, start_line).
Meta = tuple[Any, int, str, int]
_META_COLUMNS = "c.timestamp, c.hits, c.path, c.start_line"


def keyword_search(
    terms: list[str], filters: Filters, limit: int, *, meta: dict[int, Meta] | None = None
) -> tuple[dict[int, float], str]:
    """``({chunk id: raw score, higher is better}, "AND"|"OR")``; AND first, OR when AND finds nothing.

    ``meta`` (if given) receives each found chunk's ranking columns, saving a query.
    """
    if not terms:
        return {}, "AND"
    for operator in ("AND", "OR") if len(terms) > 1 else ("AND",):
        rows = _keyword_query(terms, operator, filters, limit)
        if rows:
            if meta is not None:
                meta.update({row[0]: row[2:] for row in rows})
            return {row[0]: row[1] for row in rows}, operator
    return {}, "AND" if len(terms) == 1 else "OR"


def _keyword_query(terms: list[str], operator: str, filters: Filters, limit: int) -> list[tuple]:
    where, params = filters.sql("c")
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            if where:
                sql = (
                    f"SELECT c.id, -bm25(memory_index_chunks_fts), {_META_COLUMNS} FROM memory_index_chunks_fts "
                    "JOIN memory_index_chunks c ON c.id = memory_index_chunks_fts.rowid "
                    f"WHERE memory_index_chunks_fts MATCH %s{where} ORDER BY bm25(memory_index_chunks_fts) LIMIT %s"
                )
            else:  # FTS5 ranks and limits on its own first: the join then touches only the best rows.
                sql = (
                    f"SELECT c.id, x.score, {_META_COLUMNS} FROM (SELECT rowid AS id, -rank AS score "
                    "FROM memory_index_chunks_fts WHERE memory_index_chunks_fts MATCH %s ORDER BY rank LIMIT %s) x "
                    "JOIN memory_index_chunks c ON c.id = x.id"
                )
            cursor.execute(sql, [fts5_query(terms, operator), *params, limit])
        elif connection.vendor == "postgresql":
            if operator == "AND":
                tsquery, query_params = "plainto_tsquery('english', %s)", [" ".join(terms)]
            else:
                tsquery = "(" + " || ".join(["plainto_tsquery('english', %s)"] * len(terms)) + ")"
                query_params = list(terms)
            sql = (
                f"SELECT c.id, ts_rank_cd(c.search_vector, q.query, 1) AS score, {_META_COLUMNS} "
                f"FROM memory_index_chunks c, (SELECT {tsquery} AS query) q "
                f"WHERE c.search_vector @@ q.query{where} ORDER BY score DESC, c.id LIMIT %s"
            )
            cursor.execute(sql, [*query_params, *params, limit])
        else:  # pragma: no cover - the two supported databases.
            raise NotImplementedError(f"no full-text search on {connection.vendor}")
        return [(int(row[0]), float(row[1]), *row[2:]) for row in cursor.fetchall()]


def _fetch(columns: str, ids: list[int]) -> list[tuple]:
    """Rows of ``memory_index_chunks c`` by id, raw: recall reads a few columns of a few rows, often."""
    if not ids:
        return []
    placeholders = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT c.id, {columns} FROM memory_index_chunks c WHERE c.id IN ({placeholders})", ids)
        return cursor.fetchall()


def _as_datetime(value: Any) -> dt.datetime:
    """A timestamp column as an aware datetime (SQLite hands back Django's UTC text)."""
    if isinstance(value, dt.datetime):
        return value if timezone.is_aware(value) else value.replace(tzinfo=dt.UTC)
    parsed = dt.datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _as_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return value
    try:
        loaded = json.loads(value or "[]")
    except (TypeError, ValueError):
        return []
    return loaded if isinstance(loaded, list) else []


# --- Vector search -----------------------------------------------------------------------------------------
@dataclass
class _Matrix:
    key: tuple
    ids: np.ndarray
    vectors: np.ndarray  # rows normalised to unit length
    timestamps: np.ndarray  # epoch seconds
    kinds: np.ndarray
    paths: np.ndarray
    entity_keys: np.ndarray


_matrices: dict[str, _Matrix] = {}
_matrices_lock = threading.Lock()


def _matrix(label: str) -> _Matrix | None:
    """Every vector of the model, loaded once per index generation and process."""
    key = (connection.alias, str(connection.settings_dict.get("NAME")), index_generation(), label)
    cached = _matrices.get(connection.alias)
    if cached is not None and cached.key == key:
        return cached
    with _matrices_lock:
        rows = list(
            MemoryChunk.objects.filter(model=label)
            .exclude(embedding__isnull=True)
            .values_list("id", "embedding", "timestamp", "kind", "path", "entity_keys")
        )
        if not rows:
            _matrices.pop(connection.alias, None)
            return None
        vectors = [from_blob(row[1]) for row in rows]
        size = Counter(v.size for v in vectors).most_common(1)[0][0]  # Stray sizes: a model that changed dims.
        keep = [i for i, v in enumerate(vectors) if v.size == size]
        matrix = np.vstack([vectors[i] for i in keep]).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms == 0, 1, norms)
        loaded = _Matrix(
            key=key,
            ids=np.array([rows[i][0] for i in keep], dtype=np.int64),
            vectors=matrix,
            timestamps=np.array([rows[i][2].timestamp() for i in keep], dtype=np.float64),
            kinds=np.array([rows[i][3] or "" for i in keep], dtype=str),
            paths=np.array([rows[i][4] for i in keep], dtype=str),
            entity_keys=np.array([rows[i][5] or "" for i in keep], dtype=str),
        )
        _matrices[connection.alias] = loaded
        return loaded


def _mask(matrix: _Matrix, filters: Filters) -> np.ndarray | None:
    """Which rows pass the filters; None when there are no filters."""
    if not filters.as_dict():
        return None
    mask = np.ones(matrix.ids.size, dtype=bool)
    if filters.since is not None:
        mask &= matrix.timestamps >= filters.since.timestamp()
    if filters.until is not None:
        mask &= matrix.timestamps < filters.until.timestamp()
    if filters.kind:
        mask &= matrix.kinds == filters.kind
    if filters.entity:
        mask &= np.char.find(matrix.entity_keys, f"|{entity_key(filters.entity)}|") >= 0
    if filters.file:
        if filters.file.endswith("/"):
            mask &= np.char.startswith(matrix.paths, filters.file)
        else:
            mask &= matrix.paths == filters.file
    return mask


def sqlite_vec_available() -> bool:
    """Whether sqlite-vec is loaded into this SQLite connection (tried once per connection)."""
    if connection.vendor != "sqlite":
        return False
    connection.ensure_connection()
    raw = connection.connection
    state = getattr(connection, "_recall_sqlite_vec", None)
    if state is not None and state[0] == id(raw):
        return state[1]
    loaded = False
    try:
        import sqlite_vec

        raw.enable_load_extension(True)
        try:
            sqlite_vec.load(raw)
            loaded = True
        finally:
            raw.enable_load_extension(False)
    except Exception as exc:  # noqa: BLE001 - no extension loading in this Python, or no binary: the fallback.
        logger.info("sqlite-vec is not available (%s); vectors are compared with NumPy", exc)
    connection._recall_sqlite_vec = (id(raw), loaded)
    return loaded


def _use_sqlite_vec(label: str) -> bool:
    if connection.vendor != "sqlite" or not sqlite_vec_available():
        return False
    return MemoryChunk.objects.filter(model=label).count() > settings.RECALL_BRUTE_FORCE_MAX_CHUNKS


def vector_search(query_vector: np.ndarray, label: str, filters: Filters, limit: int) -> dict[int, float]:
    """``{chunk id: cosine similarity}`` of the ``limit`` nearest chunks that pass the filters."""
    query = np.asarray(query_vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    if not norm:
        return {}
    query = query / norm
    if _use_sqlite_vec(label):
        where, params = filters.sql("c")
        blob = query.tobytes()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.id, 1 - vec_distance_cosine(c.embedding, %s) FROM memory_index_chunks c "
                f"WHERE c.model = %s AND c.embedding IS NOT NULL{where} "
                "ORDER BY vec_distance_cosine(c.embedding, %s) LIMIT %s",
                [blob, label, *params, blob, limit],
            )
            return {int(i): float(s) for i, s in cursor.fetchall()}
    matrix = _matrix(label)
    if matrix is None or matrix.vectors.shape[1] != query.size:
        return {}
    # einsum, not BLAS: a matrix-vector product gains nothing from BLAS threads, whose spinning starves the
    # database server and the other requests on a small machine (2-3x slower under load, measured).
    scores = np.einsum("ij,j->i", matrix.vectors, query)
    mask = _mask(matrix, filters)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
        count = min(limit, int(mask.sum()))
    else:
        count = min(limit, scores.size)
    if count <= 0:
        return {}
    top = np.argpartition(-scores, count - 1)[:count]
    return {int(matrix.ids[i]): float(scores[i]) for i in top}


# --- Ranking --------------------------------------------------------------------------------------------------
def decay_factor(age_days: float, hits: int, *, half_life_days: float, active_weight: float) -> float:
    """Seed 004 P1-001: ``2^(−age/half_life) × (1 + active_weight·ln(1 + hits))``; the future counts as now."""
    time_decay = 2 ** (-max(0.0, age_days) / half_life_days) if half_life_days > 0 else 1.0
    return time_decay * (1 + active_weight * math.log1p(max(0, hits)))


def merge_scores(
    keyword: dict[int, float], vector: dict[int, float], *, vector_weight: float, keyword_weight: float, hybrid: bool
) -> dict[int, tuple[float, float, float]]:
    """``{id: (merged, vector part, keyword part)}`` with both parts normalised to [0, 1] first."""
    best = max(keyword.values(), default=0.0)
    keyword_norm = {i: (s / best if best > 0 else 0.0) for i, s in keyword.items()}
    vector_norm = {i: min(1.0, max(0.0, s)) for i, s in vector.items()}
    merged: dict[int, tuple[float, float, float]] = {}
    for chunk_id in keyword_norm.keys() | vector_norm.keys():
        v = vector_norm.get(chunk_id, 0.0)
        k = keyword_norm.get(chunk_id, 0.0)
        merged[chunk_id] = ((vector_weight * v + keyword_weight * k) if hybrid else k, v, k)
    return merged


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
    def source(self) -> str:
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "note": self.note,
            "terms": self.terms,
            "operator": self.operator,
            "filters": {k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in self.filters.items()},
            "took_ms": round(self.took_ms, 2),
            "results": [r.as_dict() for r in self.results],
        }


def _snippet(text: str) -> str:
    limit = settings.RECALL_SNIPPET_MAX_CHARS
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
    """The ``k`` best facts for ``query``: keyword and (if configured) vector candidates, merged, decayed.

    ``mode`` is ``auto`` (hybrid when an embedding endpoint is configured), ``keyword`` or ``hybrid``.
    When the endpoint is missing or fails, the answer is keyword-only and its ``note`` says why.
    Raises InvalidRecallQuery for a bad ``k``, ``kind``, ``mode`` or time.
    """
    started = time.perf_counter()
    now = now or timezone.now()
    k = settings.RECALL_DEFAULT_K if k is None else k
    if not 1 <= k <= MAX_K:
        raise InvalidRecallQuery(f"k must be between 1 and {MAX_K}.", details={"k": k})
    if mode not in MODES:
        raise InvalidRecallQuery(f"mode must be one of {', '.join(MODES)}.", details={"mode": mode})
    if kind and kind not in RecallKind.values:
        raise InvalidRecallQuery(f"kind must be one of {', '.join(RecallKind.values)}.", details={"kind": kind})
    query = (query or "").strip()[:MAX_QUERY_CHARS]
    filters = Filters(
        since=parse_time(since, now=now),
        until=parse_time(until, now=now, end_of_day=True),
        kind=kind or None,
        entity=(entity or "").strip() or None,
        file=(file or "").strip() or None,
    )
    candidates = max(50, 4 * k)
    terms = query_terms(query)

    note = None
    config: EmbeddingConfig | None = current_config()
    hybrid = mode != "keyword" and config is not None
    if mode == "hybrid" and not hybrid:
        note = "No embedding endpoint is configured (EMBEDDING_BASE_URL, EMBEDDING_MODEL): keyword-only recall."
    elif mode == "auto" and not hybrid:
        note = "Keyword-only recall: no embedding endpoint is configured."
    elif mode == "keyword":
        note = "Keyword-only recall, as asked."

    meta: dict[int, Meta] = {}
    keyword, operator = keyword_search(terms, filters, candidates, meta=meta)
    vector: dict[int, float] = {}
    if hybrid:
        try:
            if query_vector is None and query:
                query_vector = embed_query(query, config=config)
            if query_vector is not None:
                vector = vector_search(query_vector, config.label, filters, candidates)
        except EmbeddingError as exc:
            logger.warning("recall: %s; answering keyword-only", exc)
            hybrid = False
            note = f"Keyword-only recall: the embedding endpoint failed ({exc})."
    if not terms and not vector:
        note = note or "The query has no words to search for."

    merged = merge_scores(
        keyword,
        vector,
        vector_weight=settings.RECALL_VECTOR_WEIGHT,
        keyword_weight=settings.RECALL_KEYWORD_WEIGHT,
        hybrid=hybrid,
    )
    # Rank every candidate on the few columns the decay needs, then read the rest for the k best only.
    missing = [chunk_id for chunk_id in merged if chunk_id not in meta]
    meta.update({row[0]: row[1:] for row in _fetch(_META_COLUMNS, missing)})
    decay_on = settings.RECALL_DECAY_ENABLED
    half_life, active_weight = settings.RECALL_DECAY_HALF_LIFE_DAYS, settings.RECALL_DECAY_ACTIVE_WEIGHT
    ranked: list[tuple[float, str, int, int, dt.datetime, int, float]] = []
    for chunk_id, (base, _, _) in merged.items():
        if chunk_id not in meta:
            continue  # Deleted since the vector matrix was loaded.
        raw_time, hits, path, start_line = meta[chunk_id]
        timestamp = _as_datetime(raw_time)
        decay = (
            decay_factor(
                (now - timestamp).total_seconds() / 86400, hits, half_life_days=half_life, active_weight=active_weight
            )
            if decay_on
            else 1.0
        )
        ranked.append((base * decay, path, start_line, chunk_id, timestamp, hits, decay))
    ranked.sort(key=lambda r: (-r[0], r[1], r[2]))
    ranked = ranked[:k]
    details = {
        row[0]: row[1:]
        for row in _fetch("c.kind, c.entities, c.confidence, c.content, c.end_line, c.heading", [r[3] for r in ranked])
    }
    results: list[RecallResult] = []
    for score, path, start_line, chunk_id, timestamp, hits, decay in ranked:
        kind, entities, confidence, content, end_line, heading = details[chunk_id]
        _, v, kw = merged[chunk_id]
        results.append(
            RecallResult(
                id=chunk_id,
                kind=kind,
                timestamp=timestamp,
                entities=_as_list(entities),
                confidence=confidence,
                content=_snippet(content),
                path=path,
                start_line=start_line,
                end_line=end_line,
                heading=heading,
                score=score,
                vector=v if hybrid else None,
                keyword=kw,
                decay=decay,
                hits=hits,
            )
        )
    return RecallAnswer(
        query=query,
        mode="hybrid" if hybrid else "keyword",
        results=results,
        terms=terms,
        operator=operator,
        filters=filters.as_dict(),
        note=note,
        took_ms=(time.perf_counter() - started) * 1000,
    )


def record_hits(ids: list[int], *, now: dt.datetime | None = None) -> int:
    """The agent used these results: bump their hit counts (the decay's activity boost). Unknown ids are ignored."""
    unique = sorted({int(i) for i in ids})
    if not unique:
        return 0
    return MemoryChunk.objects.filter(id__in=unique).update(hits=F("hits") + 1, last_hit_at=now or timezone.now())
