"""The recall index's storage beside its tables: the full-text objects, the lock that serialises index runs,
and the meta rows (seed 003's ``memory_index_meta_v1``, the sessions watermark, the index generation).

Runs hold a lock (a file lock per machine, and an advisory lock on PostgreSQL), so a re-index after a write,
the beat schedule and the CLI never interleave. The generation is a new random token whenever chunks change;
recall's processes keep their vector matrix until it moves.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from filelock import FileLock

from guardian_app.models import MemoryIndexMeta
from reflection_site.ids import new_ulid

logger = logging.getLogger(__name__)

META_KEY = "memory_index_meta_v1"  # Seed 003's key.
GENERATION_KEY = "index_generation"
_ADVISORY_LOCK_KEY = 0x5245_4341  # "RECA"

# The full-text index beside memory_index_chunks; the recall_index migration creates the same objects.
SQLITE_FTS_SQL = [
    """CREATE VIRTUAL TABLE IF NOT EXISTS memory_index_chunks_fts USING fts5(
        search_text, content='memory_index_chunks', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER IF NOT EXISTS memory_index_chunks_fts_ai AFTER INSERT ON memory_index_chunks BEGIN
        INSERT INTO memory_index_chunks_fts(rowid, search_text) VALUES (new.id, new.search_text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS memory_index_chunks_fts_ad AFTER DELETE ON memory_index_chunks BEGIN
        INSERT INTO memory_index_chunks_fts(memory_index_chunks_fts, rowid, search_text)
        VALUES ('delete', old.id, old.search_text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS memory_index_chunks_fts_au AFTER UPDATE OF search_text ON memory_index_chunks BEGIN
        INSERT INTO memory_index_chunks_fts(memory_index_chunks_fts, rowid, search_text)
        VALUES ('delete', old.id, old.search_text);
        INSERT INTO memory_index_chunks_fts(rowid, search_text) VALUES (new.id, new.search_text);
    END""",
]
SQLITE_FTS_OBJECTS = {
    "memory_index_chunks_fts",
    "memory_index_chunks_fts_ai",
    "memory_index_chunks_fts_ad",
    "memory_index_chunks_fts_au",
}
POSTGRES_FTS_SQL = [
    """ALTER TABLE memory_index_chunks ADD COLUMN IF NOT EXISTS search_vector tsvector
        GENERATED ALWAYS AS (to_tsvector('english'::regconfig, search_text)) STORED""",
    # Fast update off: a pending list would be scanned by every search until a vacuum (migration 0007).
    "CREATE INDEX IF NOT EXISTS memory_index_chunks_search ON memory_index_chunks USING GIN (search_vector) "
    "WITH (fastupdate = off)",
]


# --- Locking and the full-text schema ---------------------------------------------------------------
@contextmanager
def index_lock(timeout: float = 300) -> Iterator[None]:
    """One index run at a time: a file lock per machine, plus an advisory lock across machines on PostgreSQL."""
    data_dir = Path(settings.DATA_DIR)
    data_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(data_dir / "recall-index.lock"), timeout=timeout):
        if connection.vendor != "postgresql":
            yield
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [_ADVISORY_LOCK_KEY])
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_ADVISORY_LOCK_KEY])


def ensure_search_schema() -> bool:
    """Recreate the full-text objects if they are missing; True when something was repaired.

    On SQLite a later migration that rebuilds ``memory_index_chunks`` (Django copies the table) drops its
    triggers, so every index run checks them and, if needed, recreates them and rebuilds the FTS table.
    """
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            placeholders = ", ".join(["%s"] * len(SQLITE_FTS_OBJECTS))
            cursor.execute(f"SELECT name FROM sqlite_master WHERE name IN ({placeholders})", sorted(SQLITE_FTS_OBJECTS))
            if {row[0] for row in cursor.fetchall()} == SQLITE_FTS_OBJECTS:
                return False
            with transaction.atomic():
                for statement in SQLITE_FTS_SQL:
                    cursor.execute(statement)
                cursor.execute("INSERT INTO memory_index_chunks_fts(memory_index_chunks_fts) VALUES ('rebuild')")
            logger.warning("recall index: recreated the FTS5 table and triggers")
            return True
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_name = 'memory_index_chunks' AND column_name = 'search_vector'"
            )
            if cursor.fetchone():
                return False
            for statement in POSTGRES_FTS_SQL:
                cursor.execute(statement)
            logger.warning("recall index: recreated the search_vector column")
            return True
    return False


# --- Meta ---------------------------------------------------------------------------------------------
def read_meta(key: str = META_KEY) -> dict:
    row = MemoryIndexMeta.objects.filter(key=key).first()
    if row is None:
        return {}
    try:
        value = json.loads(row.value)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {"value": value}


def write_meta(key: str, value: dict | str) -> None:
    MemoryIndexMeta.objects.update_or_create(key=key, defaults={"value": json.dumps(value, sort_keys=True)})


def index_generation() -> str:
    """A new random token whenever chunks change; processes keep their vector matrix until it moves.

    Random rather than a counter, so that an index dropped and built again never repeats an old value.
    """
    row = MemoryIndexMeta.objects.filter(key=GENERATION_KEY).values_list("value", flat=True).first()
    return row or ""


def bump_generation() -> None:
    write_meta(GENERATION_KEY, new_ulid())
