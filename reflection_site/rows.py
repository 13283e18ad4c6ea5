"""Rows inserted without the ORM's query compiler, with the column values Django itself would send.

Ingest writes a session, a turn and its context window for every request, and the scale seed writes millions of
rows: for both, compiling each ``INSERT`` through the ORM (and building a model instance per row) cost more than
the database did. A ``RowWriter`` builds the statement once per model and prepares each value the way the field
would (``get_db_prep_save``), skipping the call only where the Python value is already what the driver takes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from django.db import connection, models

# Fields whose (already validated) Python value is what the database driver takes as it is.
_RAW_FIELDS = (models.CharField, models.TextField, models.IntegerField, models.FloatField, models.BooleanField)
_NO_DEFAULT = object()


class RowWriter:
    """The ``INSERT`` of every concrete column of ``model`` (an auto key and generated columns left out), plus ``suffix``
    (an ``ON CONFLICT`` clause, say), and how to prepare each column's value. One per model, database vendor and
    suffix: ``RowWriter.of(model)``."""

    _cache: dict[tuple[str, type[models.Model], str], RowWriter] = {}

    def __init__(self, model: type[models.Model], suffix: str = "") -> None:
        fields = [
            f
            for f in model._meta.concrete_fields
            # The database fills an auto key and a generated column.
            if not (isinstance(f, models.AutoField) and f.primary_key) and not f.generated
        ]
        for field in fields:
            if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
                # pre_save() would set these; a writer that skips it must not be used for such a model.
                raise ValueError(f"{model.__name__}.{field.name} is auto_now: insert it through the ORM")
        self.model = model
        self.fields = fields
        self.attnames = [f.attname for f in fields]
        self.converters = [_converter(f) for f in fields]
        self._defaults = [f.get_default if f.has_default() or f.null else _NO_DEFAULT for f in fields]
        quote = connection.ops.quote_name
        self.table = quote(model._meta.db_table)
        self.columns = ", ".join(quote(f.column) for f in fields)
        marks = ", ".join(["%s"] * len(fields))
        self.sql = f"INSERT INTO {self.table} ({self.columns}) VALUES ({marks}){suffix}"

    @classmethod
    def of(cls, model: type[models.Model], suffix: str = "") -> RowWriter:
        key = (connection.vendor, model, suffix)
        writer = cls._cache.get(key)
        if writer is None:
            writer = cls._cache[key] = cls(model, suffix)
        return writer

    def prepare(self, values: Iterable[Any]) -> tuple[Any, ...]:
        """Database values of one row, given its Python values in ``attnames`` order."""
        return tuple(
            value if convert is None or value is None else convert(value)
            for value, convert in zip(values, self.converters, strict=True)
        )

    def prepare_mapping(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """Database values of one row given by attname; a column left out takes its field's default."""
        row = []
        for name, default in zip(self.attnames, self._defaults, strict=True):
            if name in values:
                row.append(values[name])
            elif default is _NO_DEFAULT:
                raise ValueError(f"{self.model.__name__}.{name} has no value and no default")
            else:
                row.append(default())
        return self.prepare(row)

    def insert(self, rows: Sequence[Sequence[Any]]) -> None:
        """Run the ``INSERT`` for prepared rows: one statement, or ``executemany``."""
        with connection.cursor() as cursor:
            if len(rows) == 1:
                cursor.execute(self.sql, rows[0])
            else:
                cursor.executemany(self.sql, rows)


def _converter(field: models.Field) -> Callable[[Any], Any] | None:
    if isinstance(field, (models.ForeignKey, *_RAW_FIELDS)):
        return None
    if isinstance(field, models.DateTimeField):
        adapt = connection.ops.adapt_datetimefield_value

        def datetime_value(value: Any) -> Any:
            # An aware datetime is what get_db_prep_save would hand to the adapter anyway; anything else (a naive
            # value, a date, a string) takes the field's own path, with its warning and conversion.
            if getattr(value, "tzinfo", None) is not None:
                return adapt(value)
            return field.get_db_prep_save(value, connection)

        return datetime_value
    return lambda value: field.get_db_prep_save(value, connection)
