"""Issue 9: the FileVersion admin's first page (file, newest version first) is read from an index in that order,
not sorted from every version of every file (994-1,066 ms at 1M on SQLite before ``file_versions_file_seq_desc``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from guardian_app.models import FileVersion
from tests.guardian_app.test_audits_by_file_and_status import plan

pytestmark = pytest.mark.django_db


def test_the_file_version_changelist_reads_its_page_in_index_order(admin_client: Any) -> None:
    for name in ("USER.md", "MEMORY.md"):
        for seq in range(1, 4):
            FileVersion.objects.create(file_name=name, seq=seq, kind="write")

    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(reverse("admin:guardian_app_fileversion_changelist"))

    assert response.status_code == 200
    shown = [(v.file_name, v.seq) for v in response.context["cl"].result_list]
    assert shown == [
        ("MEMORY.md", 3),
        ("MEMORY.md", 2),
        ("MEMORY.md", 1),
        ("USER.md", 3),
        ("USER.md", 2),
        ("USER.md", 1),
    ]
    (sql,) = [
        q["sql"] for q in queries.captured_queries if 'FROM "file_versions"' in q["sql"] and "ORDER BY" in q["sql"]
    ]
    explained = plan(sql)
    assert "file_versions_file_seq_desc" in explained
    assert "TEMP B-TREE" not in explained and "Sort" not in explained
