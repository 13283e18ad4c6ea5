"""Issue 9's aggregates again, on real PostgreSQL: the quality distribution the database computes equals the former
Python pass, and the gate statistics' stored weeks equal the live ones; and the foreign keys indexed once each (Django
drops the key's index and its ``varchar_pattern_ops`` twin there)."""

from __future__ import annotations

from django.db import connection

from tests.dataset_app.test_quality_distribution import *  # noqa: F403  (re-run on PostgreSQL)
from tests.dataset_app.test_samples_by_status_order import *  # noqa: F403
from tests.reflection_site.test_schema import *  # noqa: F403
from tests.sessions_app.conftest import make_decision, make_turn  # noqa: F401  (the fixtures they use)
from tests.sessions_app.test_gate_stats_rollup import *  # noqa: F403


def test_the_database_is_postgresql(db):
    assert connection.vendor == "postgresql"
