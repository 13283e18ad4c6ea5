"""Conversations as a recall source (seed 003's ``sessions``): stored turns indexed as they arrive.

Each turn becomes one chunk, or several for a long turn (the Markdown packer's limit), with path
``sessions/<session id>``, lines = the turn number (a result's source is ``<session>#<turn>``), heading = speaker
and date, timestamp = when the turn was stored. Runs inside ``index_workspace``'s lock (the every-minute beat
and the CLI); ingest is not touched.
"""

from __future__ import annotations

import datetime as dt
import hashlib

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from guardian_app.models import MemoryChunk
from guardian_app.recall.chunking import search_text
from guardian_app.recall.embeddings import EmbeddingConfig, current_config
from guardian_app.recall.sources import ChunkRow, IndexReport, file_chunks, indexed_text
from guardian_app.recall.storage import read_meta, write_meta
from guardian_app.recall.writer import embed_rows, insert_rows
from sessions_app.models import ConversationTurn

SESSIONS_SOURCE = "sessions"
SESSIONS_META_KEY = "sessions_index"
# Turns are read from a little before the last one indexed: a turn committed late (a longer transaction, another
# web process) has an earlier created_at than one already seen. Its chunk hash says whether it is already in.
_SESSIONS_OVERLAP = dt.timedelta(minutes=5)
_SESSIONS_BATCH = 1000
_SESSIONS_PRUNE_EVERY = dt.timedelta(hours=1)
_TURN_COLUMNS = (
    "id",
    "session_id",
    "turn_number",
    "user_from",
    "user_message_content",
    "agent_message_content",
    "created_at",
)

TurnKey = tuple[dt.datetime, str]  # (created_at, id) of the last turn read


def session_path(session_id: str) -> str:
    return f"{SESSIONS_SOURCE}/{session_id}"


def turn_text(user_from: str | None, user_message: str, agent_message: str) -> str:
    """A turn as the index stores it: each speaker on its own paragraph."""
    return f"{user_from or 'user'}: {user_message.strip()}\n\nagent: {agent_message.strip()}"


def index_sessions(report: IndexReport | None = None) -> int:
    """Index the conversation turns stored since the last run (a delta); returns the chunks added.

    1. Turns created since the watermark (less an overlap) are read in batches, oldest first.
    2. Each becomes one chunk or several (``turn_chunks``). A chunk whose hash is already in the index
       (the overlap, a second run) is skipped.
    3. Chunks of sessions that no longer exist (retention) are deleted.
    """
    report = report if report is not None else IndexReport()
    meta = read_meta(SESSIONS_META_KEY)
    since = dt.datetime.fromisoformat(meta["lastCreatedAt"]) - _SESSIONS_OVERLAP if meta.get("lastCreatedAt") else None
    added = 0
    last_key: TurnKey | None = None
    config = current_config()
    while True:
        batch = _read_turns(since, last_key)
        if not batch:
            break
        last_key = (batch[-1][6], batch[-1][0])
        rows = [row for turn in batch for row in turn_chunks(*turn)]
        added += _store_new_chunks(rows, last_key, config=config, report=report)
    removed = _prune_deleted_sessions(meta, added)
    report.chunks_added += added
    report.chunks_removed += removed
    return added


def _read_turns(since: dt.datetime | None, last_key: TurnKey | None) -> list[tuple]:
    """The next batch of turns after ``last_key`` (or from ``since``), oldest first, as ``_TURN_COLUMNS``."""
    turns = ConversationTurn.objects.order_by("created_at", "id")
    if last_key is not None:
        turns = turns.filter(Q(created_at__gt=last_key[0]) | Q(created_at=last_key[0], id__gt=last_key[1]))
    elif since is not None:
        turns = turns.filter(created_at__gte=since)
    return list(turns.values_list(*_TURN_COLUMNS)[:_SESSIONS_BATCH])


def turn_chunks(
    turn_id: str,
    session_id: str,
    number: int,
    user_from: str | None,
    user_message: str,
    agent_message: str,
    created: dt.datetime,
) -> list[ChunkRow]:
    """The chunk rows of one turn (unsaved), each hashed on the turn's id, its line and its text."""
    path = session_path(session_id)
    heading = f"{user_from or 'user'} and agent, {timezone.localtime(created):%Y-%m-%d %H:%M}"
    rows: list[ChunkRow] = []
    for piece in file_chunks(path, turn_text(user_from, user_message, agent_message)):
        digest = hashlib.sha256(f"{turn_id}\n{piece.start_line}\n{piece.text}".encode()).hexdigest()
        embed_text = indexed_text(path, heading, piece.text)
        rows.append(
            ChunkRow(
                path=path[:512],
                source=SESSIONS_SOURCE,
                start_line=number,
                end_line=number,
                hash=digest,
                text=piece.text,
                heading=heading[:512],
                search_text=search_text(embed_text),
                content=piece.text,
                timestamp=created,
                embed_text=embed_text,
            )
        )
    return rows


def _store_new_chunks(
    rows: list[ChunkRow], last_key: TurnKey, *, config: EmbeddingConfig | None, report: IndexReport
) -> int:
    """Insert the rows not in the index yet (with the local model's vectors) and move the watermark to
    ``last_key``; returns how many."""
    known = set(
        MemoryChunk.objects.filter(source=SESSIONS_SOURCE, hash__in=[r.hash for r in rows]).values_list(
            "hash", flat=True
        )
    )
    rows = [r for r in rows if r.hash not in known]
    embed_rows(rows, config, report)
    with transaction.atomic():
        insert_rows(rows)
        write_meta(SESSIONS_META_KEY, {**read_meta(SESSIONS_META_KEY), "lastCreatedAt": last_key[0].isoformat()})
    return len(rows)


def _prune_deleted_sessions(meta: dict, added: int) -> int:
    """Sessions deleted by retention lose their chunks; a scan of the transcript chunks, so at most hourly
    (or when turns were added). Returns the chunks removed."""
    pruned_at = meta.get("prunedAt")
    now = timezone.now()
    if not (added or not pruned_at or now - dt.datetime.fromisoformat(pruned_at) > _SESSIONS_PRUNE_EVERY):
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM memory_index_chunks WHERE source = %s AND NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.id = substr(memory_index_chunks.path, %s))",
            [SESSIONS_SOURCE, len(SESSIONS_SOURCE) + 2],
        )
        removed = cursor.rowcount
    latest = read_meta(SESSIONS_META_KEY)
    write_meta(SESSIONS_META_KEY, {**latest, "prunedAt": now.isoformat()})
    return removed
