"""Recall: a small, ranked, attributed set of facts from the index (seeds 001, 003 and 004; issue 22).

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

Conversations are a source too (seed 003's ``sessions``): ``guardian_app.recall.index.index_sessions`` indexes stored
turns as they arrive; their results have ``origin: "transcript"`` and ``<session id>#<turn>`` sources.
Filters (``since``, ``until``, ``kind``, ``entity``, ``file``) apply before ranking, in the same query.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import math
import os
import re
import shutil
import threading
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import F
from django.utils import timezone

from guardian_app.models import MemoryChunk, RecallKind
from guardian_app.recall.chunking import MAX_TOKEN_CHARS, WORD, is_cjk
from guardian_app.recall.embeddings import EmbeddingConfig, EmbeddingError, current_config, embed_query
from guardian_app.recall.index import index_generation
from guardian_app.recall.retain import entity_key
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
# Function characters: a query bigram that contains one ("我去", "做了", "了什") is dropped when others are left.
CJK_STOP_CHARS = frozenset("的了吗呢吧啊呀我你他她它们是在有和与跟么什哪怎谁个这那吗过着就都也还把被给")


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
    """The query's search terms: lower-cased words, CJK runs as bigrams, stop words dropped, each once.

    A CJK bigram that holds a function character (``我去``, ``做了``) is dropped too, unless nothing else is left:
    a question's bigrams across word boundaries match nothing useful and only add noise to the OR query.
    """
    words: list[str] = []
    for match in WORD.finditer(unicodedata.normalize("NFKC", query)):
        word = match.group()
        if is_cjk(word[0]):
            words.extend([word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)])
        else:
            words.append(word[:MAX_TOKEN_CHARS].lower())
    words = list(dict.fromkeys(words))
    content = [
        w
        for w in words
        if w not in STOP_WORDS and w not in CJK_STOP_WORDS and not (is_cjk(w[0]) and CJK_STOP_CHARS.intersection(w))
    ]
    return (content or words)[:MAX_TERMS]


# --- Time expressions ---------------------------------------------------------------------------------------
MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_UNIT_RE = r"(day|week|month|year)s?"
_EN_RELATIVE = re.compile(
    r"\b(?P<which>yesterday|today|tonight|this morning|"
    r"(?:this|last|past|previous) (?:week|month|year)|recently|lately)\b",
    re.IGNORECASE,
)
_EN_AGO = re.compile(rf"\b(?P<n>\d{{1,3}}|a|an|one|two|three|four|five|six) {_UNIT_RE} ago\b", re.IGNORECASE)
_EN_MONTH = re.compile(
    rf"\b(?:in|during|since|of|from|on) (?P<month>{_MONTH_NAMES})\b\.?(?: (?P<year>\d{{4}}))?", re.IGNORECASE
)
_EN_YEAR = re.compile(r"\b(?:in|during) (?P<year>(?:19|20)\d\d)\b", re.IGNORECASE)
_EN_ANCHOR = re.compile(r"\b(?P<side>before|after) (?P<event>[^?.!,;]{3,})", re.IGNORECASE)
_ZH_RELATIVE = re.compile(
    r"(?P<which>昨天|今天|上周|上星期|上个星期|这周|本周|这个星期|上个月|上月|这个月|本月|去年|今年|最近)"
)
_ZH_MONTH = re.compile(r"(?:(?P<year>\d{4})年)?(?P<month>1[0-2]|[1-9]|十[一二]?|[一二三四五六七八九])月份?")
_ZH_ANCHOR = re.compile(r"(?:在)?(?P<event>[^，。？！?]{2,}?)(?P<side>之前|以前|之后|以后)")
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_UNIT_LENGTH = {"day": 1, "week": 7, "month": 30, "year": 365}


@dataclass(frozen=True)
class TimeScope:
    """A half-open window ``[start, end)`` that a question asks about, and the words that said so."""

    start: dt.datetime | None
    end: dt.datetime | None
    phrase: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "phrase": self.phrase,
        }


def _day(moment: dt.datetime) -> dt.datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_window(year: int, month: int, tz: dt.tzinfo | None) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime(year, month, 1, tzinfo=tz)
    end = dt.datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=tz)
    return start, end


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + (_ZH_DIGITS.get(text[1:], 0) if len(text) > 1 else 0)
    return _ZH_DIGITS[text]


def time_scope(query: str, *, now: dt.datetime) -> tuple[TimeScope | None, str]:
    """The time window a question asks about, and the question without the words that said it.

    Relative expressions are taken against ``now`` in the server's time zone; a month without a year is its
    latest occurrence up to now. ``before X`` / ``after X`` (``X之前``) are returned with no window and the
    event ``X`` as the phrase: ``recall`` dates the event by searching for it.
    """
    local = timezone.localtime(now)
    tz = local.tzinfo
    today = _day(local)
    match = _EN_RELATIVE.search(query) or _ZH_RELATIVE.search(query)
    if match:
        which = match.group("which").lower()
        day = dt.timedelta(days=1)
        this_week = today - dt.timedelta(days=today.weekday())
        this_month = today.replace(day=1)
        last_month = (this_month - day).replace(day=1)
        this_year = today.replace(month=1, day=1)
        windows = {
            "yesterday": (today - day, today),
            "昨天": (today - day, today),
            "today": (today, today + day),
            "tonight": (today, today + day),
            "this morning": (today, today + day),
            "今天": (today, today + day),
            "this week": (this_week, today + day),
            "这周": (this_week, today + day),
            "本周": (this_week, today + day),
            "这个星期": (this_week, today + day),
            "last week": (this_week - 7 * day, this_week),
            "previous week": (this_week - 7 * day, this_week),
            "上周": (this_week - 7 * day, this_week),
            "上星期": (this_week - 7 * day, this_week),
            "上个星期": (this_week - 7 * day, this_week),
            "past week": (today - 7 * day, today + day),
            "this month": (this_month, today + day),
            "这个月": (this_month, today + day),
            "本月": (this_month, today + day),
            "last month": (last_month, this_month),
            "previous month": (last_month, this_month),
            "上个月": (last_month, this_month),
            "上月": (last_month, this_month),
            "past month": (today - 30 * day, today + day),
            "this year": (this_year, today + day),
            "今年": (this_year, today + day),
            "last year": (this_year.replace(year=this_year.year - 1), this_year),
            "previous year": (this_year.replace(year=this_year.year - 1), this_year),
            "去年": (this_year.replace(year=this_year.year - 1), this_year),
            "past year": (today - 365 * day, today + day),
            "recently": (today - 30 * day, today + day),
            "lately": (today - 30 * day, today + day),
            "最近": (today - 30 * day, today + day),
        }
        start, end = windows[which]
        return TimeScope(start, end, match.group()), _cut(query, match)
    match = _EN_AGO.search(query)
    if match:
        n = match.group("n").lower()
        count = int(n) if n.isdigit() else _NUMBER_WORDS[n]
        unit = dt.timedelta(days=_UNIT_LENGTH[match.group(2).lower()])
        center = today - count * unit
        return TimeScope(center - unit, center + unit + dt.timedelta(days=1), match.group()), _cut(query, match)
    match = _EN_MONTH.search(query)
    zh_month = None if match else _ZH_MONTH.search(query)
    if match or zh_month:
        if match:
            month = MONTHS[match.group("month").lower()]
        else:
            match = zh_month
            month = _zh_number(match.group("month"))
        if 1 <= month <= 12:
            year = int(match.group("year")) if match.group("year") else local.year - (month > local.month)
            start, end = _month_window(year, month, tz)
            return TimeScope(start, end, match.group()), _cut(query, match)
    match = _EN_YEAR.search(query)
    if match:
        year = int(match.group("year"))
        return TimeScope(
            dt.datetime(year, 1, 1, tzinfo=tz), dt.datetime(year + 1, 1, 1, tzinfo=tz), match.group()
        ), _cut(query, match)
    match = _EN_ANCHOR.search(query) or _ZH_ANCHOR.search(query)
    if match:
        side = "before" if match.group("side").lower() in ("before", "之前", "以前") else "after"
        return TimeScope(None, None, f"{side}:{match.group('event').strip()}"), _cut(query, match)
    return None, query


def _cut(query: str, match: re.Match[str]) -> str:
    return (query[: match.start()] + " " + query[match.end() :]).strip()


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
    dated: bool = False  # only chunks of daily logs (a time scope's window; durable files have no date)

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
        if self.dated:
            parts.append(f"({alias}.path LIKE 'memory/%%' OR {alias}.source = 'sessions')")
        return "".join(f" AND {p}" for p in parts), params

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", False)}


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# --- Keyword search ---------------------------------------------------------------------------------------
# What ranking needs of a candidate, read with its score: (timestamp, hits, path, start_line).
Meta = tuple[Any, int, str, int]
_META_COLUMNS = "c.timestamp, c.hits, c.path, c.start_line"


def keyword_search(
    terms: list[str], filters: Filters, limit: int, *, meta: dict[int, Meta] | None = None
) -> tuple[dict[int, float], str]:
    """``({chunk id: raw score, higher is better}, "AND"|"OR")``: the terms ORed, ranked by BM25.

    OR, not AND first: an AND that every word matches somewhere returns a couple of chunks and leaves the
    rest of k empty (issue 22); BM25 already ranks a chunk with more of the words higher. A single term is
    reported as ``AND``. ``meta`` (if given) receives each found chunk's ranking columns, saving a query.
    """
    if not terms:
        return {}, "AND"
    operator = "OR" if len(terms) > 1 else "AND"
    rows = _keyword_query(terms, operator, filters, limit)
    if meta is not None:
        meta.update({row[0]: row[2:] for row in rows})
    return {row[0]: row[1] for row in rows}, operator


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
            # ts_rank has no inverse document frequency ("Peter", in every fact, would weigh as much as
            # "partner"): each term's rank is weighted by its BM25 idf, counted once per index generation.
            idf = _postgres_idf(terms)
            names = [f"t{i}" for i in range(len(terms))]
            score = " + ".join(f"%s * ts_rank(c.search_vector, q.{n}, 1)" for n in names)
            queries = ", ".join(f"plainto_tsquery('english', %s) AS {n}" for n in names)
            match = " || ".join(f"q.{n}" for n in names)
            sql = (
                f"SELECT c.id, ({score}) AS score, {_META_COLUMNS} "
                f"FROM memory_index_chunks c, (SELECT {queries}) q "
                f"WHERE c.search_vector @@ ({match}){where} ORDER BY score DESC, c.id LIMIT %s"
            )
            cursor.execute(sql, [*(idf[t] for t in terms), *terms, *params, limit])
        else:  # pragma: no cover - the two supported databases.
            raise NotImplementedError(f"no full-text search on {connection.vendor}")
        return [(int(row[0]), float(row[1]), *row[2:]) for row in cursor.fetchall()]


_idf_cache: dict[tuple[str, str, str], float] = {}
_IDF_CACHE_SIZE = 20_000


def _postgres_idf(terms: list[str]) -> dict[str, float]:
    """BM25's ``ln(1 + (N − n + 0.5) / (n + 0.5))`` of each term (n: chunks that match it), cached per generation."""
    generation = index_generation()
    wanted = [t for t in terms if (generation, str(connection.settings_dict.get("NAME")), t) not in _idf_cache]
    if wanted:
        if len(_idf_cache) > _IDF_CACHE_SIZE:
            _idf_cache.clear()
        with connection.cursor() as cursor:
            counts = ", ".join(
                "(SELECT count(*) FROM memory_index_chunks WHERE search_vector @@ plainto_tsquery('english', %s))"
                for _ in wanted
            )
            cursor.execute(f"SELECT (SELECT count(*) FROM memory_index_chunks), {counts}", wanted)
            total, *found = cursor.fetchone()
        for term, n in zip(wanted, found, strict=True):
            key = (generation, str(connection.settings_dict.get("NAME")), term)
            _idf_cache[key] = math.log(1 + (total - n + 0.5) / (n + 0.5))
    name = str(connection.settings_dict.get("NAME"))
    return {t: _idf_cache[(generation, name, t)] for t in terms}


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
    ids: np.ndarray  # int64
    vectors: np.ndarray  # float32 rows of unit length
    prefix: np.ndarray  # the first PREFIX_DIMS of each row, unit length: the first, cheap pass
    timestamps: np.ndarray  # epoch seconds
    dated: np.ndarray  # bool: a daily log or a transcript (what a time scope keeps)


