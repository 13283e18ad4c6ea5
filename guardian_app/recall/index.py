"""The recall index: an incremental, always-rebuildable index of the workspace's Markdown (seeds 001 and 003).

What is indexed: ``guardian_app.recall.sources``; conversations: ``guardian_app.recall.transcripts``; the lock,
the full-text objects and the meta rows: ``guardian_app.recall.storage``.

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
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from guardian_app.models import MemoryChunk, MemoryIndexFile
from guardian_app.recall.embeddings import CacheStats, EmbeddingError, current_config, embed_with_cache
from guardian_app.recall.sources import (
    SOURCE,
    IndexReport,
    SourceFile,
    chunk_hash,
    daily_log_date,
    file_chunks,
    indexed_text,
    inside,
    is_indexable,
    new_chunk,
    workspace_files,
)
from guardian_app.recall.storage import (
    META_KEY,
    bump_generation,
    ensure_search_schema,
    index_generation,
    index_lock,
    read_meta,
    write_meta,
)
from guardian_app.recall.transcripts import SESSIONS_META_KEY, index_sessions
from guardian_app.recall.vec_sync import VEC_META_KEY
from guardian_app.recall.vec_table import database_file, ensure_vector_queue, sync_vector_table
from guardian_app.recall.vectors import matrix_dir, save_vector_matrix
from guardian_app.recall.writer import ChunkWriter, FileChange
from reflection_site import memory_files
from reflection_site.celery import enqueue_on_commit, send

logger = logging.getLogger(__name__)

SCHEMA_VERSION = (
    2  # 2: valid_from/valid_until. Bump when chunking or search tokens change: the next run re-chunks every file.
)
_EMBED_BATCH = 1024
Progress = Callable[[int, int, str], None]


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
    writer: ChunkWriter,
    trust_stat: bool = True,
) -> None:
    # Inside: guardian_app.write.similarity imports recall's embeddings, so a module-level import would loop.
    from reflection_site.safe_files import open_regular

    report = writer.report
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
    change = FileChange(source.path, SOURCE, digest, mtime, size)
    _plan_chunks(change, data.decode("utf-8", errors="replace"), stat, carried=carried, report=report)
    writer.add(change)


def _plan_chunks(change: FileChange, text: str, stat: os.stat_result, *, carried: Carried, report: IndexReport) -> None:
    """Compare the file's chunks with the stored ones by hash: unchanged chunks stay (moved ones get their new
    lines), new ones are created (keeping the date and hits of text that was indexed before), vanished ones go."""
    existing: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for chunk_id, chunk_digest, start, end in (
        MemoryChunk.objects.filter(path=change.path)
        .order_by("start_line", "id")
        .values_list("id", "hash", "start_line", "end_line")
    ):
        existing[chunk_digest].append((chunk_id, start, end))
    fallback_time = _new_timestamp(change.path, stat)
    for chunk in file_chunks(change.path, text):
        chunk_digest = chunk_hash(change.path, chunk.heading, chunk.text)
        if existing.get(chunk_digest):
            chunk_id, start, end = existing[chunk_digest].pop(0)
            if (start, end) != (chunk.start_line, chunk.end_line):
                change.moved.append((chunk.start_line, chunk.end_line, chunk_id))
            else:
                report.chunks_kept += 1
            continue
        row = new_chunk(change.path, chunk, chunk_digest, fallback_time)
        previous = carried.get((change.path, chunk_digest))
        if previous:
            row.timestamp, row.hits, row.last_hit_at = previous.pop(0)
        change.created.append(row)
    change.gone = [chunk_id for entries in existing.values() for chunk_id, _, _ in entries]


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


def _sync_vectors(*, rebuild: bool) -> None:
    """Bring sqlite-vec's vec0 table in step (SQLite with a database file only); skipped when it already is."""
    config = current_config()
    if config is None or database_file() is None:
        return
    if not rebuild and read_meta(VEC_META_KEY).get("generation") == index_generation():
        return
    try:
        sync_vector_table(config.label, rebuild=rebuild)
    except Exception as exc:  # noqa: BLE001 - a busy database or a broken extension: recall uses NumPy meanwhile.
        logger.warning("recall index: could not update the vec0 table: %s", exc)


