"""Issue 9: the admin paginator estimates the count of a whole big table and counts a filtered list exactly."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reflection_site import paginators
from reflection_site.paginators import EstimatedCountPaginator
from sessions_app.models import ConversationSession

pytestmark = pytest.mark.django_db


@pytest.fixture
def sessions() -> None:
    for i in range(8):
        ConversationSession.objects.create(id=f"t:paginator:{i}", channel_id="odd" if i % 2 else "even")
    ConversationSession.objects.filter(id__in=["t:paginator:1", "t:paginator:2"]).delete()


def test_a_whole_big_table_is_estimated_without_counting_it(sessions: None, monkeypatch: Any) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL's estimate (pg_class.reltuples) needs an ANALYZE of the table")
    monkeypatch.setattr(paginators, "ESTIMATE_ABOVE", 3)

    with CaptureQueriesContext(connection) as queries:
        count = EstimatedCountPaginator(ConversationSession.objects.order_by("id"), 50).count

    assert not [q for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert count == 8  # Rows ever inserted: the two deleted ones are not subtracted.


def test_a_filtered_list_and_a_small_table_are_counted_exactly(sessions: None, monkeypatch: Any) -> None:
    monkeypatch.setattr(paginators, "ESTIMATE_ABOVE", 3)
    assert EstimatedCountPaginator(ConversationSession.objects.filter(channel_id="odd"), 50).count == 3

    monkeypatch.setattr(paginators, "ESTIMATE_ABOVE", 100)
    assert EstimatedCountPaginator(ConversationSession.objects.all(), 50).count == 6
