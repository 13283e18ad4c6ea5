"""Issue 9: the samples list of one status (``status=``, ``needs_review``) reads its page newest first from an index
in that order, page after page, instead of sorting every sample of that status (229 ms at 1M on SQLite, where the
planner took ``dataset_samples_status_quality`` for the status)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.dataset_app.factories import SampleFactory
from tests.guardian_app.test_audits_by_file_and_status import plan

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("query", [{"status": "pending"}, {"needs_review": "true"}], ids=["status", "needs_review"])
@pytest.mark.parametrize("cursor", [False, True], ids=["page1", "page2"])
def test_the_samples_of_one_status_are_read_from_the_index_in_order(
    api_client: Any, query: dict[str, str], cursor: bool
) -> None:
    status = query.get("status", "needs_review")
    made = [SampleFactory(annotation_status=status) for _ in range(4)]
    SampleFactory(annotation_status="approved")
    url = reverse("api:list_samples")
    params: dict[str, Any] = {**query, "limit": 2}
    if cursor:
        params["cursor"] = api_client.get(url, params).json()["next_cursor"]

    with CaptureQueriesContext(connection) as queries:
        response = api_client.get(url, params)

    assert response.status_code == 200
    newest_first = sorted(made, key=lambda s: (s.created_at, s.id), reverse=True)
    expected = newest_first[2:] if cursor else newest_first[:2]
    assert [item["id"] for item in response.json()["items"]] == [s.id for s in expected]
    (sql,) = [q["sql"] for q in queries.captured_queries if 'FROM "dataset_samples"' in q["sql"]]
    explained = plan(sql)
    assert "dataset_samples_status_created" in explained
    assert "TEMP B-TREE" not in explained and "Sort" not in explained
