"""The recall index's writes, batched (issue 22): what a run changes in files and conversations is collected and
written in few transactions, with prepared statements instead of the ORM, and the local model's vectors are
computed as the rows are inserted.

Profiled on a 20k-chunk build (BENCHMARKS.md): the ORM's ``bulk_create`` spent most of its time preparing
values (a model instance per chunk, ``get_db_prep_save`` per column), a commit per file cost a sync of the
database file each, and the vectors were written by a second pass that read every new row back and updated it.
Now a chunk is a ``ChunkRow`` (plain attributes), rows go in with one ``executemany`` of a fixed ``INSERT``,
files are committed together (``FLUSH_ROWS`` chunks or ``FLUSH_FILES`` files a transaction: a crash loses at
most that much work, which the next run redoes, and each file's rows still change together), and with the
local model the vector is part of the ``INSERT``. An endpoint's vectors stay a pass of their own
(``index._embed_pending``): its failures must never stop indexing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from guardian_app.recall.embeddings import EmbeddingConfig, embed_with_cache
from guardian_app.recall.sources import ChunkRow, IndexReport

FLUSH_ROWS = 4000
FLUSH_FILES = 200
_DELETE_BATCH = 500

_COLUMNS = (
    "path, source, start_line, end_line, hash, model, text, heading, search_text, embedding, kind, entities, "
    "entity_keys, confidence, content, timestamp, valid_from, valid_until, hits, last_hit_at, updated_at"
)
UPSERT_FILE_SQL = (
    "INSERT INTO memory_index_files (path, source, hash, mtime, size, indexed_at) VALUES (%s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (path) DO UPDATE SET source = excluded.source, hash = excluded.hash, mtime = excluded.mtime, "
    "size = excluded.size, indexed_at = excluded.indexed_at"
)


@dataclass
class FileChange:
    """What indexing one changed file does to its rows: deletes, moved line numbers, inserts, the file's row."""

    path: str
    source: str
    digest: str
    mtime: int
    size: int
    gone: list[int] = field(default_factory=list)
    moved: list[tuple[int, int, int]] = field(default_factory=list)  # (start_line, end_line, id)
    created: list[ChunkRow] = field(default_factory=list)


def _row_values(row: ChunkRow, now: object) -> tuple:
    adapt_time, adapt_date = connection.ops.adapt_datetimefield_value, connection.ops.adapt_datefield_value
    entities = json.dumps(row.entities, ensure_ascii=False)
    return (
        row.path[:512],
        row.source,
        row.start_line,
        row.end_line,
        row.hash,
        row.model,
        row.text,
        row.heading[:512],
        row.search_text,
        row.embedding,
        row.kind,
        entities,
        row.entity_keys,
        row.confidence,
        row.content,
        adapt_time(row.timestamp),
        adapt_date(row.valid_from),
        adapt_date(row.valid_until),
        row.hits,
        adapt_time(row.last_hit_at),
        now,
    )


def embed_rows(rows: list[ChunkRow], config: EmbeddingConfig | None, report: IndexReport) -> None:
    """Give the rows their vectors now when the model is the local one (cheap, cannot fail on a network)."""
    if config is None or not config.is_local or not rows:
        return
    vectors = embed_with_cache([(r.hash, r.embed_text) for r in rows], config=config)
    for row in rows:
        row.embedding, row.model = vectors[row.hash], config.label
    report.embedded += len(rows)


def insert_rows(rows: list[ChunkRow]) -> None:
    """Insert the rows (one prepared statement); call inside a transaction."""
    if not rows:
        return
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    marks = ["%s"] * 21
    if connection.vendor == "postgresql":
        marks[11] = "%s::jsonb"  # entities: the JSON text as jsonb
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO memory_index_chunks ({_COLUMNS}) VALUES ({', '.join(marks)})",
            [_row_values(r, now) for r in rows],
        )


def delete_chunks(ids: list[int]) -> None:
    with connection.cursor() as cursor:
        for start in range(0, len(ids), _DELETE_BATCH):
            part = ids[start : start + _DELETE_BATCH]
            cursor.execute(f"DELETE FROM memory_index_chunks WHERE id IN ({', '.join(['%s'] * len(part))})", part)


class ChunkWriter:
    """Collects ``FileChange``s and writes them, a transaction per ``FLUSH_ROWS`` new chunks or ``FLUSH_FILES``
    files; ``flush()`` writes what is left (call it before the run ends)."""

    def __init__(self, report: IndexReport, config: EmbeddingConfig | None):
        self.report = report
        self.config = config
        self.pending: list[FileChange] = []
        self.rows = 0

    def add(self, change: FileChange) -> None:
        self.pending.append(change)
        self.rows += len(change.created)
        if self.rows >= FLUSH_ROWS or len(self.pending) >= FLUSH_FILES:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        changes, self.pending, self.rows = self.pending, [], 0
        created = [row for change in changes for row in change.created]
        embed_rows(created, self.config, self.report)
        indexed_at = connection.ops.adapt_datetimefield_value(timezone.now())
        with transaction.atomic(), connection.cursor() as cursor:
            delete_chunks([i for change in changes for i in change.gone])
            moved = [m for change in changes for m in change.moved]
            if moved:
                cursor.executemany("UPDATE memory_index_chunks SET start_line = %s, end_line = %s WHERE id = %s", moved)
            insert_rows(created)
            cursor.executemany(
                UPSERT_FILE_SQL, [(c.path, c.source, c.digest, c.mtime, c.size, indexed_at) for c in changes]
            )
        for change in changes:
            self.report.files_indexed += 1
            self.report.chunks_added += len(change.created)
            self.report.chunks_removed += len(change.gone)
            self.report.chunks_moved += len(change.moved)
