"""Issue 9: an admin paginator that does not COUNT(*) a big table on PostgreSQL."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

# Below this many rows an exact count is cheap and the estimate not worth its inexactness.
ESTIMATE_ABOVE = 10_000


class EstimatedCountPaginator(Paginator):
    """The changelist of a whole table counts it from PostgreSQL's statistics (``pg_class.reltuples``, kept by
    ANALYZE and autovacuum) instead of a sequential ``COUNT(*)``; a filtered list, a small table and SQLite
    count exactly."""

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if isinstance(rows, QuerySet) and not rows.query.where and not rows.query.distinct:
            connection = connections[rows.db]
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(%s)",
                        [connection.ops.quote_name(rows.model._meta.db_table)],
                    )
                    row = cursor.fetchone()
                if row and row[0] is not None and row[0] > ESTIMATE_ABOVE:
                    return int(row[0])
        return super().count
