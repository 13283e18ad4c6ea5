"""sqlite-vec's ``vec0`` KNN table beside the chunks (seed 003's ``chunks_vec``), on SQLite.

This Python's ``sqlite3`` module cannot load extensions (pyenv builds it without), so the extension is loaded into
``pysqlite3`` connections (its own SQLite build) to the same database file: a read-only one per thread for
queries, and a short-lived writer for ``sync_vector_table``. Django's connection never touches the virtual table.

``memory_index_chunks_vec(chunk_id, embedding float[dims] distance_metric=cosine, ts, dated)``: one row per chunk
vector of the configured model, ``ts`` (epoch seconds) and ``dated`` (a daily log or a transcript) as metadata
columns, so a time scope filters inside the KNN search; other filters are a ``chunk_id IN (…)`` subquery.

Kept in step with the chunks (index, delete, re-index) by two things: new chunks have ids above a high-water
mark (``AUTOINCREMENT`` never reuses an id), and the triggers below queue every deleted chunk and every chunk
whose vector or model changed in ``memory_index_vec_queue``, whoever deletes it (an index run, a prune of
transcripts, a rebuild). ``sync_vector_table`` applies both in one transaction after each index run that changed
something, and records the index generation it reached; recall trusts the table only at that generation. Another
model or size, a rebuild (``memory index --rebuild``) or a queue of more than half the table recreates it.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from pathlib import Path
from typing import Any

import numpy as np
from django.db import connection

from guardian_app.recall.rows import Filters
from guardian_app.recall.storage import index_generation

logger = logging.getLogger(__name__)

VEC_TABLE = "memory_index_chunks_vec"
VEC_META_KEY = "vector_table"
QUEUE_SQL = [
    "CREATE TABLE IF NOT EXISTS memory_index_vec_queue (chunk_id INTEGER PRIMARY KEY)",
    """CREATE TRIGGER IF NOT EXISTS memory_index_vec_queue_ad AFTER DELETE ON memory_index_chunks BEGIN
        INSERT OR IGNORE INTO memory_index_vec_queue(chunk_id) VALUES (old.id);
    END""",
    """CREATE TRIGGER IF NOT EXISTS memory_index_vec_queue_au AFTER UPDATE OF embedding, model
        ON memory_index_chunks BEGIN
        INSERT OR IGNORE INTO memory_index_vec_queue(chunk_id) VALUES (new.id);
    END""",
]
QUEUE_OBJECTS = {"memory_index_vec_queue", "memory_index_vec_queue_ad", "memory_index_vec_queue_au"}
_READ_BATCH = 2000

_vec = threading.local()
_vec_state: dict[str, Any] = {}


def vec_connect(uri: str) -> Any:  # pysqlite3.dbapi2.Connection
    """A pysqlite3 connection with sqlite-vec loaded (``uri``: a ``file:`` URI, ``?mode=ro`` for reading)."""
    # Imported here: where their wheels are missing, sqlite_vec_available() catches the ImportError (NumPy instead).
    import pysqlite3.dbapi2 as vec_sqlite
    import sqlite_vec

    conn = vec_sqlite.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
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
            version = vec_connect("file::memory:").execute("SELECT vec_version()").fetchone()[0]
            _vec_state["ok"], _vec_state["version"] = True, version
        except Exception as exc:  # noqa: BLE001 - no pysqlite3 wheel or no extension binary here: NumPy instead.
            logger.warning("sqlite-vec is not available (%s); vectors are compared with NumPy", exc)
            _vec_state["ok"] = False
    return _vec_state["ok"]


def database_file() -> str | None:
    """The Django database's file, when it is a SQLite file that another connection can open (not in memory)."""
    name = str(connection.settings_dict.get("NAME") or "")
    if connection.vendor != "sqlite" or not name or ":memory:" in name or "mode=memory" in name:
        return None
    return name


def vec_connection() -> Any | None:
    """This thread's read-only sqlite-vec connection to the Django database's file, or None."""
    name = database_file()
    if name is None or not sqlite_vec_available():
        return None
    conns: dict[str, Any] = getattr(_vec, "conns", None) or {}
    _vec.conns = conns
    if name not in conns:
        conns[name] = vec_connect(Path(name).resolve().as_uri() + "?mode=ro")
    return conns[name]


# --- Keeping the table in step ----------------------------------------------------------------------------------
def ensure_vector_queue() -> bool:
    """Create the queue table and its triggers when missing (a migration that rebuilds the chunks table drops
    triggers, as it does FTS5's); True when they were missing, and then the vec0 table must be rebuilt."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        marks = ", ".join(["%s"] * len(QUEUE_OBJECTS))
        cursor.execute(f"SELECT name FROM sqlite_master WHERE name IN ({marks})", sorted(QUEUE_OBJECTS))
        if {row[0] for row in cursor.fetchall()} == QUEUE_OBJECTS:
            return False
        for statement in QUEUE_SQL:
            cursor.execute(statement)
    return True


def _read_state(conn: Any) -> dict:
    row = conn.execute("SELECT value FROM memory_index_meta WHERE key = ?", [VEC_META_KEY]).fetchone()
    try:
        return json.loads(row[0]) if row else {}
    except ValueError:
        return {}


def _insert_vectors(conn: Any, where: str, params: list, label: str, dims: int) -> int:
    """Copy the chunks selected by ``where`` that have a vector of ``label`` and ``dims`` into the table."""
    cursor = conn.execute(
        "SELECT id, embedding, CAST(strftime('%s', timestamp) AS INTEGER), "
        "(path LIKE 'memory/%' OR source = 'sessions') FROM memory_index_chunks "
        f"WHERE model = ? AND length(embedding) = ? AND {where}",
        [label, dims * 4, *params],
    )
    added = 0
    while rows := cursor.fetchmany(_READ_BATCH):
        conn.executemany(f"INSERT INTO {VEC_TABLE}(chunk_id, embedding, ts, dated) VALUES (?, ?, ?, ?)", rows)
        added += len(rows)
    return added


def _apply_queue(conn: Any, label: str, dims: int, high_water: int) -> int:
    """Delete the queued chunks' vectors and copy back those that still exist (changed in place)."""
    queued = [row[0] for row in conn.execute("SELECT chunk_id FROM memory_index_vec_queue")]
    for start in range(0, len(queued), 500):
        part = queued[start : start + 500]
        marks = ", ".join("?" * len(part))
        conn.execute(f"DELETE FROM {VEC_TABLE} WHERE chunk_id IN ({marks})", part)
        _insert_vectors(conn, f"id IN ({marks}) AND id <= ?", [*part, high_water], label, dims)
    conn.execute("DELETE FROM memory_index_vec_queue")
    return len(queued)


