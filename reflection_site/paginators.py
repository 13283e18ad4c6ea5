"""Issue 9: an admin paginator that does not COUNT(*) a big table."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

# Below this many rows an exact count is cheap and the estimate not worth its inexactness.
ESTIMATE_ABOVE = 10_000


class EstimatedCountPaginator(Paginator):
    """The changelist of a whole table gets an estimated count instead of a ``COUNT(*)`` that reads every row:

    - PostgreSQL: ``pg_class.reltuples``, kept by ANALYZE and autovacuum;
    - SQLite: the largest ``rowid``, one step down the table's b-tree. It is the number of rows ever inserted
      (deleted rows are not subtracted), so it is an upper bound; an exact count of a million rows took
      0.19 s of the decision list's 0.8 s.

    A filtered list, a small table (``ESTIMATE_ABOVE``) and another database count exactly."""

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if isinstance(rows, QuerySet) and not rows.query.where and not rows.query.distinct:
            estimate = _estimated_rows(rows)
            if estimate is not None and estimate > ESTIMATE_ABOVE:
                return estimate
        return super().count


def _estimated_rows(rows: QuerySet) -> int | None:
    connection = connections[rows.db]
    table = connection.ops.quote_name(rows.model._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(%s)", [table])
        elif connection.vendor == "sqlite":
            cursor.execute(f"SELECT MAX(rowid) FROM {table}")  # noqa: S608 - the model's own table name
        else:
            return None
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else None
