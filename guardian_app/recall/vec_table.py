"""sqlite-vec's ``vec0`` KNN table beside the chunks (seed 003's ``chunks_vec``), on SQLite.

This Python's ``sqlite3`` module cannot load extensions (pyenv builds it without), so the extension is loaded into
``pysqlite3`` connections (its own SQLite build, which Django uses too: ``reflection_site.startup``) to the same
database file: a read-only one per thread for queries, and a short-lived writer for ``sync_vector_table``.
Django's connection never touches the virtual table.

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
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
from django.db import connection

from guardian_app.errors import GuardianError
from guardian_app.recall.rows import Filters
from guardian_app.recall.storage import index_generation
from guardian_app.recall.vec_sync import VEC_TABLE, read_state, sync, vec_connect

logger = logging.getLogger(__name__)

SYNC_TIMEOUT_S = 600
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


class VectorTableError(GuardianError):
    """The vec0 table's writer process failed (recall uses NumPy until a later index run succeeds)."""


_vec = threading.local()
_vec_state: dict[str, Any] = {}


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


def sync_vector_table(label: str, *, rebuild: bool = False, conn: Any | None = None) -> dict | None:
    """Bring ``memory_index_chunks_vec`` in step with the chunks' vectors of ``label``; returns its state, or None
    when there is no database file, no sqlite-vec or no vector.

    Without ``conn`` it opens a writer of its own. Two copies of SQLite in one process must not open one file
    (closing either's file descriptor drops the other's POSIX locks: sqlite.org's "How To Corrupt An SQLite
    Database File", 2.2.1): where Django runs on pysqlite3's SQLite (``reflection_site.startup.use_one_sqlite_library``,
    the default) the writer is a second connection of that one library, in this process; otherwise it runs in a
    process of its own (``python -m guardian_app.recall.vec_sync``). Call it with no transaction open on Django's
    connection (the writer would wait for Django's lock).
    """
    if conn is not None:
        return sync(conn, label, rebuild=rebuild)
    name = database_file()
    if name is None or connection.in_atomic_block or not sqlite_vec_available():
        return None
    if sys.modules.get("sqlite3") is sys.modules.get("pysqlite3"):
        writer = vec_connect(Path(name).resolve().as_uri())
        try:
            return sync(writer, label, rebuild=rebuild)
        finally:
            writer.close()
    command = [sys.executable, "-m", "guardian_app.recall.vec_sync", str(Path(name).resolve()), label]
    done = subprocess.run(
        [*command, *(["--rebuild"] if rebuild else [])],
        capture_output=True,
        text=True,
        timeout=SYNC_TIMEOUT_S,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    if done.returncode != 0:
        raise VectorTableError(
            done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        )
    return json.loads(done.stdout) if done.stdout.strip() else None


# --- Searching ----------------------------------------------------------------------------------------------------
def vector_table_ready(conn: Any, label: str, dims: int) -> bool:
    """Whether the table holds this model's vectors at the current index generation (else: NumPy)."""
    state = read_state(conn)
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