def _save_vector_matrix() -> None:
    """Full runs (the minute beat, the CLI) leave the current generation's vector matrix on disk for recall's
    first query to map; a re-index of one file does not (at 100k chunks the save reads every vector)."""
    config = current_config()
    if config is None or matrix_dir(config.label, index_generation()).is_dir():
        return
    try:
        save_vector_matrix(config.label)
    except OSError as exc:
        logger.warning("recall index: could not save the vector matrix: %s", exc)


def _start_over(meta: dict, params: dict) -> Carried:
    """Drop every chunk and file row (a rebuild, or chunking changed); returns the dates and hits to carry over."""
    carried: Carried = defaultdict(list)
    for path, digest, timestamp, hits, last_hit in MemoryChunk.objects.values_list(
        "path", "hash", "timestamp", "hits", "last_hit_at"
    ).order_by("path", "start_line"):
        carried[(path, digest)].append((timestamp, hits, last_hit))
    with transaction.atomic():
        MemoryChunk.objects.all().delete()
        MemoryIndexFile.objects.all().delete()
        write_meta(META_KEY, {**meta, **params})
        write_meta(SESSIONS_META_KEY, {})  # Transcripts are chunked again too.
    return carried


def _sources(root: Path, paths: Iterable[str] | None) -> tuple[list[SourceFile], dict, list[str]]:
    """The files to look at, their recorded rows, and the recorded paths that are gone from disk."""
    if paths is None:
        sources = workspace_files(root)
        known = {row.path: row for row in MemoryIndexFile.objects.all()}
        return sources, known, sorted(set(known) - {s.path for s in sources})
    wanted = sorted({p for p in paths if is_indexable(p)})
    for ignored in set(paths) - set(wanted):
        logger.warning("recall index: %r is not a file the index covers; ignored", ignored)
    on_disk = {p: root / memory_files.active().disk_path(p) for p in wanted}
    sources = [SourceFile(p, on_disk[p]) for p in wanted if on_disk[p].is_file() and inside(root, on_disk[p])]
    known = {row.path: row for row in MemoryIndexFile.objects.filter(path__in=wanted)}
    return sources, known, sorted(set(wanted) - {s.path for s in sources})


def _optimize() -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            # Merge the FTS5 b-trees a large batch of inserts leaves behind: fewer segments, faster MATCH.
            cursor.execute("INSERT INTO memory_index_chunks_fts(memory_index_chunks_fts) VALUES ('optimize')")
        else:
            # Fresh statistics, or the planner may scan the table instead of using the GIN index.
            cursor.execute("ANALYZE memory_index_chunks")


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
        queue_repaired = ensure_vector_queue()
        meta = read_meta()
        params = _chunking_params()
        rechunk = rebuild or any(meta.get(k) != v for k, v in params.items())
        carried = _start_over(meta, params) if rechunk else defaultdict(list)
        if rechunk:
            # Starting over dropped every chunk, the other files' and the transcripts' too: index them all now,
            # not at the next full run (a first one-file run on a new install would leave recall half empty).
            paths = None
        sources, known, vanished = _sources(root, paths)
        writer = ChunkWriter(report, current_config())
        for done, source in enumerate(sources, start=1):
            # A file named by the caller changed for sure: compare its hash even if size and mtime look the same.
            _index_file(
                source, known.get(source.path), force=rechunk, carried=carried, writer=writer, trust_stat=paths is None
            )
            if progress is not None:
                progress(done, len(sources), source.path)
        writer.flush()
        for path in vanished:
            if path in known:
                _remove_path(path, report)
        report.files_seen = len(sources)
        if rechunk or report.chunks_added >= 1000:
            _optimize()
        if paths is None:
            index_sessions(report)
        _embed_pending(report)
        if report.changed or report.files_removed or rechunk:
            bump_generation()
        if paths is None:  # A one-file re-index leaves it to the next full run (NumPy answers meanwhile).
            _sync_vectors(rebuild=rechunk or queue_repaired)
            _save_vector_matrix()
    report.took_ms = (time.perf_counter() - started) * 1000
    if report.changed or report.files_removed:
        logger.info("recall index: %s", report.summary())
    return report