_matrices: dict[str, _Matrix] = {}
_matrices_lock = threading.Lock()
# Above this many vectors a query is scored on each vector's first PREFIX_DIMS dimensions first (WordLlama's
# vectors are trained so that a prefix is a usable embedding), and only the best PREFIX_SHORTLIST× the wanted
# number are scored in full: a quarter of the memory read per query.
PREFIX_DIMS = 64
PREFIX_MIN_ROWS = 20_000
PREFIX_SHORTLIST = 20
_MATRIX_FILES = ("ids", "vectors", "prefix", "timestamps", "dated")


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1, norms)).astype(np.float32)


def _matrix_dir(label: str, generation: str) -> Path:
    digest = hashlib.sha256(f"{connection.settings_dict.get('NAME')}|{label}".encode()).hexdigest()[:16]
    return Path(settings.DATA_DIR) / "recall-matrix" / f"{digest}-{generation}"


def _read_matrix(label: str) -> dict[str, np.ndarray] | None:
    """The vectors of the model and what the filters need, from the database (one query)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, embedding, timestamp, path FROM memory_index_chunks WHERE model = %s AND embedding IS NOT NULL",
            [label],
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    sizes = Counter(len(row[1]) for row in rows)
    size = sizes.most_common(1)[0][0]  # Stray sizes: a model that changed dims.
    if len(sizes) > 1:
        rows = [row for row in rows if len(row[1]) == size]
    vectors = _unit(np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype=np.float32).reshape(len(rows), -1))
    if isinstance(rows[0][2], str):  # SQLite's text: numpy parses it in C.
        stamps = np.array([row[2] for row in rows], dtype="datetime64[us]").astype(np.int64) / 1e6
    else:
        stamps = np.array([_as_datetime(row[2]).timestamp() for row in rows], dtype=np.float64)
    return {
        "ids": np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows)),
        "vectors": vectors,
        "prefix": _unit(vectors[:, :PREFIX_DIMS]),
        "timestamps": stamps,
        "dated": np.array([row[3].startswith(("memory/", "sessions/")) for row in rows], dtype=bool),
    }


def save_vector_matrix(label: str) -> Path | None:
    """Write the model's matrix for the current index generation under ``DATA_DIR/recall-matrix`` (the index
    run calls this), so that a process's first hybrid query maps it instead of reading every blob; older
    generations' files are removed. Returns the folder, or None when there are no vectors."""
    generation = index_generation()
    arrays = _read_matrix(label)
    if arrays is None:
        return None
    folder = _matrix_dir(label, generation)
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    for name in _MATRIX_FILES:
        np.save(tmp / f"{name}.npy", arrays[name])
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    prefix = folder.name.rsplit("-", 1)[0]
    for old in folder.parent.iterdir():
        if old != folder and old.name.startswith(prefix + "-"):
            shutil.rmtree(old, ignore_errors=True)
    return folder


