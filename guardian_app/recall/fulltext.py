"""Recall's keyword search over the full-text index: the terms ORed (each a quoted FTS5 string on SQLite, a
``plainto_tsquery`` each on PostgreSQL), ranked by BM25 (``ts_rank_cd`` weighted by idf), so k is filled with the
best partial matches; a chunk with more of the words ranks higher by BM25 itself. User input never reaches the
FTS syntax.
"""

from __future__ import annotations

import math

from django.db import connection

from guardian_app.recall.rows import META_COLUMNS, Filters, Meta
from guardian_app.recall.storage import index_generation


def fts5_query(terms: list[str], operator: str = "AND") -> str:
    """Seed 003's ``buildFtsQuery``: each term a quoted FTS5 string (quotes doubled), joined by AND or OR."""
    if operator not in ("AND", "OR"):
        raise ValueError(operator)
    return f" {operator} ".join('"' + term.replace('"', '""') + '"' for term in terms)


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
                    f"SELECT c.id, -bm25(memory_index_chunks_fts), {META_COLUMNS} FROM memory_index_chunks_fts "
                    "JOIN memory_index_chunks c ON c.id = memory_index_chunks_fts.rowid "
                    f"WHERE memory_index_chunks_fts MATCH %s{where} ORDER BY bm25(memory_index_chunks_fts) LIMIT %s"
                )
            else:  # FTS5 ranks and limits on its own first: the join then touches only the best rows.
                sql = (
                    f"SELECT c.id, x.score, {META_COLUMNS} FROM (SELECT rowid AS id, -rank AS score "
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
                f"SELECT c.id, ({score}) AS score, {META_COLUMNS} "
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


def newest(filters: Filters, limit: int, meta: dict[int, Meta]) -> dict[int, float]:
    """Chunks that pass the filters, newest first, scored by that order: a time scope with no words."""
    where, params = filters.sql("c")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id, {META_COLUMNS} FROM memory_index_chunks c WHERE 1 = 1{where} "
            "ORDER BY c.timestamp DESC, c.path, c.start_line LIMIT %s",
            [*params, limit],
        )
        rows = cursor.fetchall()
    meta.update({int(row[0]): row[1:] for row in rows})
    return {int(row[0]): 1 / (1 + rank) for rank, row in enumerate(rows)}
