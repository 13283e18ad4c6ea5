"""The recall index: an incremental, always-rebuildable index of the workspace's Markdown (seeds 001 and 003).

What is indexed, all under ``WORKSPACE_DIR`` and nothing outside it (a symlink that leaves the workspace
is skipped, symlinked folders are not followed): the five memory files, ``memory/YYYY-MM-DD.md`` daily logs
(a ``YYYY-MM-DD-topic.md`` too) and ``bank/**/*.md`` pages (``world.md``, ``experience.md``,
``opinions.md``, ``entities/<Name>.md``).

``index_workspace`` is incremental:

1. A file whose size and mtime equal the recorded ones is skipped unread; one whose content hash is
   unchanged only has its mtime recorded.
2. A changed file is chunked again (cheap) and its chunks are compared by hash with the stored ones:
   unchanged chunks stay (with their embedding, hit count and date; only moved line numbers are updated),
   new chunks are inserted, vanished ones deleted, in one transaction per file.
3. Chunks without an embedding for the configured model get one, from ``embedding_cache`` when the text
   was embedded before, from the endpoint otherwise (batched). An endpoint failure leaves them keyword-only
   until the next run; it never stops indexing.
4. Files that disappeared lose their chunks.

Runs hold a lock (a file lock per machine, and an advisory lock on PostgreSQL), so a re-index after a write,
the beat schedule and the CLI never interleave.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import json
import logging
import os
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from filelock import FileLock

from guardian_app.models import MemoryChunk, MemoryIndexFile, MemoryIndexMeta
from guardian_app.recall.chunking import Chunk, chunk_markdown, search_text
from guardian_app.recall.embeddings import CacheStats, EmbeddingError, current_config, embed_with_cache
from guardian_app.recall.retain import entity_key, parse_time_range
from reflection_site import memory_files
from reflection_site.ids import new_ulid

logger = logging.getLogger(__name__)

SCHEMA_VERSION = (
    2  # 2: valid_from/valid_until. Bump when chunking or search tokens change: the next run re-chunks every file.
)
META_KEY = "memory_index_meta_v1"  # Seed 003's key.
GENERATION_KEY = "index_generation"
SOURCE = "memory"
_DAILY_LOG = re.compile(r"^memory/(\d{4})-(\d{2})-(\d{2})(?:[-_][^/]*)?\.md$")
_BANK_PAGE = re.compile(r"^bank/(?:[^/.][^/]*/)*[^/.][^/]*\.md$")
_BANK_KINDS = {"bank/world.md": "world", "bank/experience.md": "experience", "bank/opinions.md": "opinion"}
_EMBED_BATCH = 1024
_ADVISORY_LOCK_KEY = 0x5245_4341  # "RECA"

Progress = Callable[[int, int, str], None]

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


@dataclass
class IndexReport:
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    files_too_large: list[str] = field(default_factory=list)
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_moved: int = 0
    chunks_kept: int = 0
    embedded: int = 0
    embedding_cache_hits: int = 0
    embedding_error: str | None = None
    took_ms: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(
            self.chunks_added or self.chunks_removed or self.chunks_moved or self.embedded or self.embedding_cache_hits
        )

    def summary(self) -> str:
        line = (
            f"{self.files_seen} file(s): {self.files_indexed} indexed, {self.files_unchanged} unchanged, "
            f"{self.files_removed} removed; chunks +{self.chunks_added} -{self.chunks_removed} "
            f"~{self.chunks_moved} moved, {self.chunks_kept} kept; embedded {self.embedded} "
            f"({self.embedding_cache_hits} from cache) in {self.took_ms:.0f} ms"
        )
        if self.embedding_error:
            line += f"; embeddings failed: {self.embedding_error}"
        return line


@dataclass(frozen=True)
class SourceFile:
    path: str  # relative, with "/"
    absolute: Path


# --- What is indexed --------------------------------------------------------------------------------
def is_indexable(path: str) -> bool:
    """Whether a workspace-relative path is one the index covers (the patterns above)."""
    files = memory_files.active().files
    return path in files or bool(_DAILY_LOG.match(path)) or bool(_BANK_PAGE.match(path))


def daily_log_date(path: str) -> dt.date | None:
    match = _DAILY_LOG.match(path)
    if match is None:
        return None
    try:
        return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


def _inside(root: Path, candidate: Path) -> bool:
    try:
        candidate.resolve(strict=True).relative_to(root)
    except (OSError, ValueError):
        return False
    return True


def workspace_files(root: Path | None = None) -> list[SourceFile]:
    """Every indexable file under the workspace, sorted by path."""
    root = Path(root or settings.WORKSPACE_DIR).resolve()
    found: list[SourceFile] = []
    profile = memory_files.active()  # Its files; its bank/ pages live under pages_dir (memory/bank/ for OpenClaw).
    for name in profile.files:
        candidate = root / name
        if candidate.is_file() and _inside(root, candidate):
            found.append(SourceFile(name, candidate))
    logs = root / "memory"
    if logs.is_dir() and not logs.is_symlink():
        for entry in os.scandir(logs):
            rel = f"memory/{entry.name}"
            if _DAILY_LOG.match(rel) and entry.is_file() and _inside(root, Path(entry.path)):
                found.append(SourceFile(rel, Path(entry.path)))
    bank = root / profile.pages_dir / "bank"
    if bank.is_dir() and not bank.is_symlink():
        for folder, dirs, files in os.walk(bank):  # Symlinked folders are not followed.
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                absolute = Path(folder) / name
                rel = f"bank/{absolute.relative_to(bank).as_posix()}"  # a page's name, wherever it lives
                if _BANK_PAGE.match(rel) and _inside(root, absolute):
                    found.append(SourceFile(rel, absolute))
    return sorted(found, key=lambda f: f.path)


def _context(path: str) -> str:
    """The words that say where a chunk is: ``USER``, ``2026-02-03``, ``The-Castle``, ``world``."""
    day = daily_log_date(path)
    if day is not None:
        return day.isoformat()
    if path.startswith("bank/entities/"):
        return Path(path).stem
    return Path(path).stem


def indexed_text(path: str, heading: str, text: str) -> str:
    """What is embedded and hashed for a chunk: where it is, its heading, its lines."""
    context = _context(path)
    if heading:
        context = f"{context} › {heading}"
    return f"{context}\n{text}"


def chunk_hash(path: str, heading: str, text: str) -> str:
    return hashlib.sha256(indexed_text(path, heading, text).encode()).hexdigest()


def file_chunks(path: str, text: str) -> list[Chunk]:
    return chunk_markdown(text, max_tokens=settings.RECALL_CHUNK_TOKENS, overlap=settings.RECALL_CHUNK_OVERLAP)


def _entities_for(path: str, chunk: Chunk) -> list[str]:
    names = list(chunk.entities)
    if path.startswith("bank/entities/"):
        page = Path(path).stem
        if entity_key(page) not in {entity_key(n) for n in names}:
            names.insert(0, page)
    return names


def _entity_keys(names: Iterable[str]) -> str:
    keys = [entity_key(n) for n in names]
    return f"|{'|'.join(keys)}|" if keys else ""


def _new_chunk(path: str, chunk: Chunk, digest: str, timestamp: dt.datetime) -> MemoryChunk:
    entities = _entities_for(path, chunk)
    valid_from, valid_until = parse_time_range(chunk.content or chunk.text, daily_log_date(path) or timestamp.date())
    return MemoryChunk(
        path=path,
        source=SOURCE,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        hash=digest,
        model="",
        text=chunk.text,
        heading=chunk.heading[:512],
        search_text=search_text(indexed_text(path, chunk.heading, chunk.text) + " " + " ".join(entities)),
        embedding=None,
        kind=chunk.kind or _BANK_KINDS.get(path),
        entities=entities,
        entity_keys=_entity_keys(entities),
        confidence=chunk.confidence,
        content=chunk.content,
        timestamp=timestamp,
        valid_from=valid_from,
        valid_until=valid_until,
    )


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


def _bump_generation() -> None:
    write_meta(GENERATION_KEY, new_ulid())


def _chunking_params() -> dict:
    return {
        "schemaVersion": SCHEMA_VERSION,
        "chunkTokens": settings.RECALL_CHUNK_TOKENS,
        "chunkOverlap": settings.RECALL_CHUNK_OVERLAP,
    }


# --- Indexing -------------------------------------------------------------------------------------------
def _mtime_ms(stat: os.stat_result) -> int:
    return stat.st_mtime_ns // 1_000_000


def _aware(value: dt.datetime) -> dt.datetime:
    return value if timezone.is_aware(value) else timezone.make_aware(value)


def _new_timestamp(path: str, stat: os.stat_result) -> dt.datetime:
    """A daily log's day; else the file's mtime, i.e. about when the new text was written."""
    day = daily_log_date(path)
    if day is not None:
        return _aware(dt.datetime.combine(day, dt.time()))
    return dt.datetime.fromtimestamp(stat.st_mtime, tz=dt.UTC)


def _remove_path(path: str, report: IndexReport) -> None:
    with transaction.atomic():
        deleted, _ = MemoryChunk.objects.filter(path=path).delete()
        MemoryIndexFile.objects.filter(path=path).delete()
    report.chunks_removed += deleted
    report.files_removed += 1


Carried = dict[tuple[str, str], list[tuple[dt.datetime, int, dt.datetime | None]]]


def _index_file(
    source: SourceFile,
    known: MemoryIndexFile | None,
    *,
    force: bool,
    carried: Carried,
    report: IndexReport,
    trust_stat: bool = True,
) -> None:
    from guardian_app.write.workspace import open_regular

    try:
        # Never through a link (one swapped in after workspace_files looked), never waiting on a FIFO.
        fd, stat = open_regular(source.absolute)
    except OSError as exc:
        if exc.errno == errno.EPERM:
            logger.warning("recall index: %s is %s; not indexed", source.path, exc.strerror)
        if known is not None:
            _remove_path(source.path, report)
        return
    with os.fdopen(fd, "rb") as fh:
        return _index_open_file(
            source, known, fh, stat, force=force, carried=carried, report=report, trust_stat=trust_stat
        )


def _index_open_file(
    source: SourceFile,
    known: MemoryIndexFile | None,
    fh: BinaryIO,
    stat: os.stat_result,
    *,
    force: bool,
    carried: Carried,
    report: IndexReport,
    trust_stat: bool,
) -> None:
    mtime, size = _mtime_ms(stat), stat.st_size
    if trust_stat and not force and known is not None and known.mtime == mtime and known.size == size:
        report.files_unchanged += 1
        return
    if size > settings.RECALL_MAX_FILE_BYTES:
        logger.warning("recall index: %s is %d bytes, over RECALL_MAX_FILE_BYTES; not indexed", source.path, size)
        report.files_too_large.append(source.path)
        if known is not None:
            _remove_path(source.path, report)
        return
    try:
        data = fh.read()
    except OSError as exc:
        logger.warning("recall index: cannot read %s: %s", source.path, exc)
        return
    digest = hashlib.sha256(data).hexdigest()
    if not force and known is not None and known.hash == digest:
        MemoryIndexFile.objects.filter(path=source.path).update(mtime=mtime, size=size)
        report.files_unchanged += 1
        return

    text = data.decode("utf-8", errors="replace")
    chunks = file_chunks(source.path, text)
    existing: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for chunk_id, chunk_digest, start, end in (
        MemoryChunk.objects.filter(path=source.path)
        .order_by("start_line", "id")
        .values_list("id", "hash", "start_line", "end_line")
    ):
        existing[chunk_digest].append((chunk_id, start, end))

    moved: list[MemoryChunk] = []
    created: list[MemoryChunk] = []
    fallback_time = _new_timestamp(source.path, stat)
    for chunk in chunks:
        chunk_digest = chunk_hash(source.path, chunk.heading, chunk.text)
        if existing.get(chunk_digest):
            chunk_id, start, end = existing[chunk_digest].pop(0)
            if (start, end) != (chunk.start_line, chunk.end_line):
                moved.append(MemoryChunk(id=chunk_id, start_line=chunk.start_line, end_line=chunk.end_line))
            else:
                report.chunks_kept += 1
            continue
        row = _new_chunk(source.path, chunk, chunk_digest, fallback_time)
        previous = carried.get((source.path, chunk_digest))
        if previous:
            row.timestamp, row.hits, row.last_hit_at = previous.pop(0)
        created.append(row)
    gone = [chunk_id for entries in existing.values() for chunk_id, _, _ in entries]

    with transaction.atomic():
        if gone:
            MemoryChunk.objects.filter(id__in=gone).delete()
        if moved:
            MemoryChunk.objects.bulk_update(moved, ["start_line", "end_line"], batch_size=500)
        if created:
            MemoryChunk.objects.bulk_create(created, batch_size=500)
        MemoryIndexFile.objects.update_or_create(
            path=source.path,
            defaults={"source": SOURCE, "hash": digest, "mtime": mtime, "size": size, "indexed_at": timezone.now()},
        )
    report.files_indexed += 1
    report.chunks_added += len(created)
    report.chunks_removed += len(gone)
    report.chunks_moved += len(moved)


def _embed_pending(report: IndexReport) -> None:
    """Give every chunk without a vector of the configured model one (cache first, then the endpoint).

    New chunks are stored with an empty ``model``; while the configured model stays the one the meta row
    names, only those are looked at (an indexed lookup). A new model or endpoint re-embeds every chunk.
    """
    config = current_config()
    if config is None:
        return
    label = config.label
    meta = read_meta()
    if meta.get("embeddingLabel") == label:
        pending = MemoryChunk.objects.filter(model="")
    else:
        pending = MemoryChunk.objects.filter(~Q(model=label) | Q(embedding__isnull=True))
    stats = CacheStats()
    last_id = 0
    failed = False
    while True:
        rows = list(
            pending.filter(id__gt=last_id)
            .order_by("id")
            .values_list("id", "hash", "path", "heading", "text")[:_EMBED_BATCH]
        )
        if not rows:
            break
        last_id = rows[-1][0]
        items = [(digest, indexed_text(path, heading, text)) for _, digest, path, heading, text in rows]
        try:
            vectors = embed_with_cache(items, config=config, stats=stats)
        except EmbeddingError as exc:
            logger.warning("recall index: %s; those chunks stay keyword-only until the next run", exc)
            report.embedding_error = str(exc)
            failed = True
            break
        # One prepared UPDATE per row: the ORM's bulk_update builds a CASE per column and batch, which cost more
        # than the local model's embedding itself.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(
                "UPDATE memory_index_chunks SET embedding = %s, model = %s WHERE id = %s",
                [(vectors[digest], label, chunk_id) for chunk_id, digest, *_ in rows],
            )
    report.embedded += stats.embedded
    report.embedding_cache_hits += stats.hits
    if failed and meta.get("embeddingLabel") != label:
        return  # Keep looking at every chunk until one full pass succeeds.
    sample = MemoryChunk.objects.filter(model=label).values_list("embedding", flat=True).first()
    dims = len(bytes(sample)) // 4 if sample is not None else meta.get("vectorDims")
    wanted = {
        **meta,
        "provider": config.provider,
        "model": config.model,
        "vectorDims": dims,
        "embeddingLabel": label,
    }
    if wanted != meta:
        write_meta(META_KEY, wanted)


# --- Conversations (seed 003's "sessions" source) ---------------------------------------------------------
SESSIONS_SOURCE = "sessions"
SESSIONS_META_KEY = "sessions_index"
# Turns are read from a little before the last one indexed: a turn committed late (a longer transaction, another
# web process) has an earlier created_at than one already seen. Its chunk hash says whether it is already in.
_SESSIONS_OVERLAP = dt.timedelta(minutes=5)
_SESSIONS_BATCH = 1000
_SESSIONS_PRUNE_EVERY = dt.timedelta(hours=1)


def session_path(session_id: str) -> str:
    return f"{SESSIONS_SOURCE}/{session_id}"


def turn_text(user_from: str | None, user_message: str, agent_message: str) -> str:
    """A turn as the index stores it: each speaker on its own paragraph."""
    return f"{user_from or 'user'}: {user_message.strip()}\n\nagent: {agent_message.strip()}"


def index_sessions(report: IndexReport | None = None) -> int:
    """Index the conversation turns stored since the last run (a delta); returns the chunks added.

    1. Turns created since the watermark (less an overlap) are read in batches, oldest first.
    2. Each becomes one chunk, or several for a long turn (the Markdown packer's limit), with path
       ``sessions/<session id>``, lines = the turn number (the result's source is ``<session>#<turn>``),
       heading = speaker and date, timestamp = when the turn was stored. A chunk whose hash is already in
       the index (the overlap, a second run) is skipped.
    3. Chunks of sessions that no longer exist (retention) are deleted.
    Runs inside ``index_workspace``'s lock (the every-minute beat and the CLI); ingest is not touched.
    """
    from sessions_app.models import ConversationTurn

    report = report if report is not None else IndexReport()
    meta = read_meta(SESSIONS_META_KEY)
    since = dt.datetime.fromisoformat(meta["lastCreatedAt"]) - _SESSIONS_OVERLAP if meta.get("lastCreatedAt") else None
    added = 0
    last_key: tuple[dt.datetime, str] | None = None
    while True:
        turns = ConversationTurn.objects.order_by("created_at", "id")
        if last_key is not None:
            turns = turns.filter(Q(created_at__gt=last_key[0]) | Q(created_at=last_key[0], id__gt=last_key[1]))
        elif since is not None:
            turns = turns.filter(created_at__gte=since)
        batch = list(
            turns.values_list(
                "id",
                "session_id",
                "turn_number",
                "user_from",
                "user_message_content",
                "agent_message_content",
                "created_at",
            )[:_SESSIONS_BATCH]
        )
        if not batch:
            break
        last_key = (batch[-1][6], batch[-1][0])
        rows: list[MemoryChunk] = []
        for turn_id, session_id, number, user_from, user_message, agent_message, created in batch:
            path = session_path(session_id)
            heading = f"{user_from or 'user'} and agent, {timezone.localtime(created):%Y-%m-%d %H:%M}"
            for piece in file_chunks(path, turn_text(user_from, user_message, agent_message)):
                digest = hashlib.sha256(f"{turn_id}\n{piece.start_line}\n{piece.text}".encode()).hexdigest()
                rows.append(
                    MemoryChunk(
                        path=path[:512],
                        source=SESSIONS_SOURCE,
                        start_line=number,
                        end_line=number,
                        hash=digest,
                        model="",
                        text=piece.text,
                        heading=heading[:512],
                        search_text=search_text(indexed_text(path, heading, piece.text)),
                        embedding=None,
                        content=piece.text,
                        timestamp=created,
                    )
                )
        known = set(
            MemoryChunk.objects.filter(source=SESSIONS_SOURCE, hash__in=[r.hash for r in rows]).values_list(
                "hash", flat=True
            )
        )
        rows = [r for r in rows if r.hash not in known]
        with transaction.atomic():
            MemoryChunk.objects.bulk_create(rows, batch_size=500)
            write_meta(SESSIONS_META_KEY, {**read_meta(SESSIONS_META_KEY), "lastCreatedAt": last_key[0].isoformat()})
        added += len(rows)
    removed = 0
    pruned_at = meta.get("prunedAt")
    now = timezone.now()
    if added or not pruned_at or now - dt.datetime.fromisoformat(pruned_at) > _SESSIONS_PRUNE_EVERY:
        # Sessions deleted by retention lose their chunks; a scan of the transcript chunks, so at most hourly.
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM memory_index_chunks WHERE source = %s AND NOT EXISTS "
                "(SELECT 1 FROM sessions s WHERE s.id = substr(memory_index_chunks.path, %s))",
                [SESSIONS_SOURCE, len(SESSIONS_SOURCE) + 2],
            )
            removed = cursor.rowcount
        latest = read_meta(SESSIONS_META_KEY)
        write_meta(SESSIONS_META_KEY, {**latest, "prunedAt": now.isoformat()})
    report.chunks_added += added
    report.chunks_removed += removed
    return added


def _save_vector_matrix() -> None:
    """Full runs (the minute beat, the CLI) leave the current generation's vector matrix on disk for recall's
    first query to map; a re-index of one file does not (at 100k chunks the save reads every vector)."""
    from guardian_app.recall.recall import _matrix_dir, save_vector_matrix

    config = current_config()
    if config is None or _matrix_dir(config.label, index_generation()).is_dir():
        return
    try:
        save_vector_matrix(config.label)
    except OSError as exc:
        logger.warning("recall index: could not save the vector matrix: %s", exc)


def index_workspace(
    *, rebuild: bool = False, paths: Iterable[str] | None = None, progress: Progress | None = None
) -> IndexReport:
    """Bring the index up to date with the workspace; ``paths`` limits the run to those files.

    ``rebuild`` drops every chunk and indexes everything again (hit counts and dates are kept for text
    that is still there). Changed chunking settings rebuild the same way on the next run.
    """
    started = time.perf_counter()
    report = IndexReport()
    root = Path(settings.WORKSPACE_DIR).resolve()
    with index_lock():
        ensure_search_schema()
        meta = read_meta()
        params = _chunking_params()
        rechunk = rebuild or any(meta.get(k) != v for k, v in params.items())
        carried: Carried = defaultdict(list)
        if rechunk:
            for path, digest, timestamp, hits, last_hit in MemoryChunk.objects.values_list(
                "path", "hash", "timestamp", "hits", "last_hit_at"
            ).order_by("path", "start_line"):
                carried[(path, digest)].append((timestamp, hits, last_hit))
            with transaction.atomic():
                MemoryChunk.objects.all().delete()
                MemoryIndexFile.objects.all().delete()
                write_meta(META_KEY, {**meta, **params})
                write_meta(SESSIONS_META_KEY, {})  # Transcripts are chunked again too.

        if paths is None:
            sources = workspace_files(root)
            known = {row.path: row for row in MemoryIndexFile.objects.all()}
            vanished = sorted(set(known) - {s.path for s in sources})
        else:
            wanted = sorted({p for p in paths if is_indexable(p)})
            for ignored in set(paths) - set(wanted):
                logger.warning("recall index: %r is not a file the index covers; ignored", ignored)
            on_disk = {p: root / memory_files.active().disk_path(p) for p in wanted}
            sources = [SourceFile(p, on_disk[p]) for p in wanted if on_disk[p].is_file() and _inside(root, on_disk[p])]
            known = {row.path: row for row in MemoryIndexFile.objects.filter(path__in=wanted)}
            vanished = sorted(set(wanted) - {s.path for s in sources})

        total = len(sources)
        for done, source in enumerate(sources, start=1):
            # A file named by the caller changed for sure: compare its hash even if size and mtime look the same.
            _index_file(
                source, known.get(source.path), force=rechunk, carried=carried, report=report, trust_stat=paths is None
            )
            if progress is not None:
                progress(done, total, source.path)
        for path in vanished:
            if path in known:
                _remove_path(path, report)
        report.files_seen = total
        if rechunk or report.chunks_added >= 1000:
            with connection.cursor() as cursor:
                if connection.vendor == "sqlite":
                    # Merge the FTS5 b-trees a large batch of inserts leaves behind: fewer segments, faster MATCH.
                    cursor.execute("INSERT INTO memory_index_chunks_fts(memory_index_chunks_fts) VALUES ('optimize')")
                else:
                    # Fresh statistics, or the planner may scan the table instead of using the GIN index.
                    cursor.execute("ANALYZE memory_index_chunks")
        if paths is None:
            index_sessions(report)
        _embed_pending(report)
        if report.changed or report.files_removed or rechunk:
            _bump_generation()
        if paths is None:
            _save_vector_matrix()
    report.took_ms = (time.perf_counter() - started) * 1000
    if report.changed or report.files_removed:
        logger.info("recall index: %s", report.summary())
    return report


def index_status() -> dict:
    """What the admin page and ``memory index`` show about the index."""
    from django.db.models import Count, Max

    config = current_config()
    totals = MemoryChunk.objects.aggregate(chunks=Count("id"), last=Max("updated_at"))
    embedded = MemoryChunk.objects.filter(model=config.label).exclude(embedding__isnull=True).count() if config else 0
    return {
        "files": MemoryIndexFile.objects.count(),
        "chunks": totals["chunks"],
        "embedded_chunks": embedded,
        "embedding_model": config.label if config else None,
        "last_indexed_at": MemoryIndexFile.objects.aggregate(last=Max("indexed_at"))["last"],
        "generation": index_generation(),
    }


def enqueue_index(file_name: str | None = None) -> None:
    """Ask a worker to re-index (just ``file_name`` when given); a dead broker is logged, the beat catches up."""
    from guardian_app.tasks import run_memory_index

    try:
        run_memory_index.delay(file_name)
    except Exception as exc:  # noqa: BLE001 - the broker's errors vary by transport; the schedule re-indexes.
        logger.warning("recall index: could not enqueue a re-index of %s: %s", file_name or "the workspace", exc)