def _matrix(label: str) -> _Matrix | None:
    """Every vector of the model, once per index generation and process: mapped from the files the index run
    saved when they are there (milliseconds), else read from the database (one query, one ``frombuffer``)."""
    generation = index_generation()
    key = (connection.alias, str(connection.settings_dict.get("NAME")), generation, label)
    cached = _matrices.get(connection.alias)
    if cached is not None and cached.key == key:
        return cached
    with _matrices_lock:
        folder = _matrix_dir(label, generation)
        arrays: dict[str, np.ndarray] | None
        try:
            arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _MATRIX_FILES}
        except (OSError, ValueError):
            arrays = _read_matrix(label)
        if arrays is None:
            _matrices.pop(connection.alias, None)
            return None
        loaded = _Matrix(key=key, **arrays)
        _matrices[connection.alias] = loaded
        return loaded


def _allowed(matrix: _Matrix, filters: Filters) -> np.ndarray | None:
    """Which rows pass the filters; None: all. Time and "dated" from the matrix, the rest from the database."""
    if not filters.as_dict():
        return None
    mask = np.ones(matrix.ids.size, dtype=bool)
    if filters.since is not None:
        mask &= matrix.timestamps >= filters.since.timestamp()
    if filters.until is not None:
        mask &= matrix.timestamps < filters.until.timestamp()
    if filters.dated:
        mask &= matrix.dated
    rest = replace(filters, since=None, until=None, dated=False)
    if rest.as_dict():
        where, params = rest.sql("c")
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT c.id FROM memory_index_chunks c WHERE 1 = 1{where}", params)
            allowed = np.fromiter((row[0] for row in cursor.fetchall()), dtype=np.int64)
        mask &= np.isin(matrix.ids, allowed)
    return mask


