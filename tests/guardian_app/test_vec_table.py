"""sqlite-vec's vec0 KNN table, against the real extension (loaded into pysqlite3: this Python's sqlite3 cannot).

The Django test database lives in memory, where no second connection can open it, so each test indexes through
Django as usual and then copies the database (its schema, chunks, triggers and meta rows) into a file with
SQLite's backup API; the vec0 table is built and searched on that file, and further changes to the chunks are
made there with plain SQL, the way any writer of ``memory_index_chunks`` would make them.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from django.db import connection

from guardian_app.models import MemoryChunk
from guardian_app.recall import vectors as vectors_module
from guardian_app.recall.embeddings import current_config, from_blob, load_local_embedder
from guardian_app.recall.index import index_workspace
from guardian_app.recall.rows import Filters
from guardian_app.recall.vec_table import (
    VEC_TABLE,
    knn_search,
    sqlite_vec_available,
    sync_vector_table,
    vec_connect,
    vector_table_ready,
)
from guardian_app.recall.vectors import vector_search

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="vec0 serves SQLite; PostgreSQL keeps NumPy"),
]

FACTS = [
    ("passport", "drawer"),
    ("bicycle", "garage"),
    ("wine", "cellar"),
    ("ledger", "office"),
    ("boat", "harbour"),
    ("kayak", "boathouse"),
]


@pytest.fixture
def indexed(write_md: Callable[[str, str], Path]) -> str:
    for day in range(1, 5):
        lines = [f"- W @Ana: The {w} is kept in the {p} (note {day}-{i})." for i, (w, p) in enumerate(FACTS)]
        write_md(f"memory/2026-01-0{day}.md", f"# 2026-01-0{day}\n\n## Retain\n" + "\n".join(lines) + "\n")
    write_md("USER.md", "# User\n\n- Keeps the spare bike keys in the hallway.\n")
    index_workspace()
    return current_config().label


def file_copy(tmp_path: Path) -> Any:
    """The index's tables (schema, rows, the queue's triggers) copied into a file, opened with sqlite-vec loaded."""
    target = tmp_path / "copy.db"
    tables = ("memory_index_chunks", "memory_index_meta", "memory_index_vec_queue")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, type, sql FROM sqlite_master WHERE tbl_name IN (%s, %s, %s) AND sql IS NOT NULL", tables
        )
        schema = cursor.fetchall()
        data = {}
        for name in tables:
            cursor.execute(f"SELECT * FROM {name}")
            data[name] = cursor.fetchall()
    with sqlite3.connect(target) as out:
        for kind in ("table", "index", "trigger"):
            for name, type_, sql in schema:
                if type_ == kind and not name.startswith("memory_index_chunks_fts"):
                    out.execute(sql)
        for name, rows in data.items():
            if rows:
                out.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    return vec_connect(target.as_uri())


def exact(conn: Any, label: str, query: np.ndarray) -> list[int]:
    rows = conn.execute("SELECT id, embedding FROM memory_index_chunks WHERE model = ?", [label]).fetchall()
    scores = {i: float(from_blob(blob) @ query) for i, blob in rows}
    return sorted(scores, key=lambda i: -scores[i])


def test_sqlite_vec_loads_in_this_python():
    assert sqlite_vec_available() is True
    conn = vec_connect("file::memory:")
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v0.1.")


def test_the_vec0_table_holds_every_vector_and_its_knn_ranks_like_numpy(indexed, tmp_path):
    conn = file_copy(tmp_path)
    state = sync_vector_table(indexed, conn=conn)
    assert state is not None and state["rows"] == MemoryChunk.objects.filter(model=indexed).count() == 25
    assert conn.execute(f"SELECT count(*) FROM {VEC_TABLE}").fetchone()[0] == 25
    assert "USING vec0" in conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", [VEC_TABLE]).fetchone()[0]
    query = load_local_embedder().embed(["where is the bike stored?"])[0]
    got = knn_search(conn, query, Filters(), 5)
    assert list(got) == exact(conn, indexed, query)[:5]  # The same order as the exact cosine.
    stored = dict(conn.execute("SELECT id, embedding FROM memory_index_chunks").fetchall())
    assert got == pytest.approx({i: float(from_blob(stored[i]) @ query) for i in got}, abs=1e-5)


def test_knn_filters_by_time_inside_the_search_and_by_file_through_the_chunks(indexed, tmp_path):
    conn = file_copy(tmp_path)
    sync_vector_table(indexed, conn=conn)
    query = load_local_embedder().embed(["wine cellar"])[0]
    day_two = Filters(since=dt.datetime(2026, 1, 2, tzinfo=dt.UTC), until=dt.datetime(2026, 1, 3, tzinfo=dt.UTC))
    paths = dict(conn.execute("SELECT id, path FROM memory_index_chunks").fetchall())
    assert {paths[i] for i in knn_search(conn, query, day_two, 10)} == {"memory/2026-01-02.md"}
    assert "USER.md" not in {paths[i] for i in knn_search(conn, query, Filters(dated=True), 30)}
    only = knn_search(conn, query, Filters(file="memory/2026-01-04.md"), 3)
    assert len(only) == 3 and {paths[i] for i in only} == {"memory/2026-01-04.md"}


def test_deletes_edits_and_new_chunks_are_followed_and_a_rebuild_starts_over(indexed, tmp_path):
    conn = file_copy(tmp_path)
    sync_vector_table(indexed, conn=conn)
    vec_ids = lambda: {row[0] for row in conn.execute(f"SELECT chunk_id FROM {VEC_TABLE}")}  # noqa: E731
    chunk_ids = lambda: {  # noqa: E731
        row[0] for row in conn.execute("SELECT id FROM memory_index_chunks WHERE model = ?", [indexed])
    }
    # Whoever deletes chunks (a re-index, a prune of transcripts), the triggers queue them.
    conn.execute("DELETE FROM memory_index_chunks WHERE path = 'memory/2026-01-01.md'")
    # A new chunk (a higher id) and a chunk whose vector changed in place (another text's vector).
    conn.execute(
        "INSERT INTO memory_index_chunks (path, source, start_line, end_line, hash, model, text, heading, "
        "search_text, embedding, entities, entity_keys, content, timestamp, hits, updated_at) SELECT 'memory/2026-02-01.md', "
        "source, 9, 9, 'h', model, text, heading, search_text, embedding, entities, entity_keys, content, "
        "'2026-02-01 00:00:00', 0, updated_at FROM memory_index_chunks WHERE path = 'USER.md'"
    )
    boat = load_local_embedder().embed(["boat harbour"])[0]
    changed = conn.execute("SELECT id FROM memory_index_chunks WHERE path = 'USER.md'").fetchone()[0]
    conn.execute("UPDATE memory_index_chunks SET embedding = ? WHERE id = ?", [boat.tobytes(), changed])
    state = sync_vector_table(indexed, conn=conn)
    assert vec_ids() == chunk_ids() and state["rows"] == 25 - 6 + 1
    assert conn.execute("SELECT count(*) FROM memory_index_vec_queue").fetchone()[0] == 0
    assert next(iter(knn_search(conn, boat, Filters(), 1))) == changed  # Its new vector, not the old one.
    conn.execute(f"DELETE FROM {VEC_TABLE} WHERE chunk_id = ?", [changed])  # Out of step behind our back ...
    assert changed not in vec_ids()
    sync_vector_table(indexed, conn=conn, rebuild=True)  # ... and `memory index --rebuild` builds it anew.
    assert vec_ids() == chunk_ids()


def test_recall_uses_the_vec0_table_above_the_limit_and_only_when_it_is_in_step(
    indexed, tmp_path, settings, monkeypatch
):
    conn = file_copy(tmp_path)
    query = load_local_embedder().embed(["bicycle garage"])[0]
    monkeypatch.setattr(vectors_module, "vec_connection", lambda: conn)
    calls: list[int] = []
    real_knn = vectors_module.knn_search
    monkeypatch.setattr(vectors_module, "knn_search", lambda *a: calls.append(1) or real_knn(*a))
    settings.RECALL_BRUTE_FORCE_MAX_CHUNKS = 1000
    numpy_answer = vector_search(query, indexed, Filters(), 5)
    settings.RECALL_BRUTE_FORCE_MAX_CHUNKS = 0
    assert not vector_table_ready(conn, indexed, query.size)
    assert vector_search(query, indexed, Filters(), 5) == numpy_answer and not calls  # Not built yet: NumPy.
    sync_vector_table(indexed, conn=conn)
    assert vector_table_ready(conn, indexed, query.size)
    got = vector_search(query, indexed, Filters(), 5)
    assert calls and list(got) == list(numpy_answer)
    assert got == pytest.approx(numpy_answer, abs=1e-5)


def test_without_a_database_file_nothing_is_built():
    assert sync_vector_table("local/x") is None  # The test database is in memory: NumPy serves it.


@pytest.mark.parametrize("one_library", [True, False])
def test_the_writer_shares_no_file_with_another_sqlite_library(indexed, tmp_path, monkeypatch, one_library):
    """Two copies of SQLite in one process must not open one file. Django runs on pysqlite3's SQLite (the suite
    too): the writer is a connection of that library, in process. Where Django kept the stdlib's, the sync is
    ``python -m …vec_sync``."""
    import subprocess
    import sys

    from guardian_app.recall import vec_table

    assert sys.modules["sqlite3"] is sys.modules["pysqlite3"]  # reflection_site.startup.use_one_sqlite_library
    if not one_library:
        import sqlite3 as stdlib_stand_in

        monkeypatch.setitem(sys.modules, "sqlite3", SimpleNamespace(name="the stdlib's", of=stdlib_stand_in))
    conn = file_copy(tmp_path)
    conn.close()
    monkeypatch.setattr(vec_table, "database_file", lambda: str(tmp_path / "copy.db"))
    monkeypatch.setattr(vec_table, "connection", SimpleNamespace(in_atomic_block=False))  # The test runs in one.
    commands: list[list[str]] = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda command, **kw: commands.append(command) or real_run(command, **kw))
    state = sync_vector_table(indexed)
    if one_library:
        assert commands == []
    else:
        assert commands and commands[0][1:3] == ["-m", "guardian_app.recall.vec_sync"]
    assert state is not None and state["rows"] == 25
