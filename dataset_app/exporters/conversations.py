"""The nightly conversation export (``storage.jsonlExport``) and the pruning of its files.

* ``export_conversations(day)`` writes ``conversations-YYYY-MM-DD.jsonl`` in the exports folder: one line per
  turn created that day (in ``TIME_ZONE``), with its session, context window, gate decisions, guardian
  audits and feedback, its text redacted (PII and secrets) unless ``JSONL_EXPORT_INCLUDE_PII``. It streams,
  and writes under a temporary name renamed when complete, so a re-run replaces the file whole.
* ``prune_export_files()`` deletes ``conversations-*.jsonl`` files older than ``jsonlExport.retentionDays``
  (by the date in the name). Dataset exports are the operators' and are never pruned.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from queue import Full, Queue
from typing import Any

import orjson
from django.conf import settings
from django.db import connections, models
from django.db.models import Prefetch, Q, QuerySet
from django.db.models.functions import Cast
from django.utils import timezone

from dataset_app.exporters.files import export_dir, open_private
from dataset_app.exporters.rows import reading_without_mmap
from guardian_app.models import WriteGuardianAudit
from reflection_site import privacy
from sessions_app.models import ConversationContext, ConversationTurn, MemoryGateDecision

logger = logging.getLogger(__name__)

CONVERSATIONS_RE = re.compile(r"^conversations-(\d{4}-\d{2}-\d{2})\.jsonl$")


def _line(record: dict[str, Any]) -> bytes:
    """A line of the conversation export: compact JSON in UTF-8 by orjson (issue 9: ``json.dumps`` was a third
    of the export's time). Until issue 9 the lines were ``json.dumps(record, ensure_ascii=False)``: the same
    values and key order, with a space after each ``,`` and ``:`` and floats in Python's notation (1e-05 where
    orjson writes 0.00001)."""
    try:
        return orjson.dumps(record)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits in a JSON column
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _decision_record(d: MemoryGateDecision) -> dict[str, Any]:
    return {
        "id": d.id,
        "run_number": d.run_number,
        "decision": d.decision,
        "reason": d.reason,
        "candidate_fact": d.candidate_fact,
        "confidence": d.confidence,
        "llm_model": d.llm_model,
        "llm_latency_ms": d.llm_latency_ms,
        "prompt_tokens": d.prompt_tokens,
        "completion_tokens": d.completion_tokens,
        "prompt_version": d.prompt_version,
        "created_at": _iso(d.created_at),
    }


def _audit_record(a: WriteGuardianAudit) -> dict[str, Any]:
    return {
        "id": a.id,
        "decision_id": a.decision_id,
        "target_file": a.target_file,
        "candidate_fact": a.candidate_fact,
        "status": a.status,
        "reason": a.reason,
        "diff": a.diff,
        "lines_added": a.lines_added,
        "lines_removed": a.lines_removed,
        "lines_modified": a.lines_modified,
        "llm_model": a.llm_model,
        "llm_latency_ms": a.llm_latency_ms,
        "created_at": _iso(a.created_at),
    }


def turn_record(turn: ConversationTurn) -> dict[str, Any]:
    """One line of the conversation export (reads prefetched context, decisions and audits)."""
    session = turn.session
    return {
        "id": turn.id,
        "session_id": turn.session_id,
        "channel_id": session.channel_id,
        "conversation_target": session.conversation_target,
        "account_id": session.account_id,
        "turn_number": turn.turn_number,
        "created_at": _iso(turn.created_at),
        "user_message": {
            "id": turn.user_message_id,
            "content": turn.user_message_content,
            "from": turn.user_from,
            "metadata": turn.user_metadata,
        },
        "agent_reply": {
            "id": turn.agent_message_id,
            "content": turn.agent_message_content,
            "metadata": turn.agent_metadata,
        },
        "context": [
            {"role": c.role, "message": c.message, "timestamp": _iso(c.timestamp), "sequence_number": c.sequence_number}
            for c in turn.context.all()
        ],
        "gate_status": turn.gate_status,
        "decisions": [_decision_record(d) for d in turn.decisions.all()],
        "audits": [_audit_record(a) for a in turn.audits.all()],
        "feedback": turn.feedback_json,
    }


def _day_bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime]:
    tz = timezone.get_default_timezone()
    start = dt.datetime.combine(day, dt.time.min, tzinfo=tz)
    return start, start + dt.timedelta(days=1)


def _turns_of(day: dt.date) -> Iterator[ConversationTurn]:
    start, end = _day_bounds(day)
    turns = (
        ConversationTurn.objects.filter(created_at__gte=start, created_at__lt=end)
        .select_related("session")
        .prefetch_related(
            Prefetch("context", queryset=ConversationContext.objects.order_by("sequence_number")),
            Prefetch("decisions", queryset=MemoryGateDecision.objects.defer("raw_response").order_by("run_number")),
            Prefetch("audits", queryset=WriteGuardianAudit.objects.order_by("created_at", "id")),
        )
        .order_by("created_at", "id")
    )
    return turns.iterator(chunk_size=500)


_TURN_FIELDS = (
    "id", "session_id", "session__channel_id", "session__conversation_target", "session__account_id",
    "turn_number", "created_at", "user_message_id", "user_message_content", "user_from", "user_metadata",
    "agent_message_id", "agent_message_content", "agent_metadata", "gate_status", "feedback_json",
)  # fmt: skip
_CONTEXT_FIELDS = ("turn_id", "role", "message", "timestamp", "sequence_number")
_DECISION_FIELDS = (
    "turn_id", "id", "run_number", "decision", "reason", "candidate_fact", "confidence", "llm_model",
    "llm_latency_ms", "prompt_tokens", "completion_tokens", "prompt_version", "created_at",
)  # fmt: skip
_AUDIT_FIELDS = (
    "turn_id", "id", "decision_id", "target_file", "candidate_fact", "status", "reason", "diff", "lines_added",
    "lines_removed", "lines_modified", "llm_model", "llm_latency_ms", "created_at",
)  # fmt: skip


def _driver_rows(sql: str, params: Any, db: str) -> list[tuple[Any, ...]]:
    """Rows as the database driver returns them, without the ORM's per-value converters (issue 9: parsing every
    timestamp and JSON column was half the export's CPU time)."""
    with connections[db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class _OfTurns:
    """A ``values_list`` query of the rows of some turns (``turn_id IN (…)``), compiled once per number of turns
    with stand-in ids and run with the page's: the ORM's preparation of 2,000 ids a page was a tenth of the
    export's time. On PostgreSQL the list is one array parameter (``= ANY(%s)``): psycopg parses a query's
    placeholders in Python on every run of a query too long for its cache."""

    def __init__(self, queryset: QuerySet) -> None:
        self.queryset = queryset
        self.array = connections[queryset.db].vendor == "postgresql"
        self.sql: dict[int, str] = {}

    def rows(self, turn_ids: list[str]) -> list[tuple[Any, ...]]:
        n = 1 if self.array else len(turn_ids)
        if n not in self.sql:
            stand_ins = [f"{k}" for k in range(n)]
            sql, params = self.queryset.filter(turn_id__in=stand_ins).query.sql_with_params()
            if list(params) != stand_ins:  # the ids must be the query's only parameters
                raise ValueError(f"unexpected parameters {params[:3]!r}")
            if self.array:
                if sql.count(" IN (%s)") != 1:
                    raise ValueError(f"no single IN (%s) in {sql[:200]}")
                sql = sql.replace(" IN (%s)", " = ANY(%s)")
            self.sql[n] = sql
        return _driver_rows(self.sql[n], [turn_ids] if self.array else turn_ids, self.queryset.db)


def _values(queryset: QuerySet, fields: tuple[str, ...]) -> QuerySet:
    """``values_list(*fields)``, the datetime columns as text on SQLite and PostgreSQL: SQLite's stored text
    (``CAST(… AS text)``), which the driver hands over as is where it parses a column declared ``datetime``
    (Django's sqlite3 converter); PostgreSQL's ``::text`` in the session's UTC, where Django's tz-aware loader
    is Python code run for every value. ``_datetime_converters`` reads them."""
    if connections[queryset.db].vendor not in ("sqlite", "postgresql"):
        return queryset.values_list(*fields)
    dates = {
        name
        for name in fields
        if "__" not in name and isinstance(queryset.model._meta.get_field(name), models.DateTimeField)
    }
    casts = {f"{name}_text": Cast(name, models.TextField()) for name in dates}
    return queryset.annotate(**casts).values_list(*(f"{name}_text" if name in dates else name for name in fields))


def _datetime_converters(connection: Any) -> tuple[Callable[[Any], Any], Callable[[Any], str | None]]:
    """For a datetime column's value as ``_values`` reads it: the aware datetime the ORM would give, and its
    ``_iso`` (the same string the ORM's value gives, without building a datetime when the text has the usual
    form)."""
    if connection.vendor not in ("sqlite", "postgresql"):
        return (lambda value: value), _iso
    utc = connection.timezone_name == "UTC"
    sqlite = connection.vendor == "sqlite"
    if sqlite:
        convert = connection.ops.convert_datetimefield_value

        def aware(value: Any) -> Any:
            return convert(value, None, connection)

    else:

        def aware(value: Any) -> Any:
            return dt.datetime.fromisoformat(value) if value is not None else None

    def iso(value: Any) -> str | None:
        if value is None:
            return None
        if utc and sqlite:
            # Naive UTC text, str(datetime): 'YYYY-MM-DD HH:MM:SS' and '.ffffff' unless zero.
            if len(value) in (19, 26) and value[10] == " ":
                return f"{value[:10]}T{value[11:]}+00:00"
        elif utc:
            # PostgreSQL in UTC: 'YYYY-MM-DD HH:MM:SS' and '.f' to '.ffffff' without trailing zeros, then '+00'.
            if value.endswith("+00") and value[10] == " ":
                if len(value) == 22:
                    return f"{value[:10]}T{value[11:19]}+00:00"
                if 24 <= len(value) <= 29 and value[19] == ".":
                    return f"{value[:10]}T{value[11:19]}.{value[20:-3]:0<6}+00:00"
        return _iso(aware(value))

    return aware, iso


def _json_value(value: Any) -> Any:
    """A JSON column's driver value as ``JSONField.from_db_value`` gives it (text on both databases)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


_Page = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]


def _pages(day: dt.date, chunk_size: int) -> Iterator[_Page]:
    """The day's turns in keyset pages of ``chunk_size``, each with its context, decisions and audits: four
    queries a page, driver rows (``_values``), on this thread's connection (without SQLite's memory map)."""
    with reading_without_mmap():  # issue 9: mapped pages of a one-pass read count as RSS
        yield from _keyset_pages(day, chunk_size)


def _keyset_pages(day: dt.date, chunk_size: int) -> Iterator[_Page]:
    start, end = _day_bounds(day)
    turns = ConversationTurn.objects.filter(created_at__gte=start, created_at__lt=end).order_by("created_at", "id")
    aware, _ = _datetime_converters(connections[turns.db])
    contexts = _OfTurns(_values(ConversationContext.objects.order_by("sequence_number"), _CONTEXT_FIELDS))
    decisions = _OfTurns(_values(MemoryGateDecision.objects.order_by("run_number"), _DECISION_FIELDS))
    audits = _OfTurns(_values(WriteGuardianAudit.objects.order_by("created_at", "id"), _AUDIT_FIELDS))
    after: tuple[Any, str] | None = None
    while True:
        page = turns
        if after is not None:
            # The redundant `created_at >= x` lets SQLite range-scan the index from the cursor instead of from the
            # start of the day on every page (the same as the API cursor, reflection_site/api.py).
            page = page.filter(created_at__gte=after[0]).filter(
                Q(created_at__gt=after[0]) | Q(created_at=after[0], id__gt=after[1])
            )
        rows = _driver_rows(*_values(page[:chunk_size], _TURN_FIELDS).query.sql_with_params(), turns.db)
        if not rows:
            return
        ids = [row[0] for row in rows]
        yield rows, contexts.rows(ids), decisions.rows(ids), audits.rows(ids)
        after = (aware(rows[-1][6]), rows[-1][0])


def _read_ahead(pages: Callable[[], Iterator[_Page]], depth: int = 2) -> Iterator[_Page]:
    """``pages()`` run on a thread of its own (its own database connection), up to ``depth`` pages ahead of the
    reader: the database's work on the next page overlaps the encoding of this one (issue 9: on PostgreSQL the
    server's time was half of the export's)."""
    queue: Queue[Any] = Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                queue.put(item, timeout=0.1)
                return True
            except Full:
                continue
        return False

    def run() -> None:
        try:
            for page in pages():
                if not put(page):
                    return
            put(done)
        except BaseException as exc:  # handed to the reader, raised there
            put(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name="conversation-export-read-ahead", daemon=True)
    thread.start()
    try:
        while (item := queue.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


def _records_of(day: dt.date, *, chunk_size: int = 2000, read_ahead: bool | None = None) -> Iterator[dict[str, Any]]:
    """``turn_record`` of every turn of the day, in order, from driver rows (issue 9): keyset pages of
    ``chunk_size`` turns (``_pages``), no model instances, no ORM value converters. The pages are read ahead on
    a thread (``_read_ahead``) unless ``read_ahead`` is False or the caller is in a transaction, whose rows
    another connection would not see."""
    connection = connections[ConversationTurn.objects.db]
    if read_ahead is None:
        read_ahead = not connection.in_atomic_block
    _, iso = _datetime_converters(connection)
    text, data = _cleaners()
    pages = _read_ahead(lambda: _pages(day, chunk_size)) if read_ahead else _pages(day, chunk_size)
    for rows, context_rows, decision_rows, audit_rows in pages:
        context: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for turn_id, role, message, timestamp, sequence in context_rows:
            context[turn_id].append(
                {"role": role, "message": text(message), "timestamp": iso(timestamp), "sequence_number": sequence}
            )
        decisions: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in decision_rows:
            decision = dict(zip(_DECISION_FIELDS[1:], row[1:], strict=True))
            decision["created_at"] = iso(decision["created_at"])
            decision["reason"], decision["candidate_fact"] = text(decision["reason"]), text(decision["candidate_fact"])
            decisions[row[0]].append(decision)
        audits: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in audit_rows:
            audit = dict(zip(_AUDIT_FIELDS[1:], row[1:], strict=True))
            audit["created_at"] = iso(audit["created_at"])
            for name in ("candidate_fact", "reason", "diff"):  # a written fact may hold PII the file keeps
                audit[name] = text(audit[name])
            audits[row[0]].append(audit)
        for (
            turn_id, session_id, channel_id, target, account_id, turn_number, created_at, user_message_id,
            user_content, user_from, user_metadata, agent_message_id, agent_content, agent_metadata, gate_status,
            feedback,
        ) in rows:  # fmt: skip
            yield {
                "id": turn_id,
                "session_id": session_id,
                "channel_id": channel_id,
                "conversation_target": target,
                "account_id": account_id,
                "turn_number": turn_number,
                "created_at": iso(created_at),
                "user_message": {
                    "id": user_message_id,
                    "content": text(user_content),
                    "from": user_from,
                    "metadata": data(_json_value(user_metadata)),
                },
                "agent_reply": {
                    "id": agent_message_id,
                    "content": text(agent_content),
                    "metadata": data(_json_value(agent_metadata)),
                },
                "context": context.get(turn_id, []),
                "gate_status": gate_status,
                "decisions": decisions.get(turn_id, []),
                "audits": audits.get(turn_id, []),
                "feedback": data(_json_value(feedback)),
            }


def _identity(value: Any) -> Any:
    return value


def _cleaners() -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """How the conversation export writes the turns' text: redacted (PII and secrets replaced by placeholders, as
    the decisions and refused audits already are) unless ``JSONL_EXPORT_INCLUDE_PII``, which is logged."""
    if settings.JSONL_EXPORT_INCLUDE_PII:
        logger.warning("conversation export with JSONL_EXPORT_INCLUDE_PII=true: the turns' raw text is written")
        return _identity, _identity
    return (lambda value: privacy.redact(value) if value else value), privacy.redact_data


@dataclass
class ConversationExport:
    path: Path
    turns: int
    size_bytes: int


def export_conversations(day: dt.date | None = None) -> ConversationExport:
    """Write ``conversations-<day>.jsonl`` (default: yesterday, as the midnight run wants) and return it."""
    if day is None:
        day = timezone.localdate() - dt.timedelta(days=1)
    directory = export_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / f"conversations-{day.isoformat()}.jsonl"
    part = path.with_name(path.name + ".part")
    count = 0
    try:
        with open_private(part) as fh:  # 0600: the turns' text, PII included when JSONL_EXPORT_INCLUDE_PII.
            buffer: list[bytes] = []
            # On this thread's connection too: what it had mapped is released (the pages are read on another).
            with reading_without_mmap():
                for record in _records_of(day):
                    buffer.append(_line(record))
                    count += 1
                    if len(buffer) >= 500:
                        fh.write(b"\n".join(buffer) + b"\n")
                        buffer.clear()
            if buffer:
                fh.write(b"\n".join(buffer) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    logger.info("exported %d turn(s) of %s to %s", count, day, path)
    return ConversationExport(path=path, turns=count, size_bytes=path.stat().st_size)


def prune_export_files(*, retention_days: int | None = None, today: dt.date | None = None) -> list[Path]:
    """Delete conversation exports older than ``retention_days`` (by the date in their name)."""
    days = settings.JSONL_EXPORT_RETENTION_DAYS if retention_days is None else retention_days
    directory = export_dir()
    if days <= 0 or not directory.is_dir():
        return []
    cutoff = (today or timezone.localdate()) - dt.timedelta(days=days)
    deleted: list[Path] = []
    for path in directory.iterdir():
        match = CONVERSATIONS_RE.match(path.name)
        if match is None or not path.is_file():
            continue
        try:
            day = dt.date.fromisoformat(match.group(1))
        except ValueError:
            continue
        if day < cutoff:
            path.unlink(missing_ok=True)
            deleted.append(path)
    if deleted:
        logger.info("deleted %d conversation export(s) older than %d day(s)", len(deleted), days)
    return deleted