# sqlite-vec: this Python's sqlite3 module cannot load extensions (pyenv builds it without), so the extension
# is loaded into a second, read-only connection to the same database file opened with pysqlite3 (its own
# SQLite build, with extension loading). It reads what the index committed, which is all recall needs.
_vec = threading.local()
_vec_state: dict[str, Any] = {}


def _vec_connect(uri: str) -> Any:  # pysqlite3.dbapi2.Connection
    import pysqlite3.dbapi2 as vec_sqlite
    import sqlite_vec

    conn = vec_sqlite.connect(uri, uri=True, check_same_thread=False)
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def sqlite_vec_available() -> bool:
    """Whether sqlite-vec loads (into a pysqlite3 connection); tried once per process, a failure logged once."""
    if "ok" not in _vec_state:
        try:
            version = _vec_connect("file::memory:").execute("SELECT vec_version()").fetchone()[0]
            _vec_state["ok"], _vec_state["version"] = True, version
        except Exception as exc:  # noqa: BLE001 - no pysqlite3 wheel or no extension binary here: NumPy instead.
            logger.warning("sqlite-vec is not available (%s); vectors are compared with NumPy", exc)
            _vec_state["ok"] = False
    return _vec_state["ok"]


def _vec_connection() -> Any | None:
    """This thread's sqlite-vec connection to the Django database's file, or None (in-memory or no extension)."""
    name = str(connection.settings_dict.get("NAME") or "")
    if connection.vendor != "sqlite" or not name or ":memory:" in name or "mode=memory" in name:
        return None
    if not sqlite_vec_available():
        return None
    conns: dict[str, Any] = getattr(_vec, "conns", None) or {}
    _vec.conns = conns
    if name not in conns:
        conns[name] = _vec_connect(Path(name).resolve().as_uri() + "?mode=ro")
    return conns[name]


