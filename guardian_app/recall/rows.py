"""Reading ``memory_index_chunks`` for recall: the filters as SQL conditions, rows by id, column values as Python.

Filters (``since``, ``until``, ``kind``, ``entity``, ``file``) apply before ranking, in the same query as the search.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.utils import timezone

from guardian_app.recall.retain import entity_key


@dataclass(frozen=True)
class Filters:
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    kind: str | None = None
    entity: str | None = None
    file: str | None = None
    dated: bool = False  # only chunks of daily logs (a time scope's window; durable files have no date)

    def sql(self, alias: str = "c") -> tuple[str, list[Any]]:
        """`` AND …`` conditions on the chunks table and their parameters."""
        parts: list[str] = []
        params: list[Any] = []
        adapt = connection.ops.adapt_datetimefield_value
        if self.since is not None:
            parts.append(f"{alias}.timestamp >= %s")
            params.append(adapt(self.since))
        if self.until is not None:
            parts.append(f"{alias}.timestamp < %s")
            params.append(adapt(self.until))
        if self.kind:
            parts.append(f"{alias}.kind = %s")
            params.append(self.kind)
        if self.entity:
            parts.append(f"{alias}.entity_keys LIKE %s ESCAPE '\\'")
            params.append(f"%|{_like_escape(entity_key(self.entity))}|%")
        if self.file:
            if self.file.endswith("/"):
                parts.append(f"{alias}.path LIKE %s ESCAPE '\\'")
                params.append(_like_escape(self.file) + "%")
            else:
                parts.append(f"{alias}.path = %s")
                params.append(self.file)
        if self.dated:
            parts.append(f"({alias}.path LIKE 'memory/%%' OR {alias}.source = 'sessions')")
        return "".join(f" AND {p}" for p in parts), params

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", False)}


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# What ranking needs of a candidate, read with its score: (timestamp, hits, path, start_line).
Meta = tuple[Any, int, str, int]
META_COLUMNS = "c.timestamp, c.hits, c.path, c.start_line"


def fetch(columns: str, ids: list[int]) -> list[tuple]:
    """Rows of ``memory_index_chunks c`` by id, raw: recall reads a few columns of a few rows, often."""
    if not ids:
        return []
    placeholders = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT c.id, {columns} FROM memory_index_chunks c WHERE c.id IN ({placeholders})", ids)
        return cursor.fetchall()


def as_datetime(value: Any) -> dt.datetime:
    """A timestamp column as an aware datetime (SQLite hands back Django's UTC text)."""
    if isinstance(value, dt.datetime):
        return value if timezone.is_aware(value) else value.replace(tzinfo=dt.UTC)
    parsed = dt.datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def as_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return value
    try:
        loaded = json.loads(value or "[]")
    except (TypeError, ValueError):
        return []
    return loaded if isinstance(loaded, list) else []