def sync_vector_table(label: str, *, rebuild: bool = False, conn: Any | None = None) -> dict | None:
    """Bring ``memory_index_chunks_vec`` in step with the chunks' vectors of ``label``; returns its state, or None
    when there is no database file, no sqlite-vec or no vector. Call with no write transaction open on Django's
    connection (the writer is another connection)."""
    own = conn is None
    if own:
        name = database_file()
        if name is None or connection.in_atomic_block or not sqlite_vec_available():
            return None
        conn = vec_connect(Path(name).resolve().as_uri())
    try:
        return _sync(conn, label, rebuild=rebuild)
    finally:
        if own:
            conn.close()


def _sync(conn: Any, label: str, *, rebuild: bool) -> dict | None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        size = conn.execute("SELECT length(embedding) FROM memory_index_chunks WHERE model = ? LIMIT 1", [label])
        row = size.fetchone()
        generation = conn.execute("SELECT value FROM memory_index_meta WHERE key = 'index_generation'").fetchone()
        if row is None or not row[0]:
            conn.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
            conn.execute("DELETE FROM memory_index_vec_queue")
            conn.execute("DELETE FROM memory_index_meta WHERE key = ?", [VEC_META_KEY])
            conn.execute("COMMIT")
            return None
        dims = row[0] // 4
        state = _read_state(conn)
        exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [VEC_TABLE]).fetchone() is not None
        queued = conn.execute("SELECT count(*) FROM memory_index_vec_queue").fetchone()[0]
        rebuild = rebuild or not exists or state.get("label") != label or state.get("dims") != dims
        rebuild = rebuild or queued > max(1000, state.get("rows", 0) // 2)
        high_water = 0 if rebuild else int(state.get("highWater", 0))
        if rebuild:
            conn.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
            conn.execute(
                f"CREATE VIRTUAL TABLE {VEC_TABLE} USING vec0(chunk_id integer primary key, "
                f"embedding float[{dims}] distance_metric=cosine, ts integer, dated integer)"
            )
            conn.execute("DELETE FROM memory_index_vec_queue")
        else:
            _apply_queue(conn, label, dims, high_water)
        _insert_vectors(conn, "id > ?", [high_water], label, dims)
        top = conn.execute("SELECT coalesce(max(id), 0) FROM memory_index_chunks").fetchone()[0]
        rows = conn.execute(f"SELECT count(*) FROM {VEC_TABLE}_rowids").fetchone()[0]
        state = {
            "label": label,
            "dims": dims,
            "highWater": max(top, high_water),
            "rows": rows,
            "generation": generation[0] if generation else "",
        }
        conn.execute(
            "INSERT INTO memory_index_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [VEC_META_KEY, json.dumps(state, sort_keys=True)],
        )
        conn.execute("COMMIT")
        return state
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# --- Searching ----------------------------------------------------------------------------------------------------
def vector_table_ready(conn: Any, label: str, dims: int) -> bool:
    """Whether the table holds this model's vectors at the current index generation (else: NumPy)."""
    state = _read_state(conn)
    return state.get("label") == label and state.get("dims") == dims and state.get("generation") == index_generation()


def knn_search(conn: Any, query: np.ndarray, filters: Filters, limit: int) -> dict[int, float]:
    """``{chunk id: cosine}`` of the ``limit`` nearest vectors that pass the filters, by the vec0 KNN query."""
    where = ["embedding MATCH ?", "k = ?"]
    params: list[Any] = [np.asarray(query, dtype=np.float32).tobytes(), limit]
    if filters.since is not None:
        where.append("ts >= ?")
        params.append(math.ceil(filters.since.timestamp()))
    if filters.until is not None:
        where.append("ts < ?")
        params.append(math.ceil(filters.until.timestamp()))
    if filters.dated:
        where.append("dated = 1")
    rest = Filters(kind=filters.kind, entity=filters.entity, file=filters.file)
    if rest.as_dict():
        sql, extra = rest.sql("c")
        where.append(f"chunk_id IN (SELECT c.id FROM memory_index_chunks c WHERE 1 = 1{sql.replace('%%', '%')})")
        params.extend(extra)
    rows = conn.execute(
        f"SELECT chunk_id, distance FROM {VEC_TABLE} WHERE {' AND '.join(where)}".replace("%s", "?"), params
    ).fetchall()
    return {int(i): 1.0 - float(d) for i, d in rows}