def sqlite_vec_search(conn: Any, query: np.ndarray, label: str, filters: Filters, limit: int) -> dict[int, float]:
    """``{chunk id: cosine}`` by sqlite-vec's ``vec_distance_cosine`` over ``memory_index_chunks`` on ``conn``."""
    where, params = filters.sql("c")
    where = where.replace("%s", "?").replace("%%", "%")
    blob = np.asarray(query, dtype=np.float32).tobytes()
    rows = conn.execute(
        "SELECT c.id, 1 - vec_distance_cosine(c.embedding, ?) AS similarity FROM memory_index_chunks c "
        f"WHERE c.model = ? AND c.embedding IS NOT NULL AND length(c.embedding) = ?{where} "
        "ORDER BY similarity DESC LIMIT ?",
        [blob, label, len(blob), *params, limit],
    ).fetchall()
    return {int(i): float(sim) for i, sim in rows}


_vector_counts: dict[tuple, int] = {}


def _use_sqlite_vec(label: str) -> Any | None:
    """The sqlite-vec connection when the index holds more vectors than NumPy should keep per process."""
    key = (str(connection.settings_dict.get("NAME")), index_generation(), label)
    if key not in _vector_counts:
        _vector_counts.clear()
        _vector_counts[key] = MemoryChunk.objects.filter(model=label).count()
    if _vector_counts[key] <= settings.RECALL_BRUTE_FORCE_MAX_CHUNKS:
        return None
    return _vec_connection()