# --- Conversations as they arrive ---------------------------------------------------------------------------
TRANSCRIPTS_PENDING_KEY = "recall:transcripts-index-pending"
TRANSCRIPTS_PENDING_S = 60  # A lost message holds new asks off for this long at most; the minute beat covers it.


def index_new_turns() -> IndexReport:
    """Index the conversation turns stored since the last run, and nothing else (no workspace file is looked at):
    the delta that ``run_transcript_index`` runs soon after the gate decides on a turn."""
    started = time.perf_counter()
    report = IndexReport()
    with index_lock():
        ensure_search_schema()
        queue_repaired = ensure_vector_queue()
        index_sessions(report)
        _embed_pending(report)
        if report.changed:
            bump_generation()
        _sync_vectors(rebuild=queue_repaired)
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def enqueue_transcript_index() -> bool:
    """Ask a worker to index the new turns, unless an ask is already pending (one task for a burst of turns,
    not one a turn); returns whether it asked. The pending mark is a cache key the task clears when it starts."""
    if not _mark_pending(TRANSCRIPTS_PENDING_KEY, TRANSCRIPTS_PENDING_S, "the transcript index"):
        return False
    enqueue_on_commit("guardian_app.tasks.run_transcript_index")
    return True


def clear_transcript_index_pending() -> None:
    _clear_pending(TRANSCRIPTS_PENDING_KEY, "the transcript index")


def _mark_pending(key: str, timeout: int, what: str) -> bool:
    """Set the pending mark ``key`` unless it is set: whether the caller should ask (a cache outage: ask anyway,
    the index tasks are idempotent)."""
    try:
        return bool(cache.add(key, 1, timeout=timeout))
    except Exception as exc:  # noqa: BLE001 - the cache's errors vary by backend.
        logger.warning("recall index: cache unavailable for the pending mark of %s: %s", what, exc)
        return True


def _clear_pending(key: str, what: str) -> None:
    try:
        cache.delete(key)
    except Exception as exc:  # noqa: BLE001 - the mark expires by itself.
        logger.warning("recall index: could not clear the pending mark of %s: %s", what, exc)


def index_status() -> dict:
    """What the admin page and ``memory index`` show about the index."""
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


# A memory file's re-index after a write is asked for once per burst of writes to it, as the transcripts' is.
REINDEX_PENDING_KEY = "recall:reindex-pending:{}"
REINDEX_PENDING_S = 60  # A lost message holds new asks off for this long at most; the minute beat covers it.


def enqueue_index(file_name: str | None = None) -> bool:
    """Ask a worker to re-index (just ``file_name`` when given), unless an ask for it is already pending; returns
    whether it asked. A burst of guarded writes to a file sends one task, not one a write (each was a message's
    fsync, with the file's lock held): the task clears the mark when it starts, before it reads the file, so a
    write after that asks again and the index ends up with every write. A dead broker is logged and the mark
    cleared (the next write asks again); the beat catches up."""
    what = file_name or "the workspace"
    key = REINDEX_PENDING_KEY.format(file_name or "*")
    if not _mark_pending(key, REINDEX_PENDING_S, f"the re-index of {what}"):
        return False
    try:
        send("guardian_app.tasks.run_memory_index", file_name)
    except Exception as exc:  # noqa: BLE001 - the broker's errors vary by transport; the schedule re-indexes.
        logger.warning("recall index: could not enqueue a re-index of %s: %s", what, exc)
        _clear_pending(key, f"the re-index of {what}")
        return False
    return True


def clear_index_pending(file_name: str | None = None) -> None:
    """The re-index task of ``file_name`` (None: the workspace) has started: the next write asks again."""
    _clear_pending(REINDEX_PENDING_KEY.format(file_name or "*"), f"the re-index of {file_name or 'the workspace'}")
