"""The vec0 table's writer, free of Django: ``python -m guardian_app.recall.vec_sync DB LABEL [--rebuild]`` brings
``memory_index_chunks_vec`` in step with the chunks and prints the table's state as JSON. It runs in a process of
its own (see ``guardian_app.recall.vec_table``): sqlite-vec loads into pysqlite3's SQLite, and the web and worker
processes talk to the same file through the stdlib's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

VEC_TABLE = "memory_index_chunks_vec"
VEC_META_KEY = "vector_table"
_READ_BATCH = 2000


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


def read_state(conn: Any) -> dict:
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


def sync(conn: Any, label: str, *, rebuild: bool) -> dict | None:
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
        state = read_state(conn)
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


def main(argv: list[str]) -> int:
    database, label, *rest = argv
    conn = vec_connect(Path(database).resolve().as_uri())
    try:
        state = sync(conn, label, rebuild="--rebuild" in rest)
    finally:
        conn.close()
    print(json.dumps(state))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