def vector_search(query_vector: np.ndarray, label: str, filters: Filters, limit: int) -> dict[int, float]:
    """``{chunk id: cosine similarity}`` of the ``limit`` nearest chunks that pass the filters."""
    query = np.asarray(query_vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    if not norm:
        return {}
    query = query / norm
    if connection.vendor == "sqlite":
        vec = _use_sqlite_vec(label)
        if vec is not None:
            return sqlite_vec_search(vec, query, label, filters, limit)
    matrix = _matrix(label)
    if matrix is None or matrix.vectors.shape[1] != query.size:
        return {}
    mask = _allowed(matrix, filters)
    rows: np.ndarray | None = None if mask is None else np.flatnonzero(mask)
    if rows is not None and not rows.size:
        return {}
    # einsum, not BLAS: a matrix-vector product gains nothing from BLAS threads, whose spinning starves the
    # database server and the other requests on a small machine (2-3x slower under load, measured).
    total = matrix.ids.size if rows is None else rows.size
    if total > PREFIX_MIN_ROWS and matrix.vectors.shape[1] > PREFIX_DIMS:
        head = query[:PREFIX_DIMS] / (np.linalg.norm(query[:PREFIX_DIMS]) or 1)
        prefix = matrix.prefix if rows is None else matrix.prefix[rows]
        rough = np.einsum("ij,j->i", prefix, head)
        keep = min(total, limit * PREFIX_SHORTLIST)
        shortlist = np.argpartition(-rough, keep - 1)[:keep]
        rows = shortlist if rows is None else rows[shortlist]
    candidates = matrix.vectors if rows is None else matrix.vectors[rows]
    scores = np.einsum("ij,j->i", candidates, query)
    count = min(limit, scores.size)
    top = np.argpartition(-scores, count - 1)[:count]
    chosen = top if rows is None else rows[top]
    return {int(matrix.ids[i]): float(s) for i, s in zip(chosen, scores[top], strict=True)}


# --- Ranking --------------------------------------------------------------------------------------------------
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
    """``(1 + recency_weight·2^(−age/half_life)) × (1 + active_weight·ln(1 + hits))``; ``age_days=None``: durable.

    Bounded: with the defaults, today's chunk gets at most 10 % over one of any age, so recency only breaks
    near-ties. A durable fact gets the full recency part.
    """
    if age_days is None or half_life_days <= 0:
        fresh = 1.0
    else:
        fresh = 2 ** (-max(0.0, age_days) / half_life_days)
    return (1 + recency_weight * fresh) * (1 + active_weight * math.log1p(max(0, hits)))


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
    return _as_datetime(meta[next(iter(found))][0])


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


def _newest(filters: Filters, limit: int, meta: dict[int, Meta]) -> dict[int, float]:
    """Chunks that pass the filters, newest first, scored by that order: a time scope with no words."""
    where, params = filters.sql("c")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id, {_META_COLUMNS} FROM memory_index_chunks c WHERE 1 = 1{where} "
            "ORDER BY c.timestamp DESC, c.path, c.start_line LIMIT %s",
            [*params, limit],
        )
        rows = cursor.fetchall()
    meta.update({int(row[0]): row[1:] for row in rows})
    return {int(row[0]): 1 / (1 + rank) for rank, row in enumerate(rows)}


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
    scope, rest = time_scope(query, now=now)
    terms = query_terms(rest)
    if scope is not None and all(t in STOP_WORDS or t in CJK_STOP_WORDS for t in terms):
        terms = []  # "What did I do last month?": the scope is the whole question.
    scope = _resolve_scope(scope, filters)
    semantic_text = rest if scope is not None and rest.strip() else query

    note = None
    config: EmbeddingConfig | None = current_config()
    hybrid = mode != "keyword" and config is not None
    if mode == "hybrid" and not hybrid:
        note = "No embedder is configured (EMBEDDING_PROVIDER, EMBEDDING_BASE_URL): keyword-only recall."
    elif mode == "auto" and not hybrid:
        note = "Keyword-only recall: no embedder is configured."
    elif mode == "keyword":
        note = "Keyword-only recall, as asked."
    if hybrid and query_vector is None and semantic_text:
        try:
            query_vector = embed_query(semantic_text, config=config)
        except EmbeddingError as exc:
            logger.warning("recall: %s; answering keyword-only", exc)
            hybrid = False
            note = f"Keyword-only recall: the embedder failed ({exc})."

    meta: dict[int, Meta] = {}

    def search(within: Filters) -> tuple[dict[int, tuple[float, float, float]], str]:
        keyword, operator = keyword_search(terms, within, candidates, meta=meta)
        vector: dict[int, float] = {}
        if hybrid and query_vector is not None:
            vector = vector_search(query_vector, config.label, within, candidates)
        if not terms and not vector and within.dated:
            keyword = _newest(within, candidates, meta)
        merged = merge_scores(
            keyword,
            vector,
            vector_weight=settings.RECALL_VECTOR_WEIGHT,
            keyword_weight=settings.RECALL_KEYWORD_WEIGHT,
            hybrid=hybrid and bool(vector),
            fusion=settings.RECALL_FUSION,
            rrf_k=settings.RECALL_RRF_K,
        )
        return merged, operator

    merged, operator = search(filters)
    scoped: dict[int, tuple[float, float, float]] = {}
    if scope is not None:
        scoped, _ = search(_scoped(filters, scope))
    if not terms and not merged and not scoped:
        note = note or "The query has no words to search for."

    # Rank every candidate on the few columns the boost needs, then read the rest for the k best only.
    missing = [chunk_id for chunk_id in merged.keys() | scoped.keys() if chunk_id not in meta]
    meta.update({row[0]: row[1:] for row in _fetch(_META_COLUMNS, missing)})
    half_life = settings.RECALL_DECAY_HALF_LIFE_DAYS
    recency_weight = settings.RECALL_RECENCY_WEIGHT if scope is None else 0.0
    active_weight = settings.RECALL_DECAY_ACTIVE_WEIGHT
    boost_on = settings.RECALL_DECAY_ENABLED
    ranked: list[tuple[int, float, str, int, int, dt.datetime, int, float]] = []
    for group, scores in enumerate((scoped, merged)):
        for chunk_id, (base, _, _) in scores.items():
            if chunk_id not in meta or (group == 1 and chunk_id in scoped):
                continue  # Deleted since the vector matrix was loaded, or already ranked inside the scope.
            raw_time, hits, path, start_line = meta[chunk_id]
            timestamp = _as_datetime(raw_time)
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
    min_score = settings.RECALL_MIN_SCORE  # Seed 004's recallMinScore.
    ranked = [r for r in ranked if r[1] >= min_score][:k]
    details = {
        row[0]: row[1:]
        for row in _fetch("c.kind, c.entities, c.confidence, c.content, c.end_line, c.heading", [r[4] for r in ranked])
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
                decay=boost,
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
        scope=scope,
    )


def record_hits(ids: list[int], *, now: dt.datetime | None = None) -> int:
    """The agent used these results: bump their hit counts (the decay's activity boost). Unknown ids are ignored."""
    unique = sorted({int(i) for i in ids})
    if not unique:
        return 0
    return MemoryChunk.objects.filter(id__in=unique).update(hits=F("hits") + 1, last_hit_at=now or timezone.now())
