"""Recall's vector search (on by default: the local in-wheel model, or an endpoint): cosine similarity over the
per-process NumPy matrix of the index's vectors (one read per index generation, or mapped from the files the index
run saved), the filters as a mask; above ``RECALL_BRUTE_FORCE_MAX_CHUNKS`` on SQLite, sqlite-vec's ``vec0`` KNN table
(``guardian_app.recall.vec_table``), which needs no per-process matrix. At 100k vectors NumPy answers in a third of
vec0's time (BENCHMARKS.md), so the matrix serves indexes up to that limit.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection

from guardian_app.models import MemoryChunk
from guardian_app.recall.rows import Filters, as_datetime
from guardian_app.recall.storage import index_generation
from guardian_app.recall.vec_table import knn_search, vec_connection, vector_table_ready

logger = logging.getLogger(__name__)


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


def matrix_dir(label: str, generation: str) -> Path:
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
        stamps = np.array([as_datetime(row[2]).timestamp() for row in rows], dtype=np.float64)
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
    folder = matrix_dir(label, generation)
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
        folder = matrix_dir(label, generation)
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


_vector_counts: dict[tuple, int] = {}


def _use_vec_table(label: str, dims: int) -> Any | None:
    """sqlite-vec's connection when the index holds more vectors than NumPy should keep per process
    (``RECALL_BRUTE_FORCE_MAX_CHUNKS``) and its vec0 table is in step with this generation; else None (NumPy)."""
    key = (str(connection.settings_dict.get("NAME")), index_generation(), label)
    if key not in _vector_counts:
        _vector_counts.clear()
        _vector_counts[key] = MemoryChunk.objects.filter(model=label).count()
    if _vector_counts[key] <= settings.RECALL_BRUTE_FORCE_MAX_CHUNKS:
        return None
    conn = vec_connection()
    if conn is None or not vector_table_ready(conn, label, dims):
        return None
    return conn


def vector_search(query_vector: np.ndarray, label: str, filters: Filters, limit: int) -> dict[int, float]:
    """``{chunk id: cosine similarity}`` of the ``limit`` nearest chunks that pass the filters."""
    query = np.asarray(query_vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    if not norm:
        return {}
    query = query / norm
    if connection.vendor == "sqlite":
        vec = _use_vec_table(label, query.size)
        if vec is not None:
            return knn_search(vec, query, filters, limit)
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
