"""Reading samples at export speed: ``Row`` (one sample as a writer sees it), driver values streamed from a
server-side cursor without the ORM's per-row converters, and SQLite read without its memory map."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
from django.conf import settings
from django.db import connection, connections
from django.db.models import QuerySet


class Row:
    """One sample as the exporter reads it. ``content_text`` is the stored JSON (redacted unless include_pii);
    ``content`` decodes it once, when a format needs it (``raw`` splices the text as it is). ``extra`` holds the
    other columns, read only for a writer with ``full_rows``."""

    __slots__ = (
        "_content",
        "content_text",
        "id",
        "sample_type",
        "quality_score",
        "annotation_status",
        "session_id",
        "extra",
    )

    def __init__(
        self,
        id: str,  # noqa: A002 - the column's name
        sample_type: str,
        content_text: str,
        quality_score: float | None,
        annotation_status: str,
        session_id: str,
        extra: dict[str, Any] | None = None,
    ):
        self.id = id
        self.sample_type = sample_type
        self.content_text = content_text
        self._content: dict[str, Any] | None = None
        self.quality_score = quality_score
        self.annotation_status = annotation_status
        self.session_id = session_id
        self.extra = extra or {}

    @property
    def content(self) -> dict[str, Any]:
        if self._content is None:
            self._content = orjson.loads(self.content_text)
        return self._content

    @content.setter
    def content(self, value: dict[str, Any]) -> None:
        self._content = value
        self.content_text = orjson.dumps(value).decode()


def parse_time(value: Any) -> dt.datetime | None:
    """A timestamp read as text (cheaper than the ORM's converter): ISO 8601, naive meaning UTC (SQLite)."""
    if value is None or isinstance(value, dt.datetime):
        return value
    parsed = dt.datetime.fromisoformat(value)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


@contextmanager
def _reading_connection(alias: str) -> Iterator[Any]:
    """The connection to stream the export from.

    On PostgreSQL a connection of its own, in one read-only transaction: a server-side cursor outside a
    transaction is declared WITH HOLD, which makes the server compute every row before the first one is
    sent; inside one, rows stream while they are computed. Its own connection, so that the export's
    progress updates (on the default connection) are seen by pollers at once. Elsewhere the default one.
    """
    db = connections[alias]
    if db.vendor != "postgresql" or db.in_atomic_block:
        yield db  # Inside a transaction already (a test, a caller's atomic block): it streams as it is.
        return
    reader = connections.create_connection(alias)
    try:
        reader.set_autocommit(False)
        with reader.cursor() as cursor:
            cursor.execute("SET TRANSACTION READ ONLY")
        yield reader
    finally:
        try:
            reader.rollback()
        finally:
            reader.close()


def stream_values(queryset: QuerySet, names: Sequence[str], *, chunk_size: int) -> Iterator[tuple[Any, ...]]:
    """The queryset's rows as plain tuples in ``names`` order, from a server-side cursor on PostgreSQL.

    What ``.iterator()`` does, without the ORM's per-row converters: every column here is text, a number
    or a boolean (SQLite's 0/1 serves as one), so the driver's values are used as they are; that is a
    quarter of the export's time. Columns are found by name in the cursor's description.
    """
    sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    with _reading_connection(queryset.db) as db, db.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        columns = [column[0] for column in cursor.description]
        order = [columns.index(name) for name in names]
        identity = order == list(range(len(columns)))
        while rows := cursor.fetchmany(chunk_size):
            if identity:
                yield from rows
            else:
                for row in rows:
                    yield tuple(row[i] for i in order)


@contextmanager
def reading_without_mmap() -> Iterator[None]:
    """On SQLite, read through the page cache instead of the memory map while exporting.

    Every mapped page the export touches counts in the process's resident memory (up to
    SQLITE_MMAP_SIZE_MB, 256 MB by default), so a one-pass read of a large table would look like a
    memory leak of that size; the small page cache keeps the export's memory flat.
    """
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA mmap_size=0")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA mmap_size={int(settings.SQLITE_MMAP_SIZE_MB) * 1024 * 1024}")
