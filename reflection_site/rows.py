"""Rows inserted and read without the ORM's query compiler, with the column values Django itself would send and read.

Ingest writes a session, a turn and its context window for every request, and the scale seed writes millions of
rows: for both, compiling each ``INSERT`` through the ORM (and building a model instance per row) cost more than
the database did. A ``RowWriter`` builds the statement once per model and prepares each value the way the field
would (``get_db_prep_save``), skipping the call only where the Python value is already what the driver takes.

``RowUpdate`` does the same for the ``UPDATE`` statements every turn makes (the gate's claim, a guarded write's
pending mark, audit status and current version), and ``RowWriter.insert_instance`` for a guarded write's snapshot and
file version. A ``RowReader`` does the same for the lookups every turn makes (the gate's turn, the guardian's decision,
the audit a redelivered task would find, the operators' corrections): the ORM took 0.3-1 ms to compile each of them,
ten to thirty times what SQLite took to answer it.
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

    def insert_instance(self, instance: models.Model) -> None:
        """Insert the new ``instance`` (its model's defaults already filled by its constructor) and mark it stored, as
        ``save(force_insert=True)`` would, without ``pre_save``/``post_save``: only for a model no receiver listens
        to."""
        self.insert([self.prepare([getattr(instance, name) for name in self.attnames])])
        instance._state.adding, instance._state.db = False, connection.alias


class RowUpdate:
    """An ``UPDATE`` of ``model`` setting the columns ``fields`` (attnames) on the rows ``clause`` selects (columns by
    attname in braces, ``%s`` parameters, as ``RowReader``'s), written once; each value is prepared as ``RowWriter``
    prepares it, and each column of ``plus_one`` is counted up, as ``F(name) + 1`` would. One per model, database
    vendor, fields, clause and counters: ``RowUpdate.of(model, fields, clause)``."""

    _cache: dict[tuple[str, type[models.Model], tuple[str, ...], str, tuple[str, ...]], RowUpdate] = {}

    def __init__(
        self, model: type[models.Model], fields: tuple[str, ...], clause: str, plus_one: tuple[str, ...] = ()
    ) -> None:
        concrete = model._meta.concrete_fields
        by_attname = {f.attname: f for f in concrete}
        quote = connection.ops.quote_name
        self.converters = [_converter(by_attname[name]) for name in fields]
        columns = [quote(by_attname[name].column) for name in (*fields, *plus_one)]
        sets = [f"{column} = %s" for column in columns[: len(fields)]]
        sets += [f"{column} = {column} + 1" for column in columns[len(fields) :]]
        where = clause.format(**{f.attname: quote(f.column) for f in concrete})
        self.sql = f"UPDATE {quote(model._meta.db_table)} SET {', '.join(sets)} {where}"

    @classmethod
    def of(
        cls, model: type[models.Model], fields: tuple[str, ...], clause: str, plus_one: tuple[str, ...] = ()
    ) -> RowUpdate:
        key = (connection.vendor, model, fields, clause, plus_one)
        update = cls._cache.get(key)
        if update is None:
            update = cls._cache[key] = cls(model, fields, clause, plus_one)
        return update

    def run(self, values: Sequence[Any], params: Sequence[Any] = ()) -> int:
        """Set the fields to ``values`` (Python values, in ``fields`` order) where the clause holds; the rows changed."""
        prepared = [
            value if convert is None or value is None else convert(value)
            for value, convert in zip(values, self.converters, strict=True)
        ]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, [*prepared, *params])
            return cursor.rowcount


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


class RowReader:
    """A ``SELECT`` of ``model``'s concrete columns (or of ``fields`` only, the others left deferred) followed by
    ``clause``, whose values are converted as the ORM converts them and whose rows are built as the ORM builds them
    (``Model.from_db``). ``clause`` names columns by attname in braces, quoted for the database when the statement is
    built, and takes ``%s`` parameters: ``RowReader.of(WriteGuardianAudit, "WHERE {decision_id} = %s ORDER BY {id}")``.
    One per model, database vendor, clause and fields."""

    _cache: dict[tuple[str, type[models.Model], str, tuple[str, ...]], RowReader] = {}

    def __init__(self, model: type[models.Model], clause: str, fields: tuple[str, ...] = ()) -> None:
        concrete = model._meta.concrete_fields
        chosen = [f for f in concrete if f.attname in fields or f.name in fields] if fields else list(concrete)
        quote = connection.ops.quote_name
        self.model = model
        self.attnames = [f.attname for f in chosen]
        self.cols = [f.cached_col for f in chosen]
        self.converters = [
            [*connection.ops.get_db_converters(f.cached_col), *f.cached_col.get_db_converters(connection)]
            for f in chosen
        ]
        columns = ", ".join(quote(f.column) for f in chosen)
        where = clause.format(**{f.attname: quote(f.column) for f in concrete})
        self.sql = f"SELECT {columns} FROM {quote(model._meta.db_table)} {where}"

    @classmethod
    def of(cls, model: type[models.Model], clause: str, fields: tuple[str, ...] = ()) -> RowReader:
        key = (connection.vendor, model, clause, fields)
        reader = cls._cache.get(key)
        if reader is None:
            reader = cls._cache[key] = cls(model, clause, fields)
        return reader

    def rows(self, params: Sequence[Any] = ()) -> list[Any]:
        """The model instances of the rows the statement selects with ``params``."""
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            found = cursor.fetchall()
        return [self._instance(row) for row in found]

    def first(self, params: Sequence[Any] = ()) -> Any:
        """The first row's instance, or None (the clause orders and limits: ``… ORDER BY {id} LIMIT 1``)."""
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            row = cursor.fetchone()
        return None if row is None else self._instance(row)

    def _instance(self, row: Sequence[Any]) -> Any:
        values = []
        for col, value, converters in zip(self.cols, row, self.converters, strict=True):
            for convert in converters:
                value = convert(value, col, connection)
            values.append(value)
        return self.model.from_db(connection.alias, self.attnames, values)
