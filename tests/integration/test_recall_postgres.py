"""Recall on PostgreSQL (a generated tsvector with a GIN index, ts_rank_cd), and end to end with a real worker:
a turn becomes a guardian write, the write a re-index, the re-index an answer with its source line."""

from __future__ import annotations

import shutil
from http import HTTPStatus
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from guardian_app.models import MemoryChunk
from guardian_app.recall.index import index_workspace
from guardian_app.recall.recall import recall
from reflection_site.models import ApiKey
from tests.conftest import ApiClient, turn_payload
from tests.guardian_app.conftest import make_decision, offline_guardian, write, write_md  # noqa: F401 - fixtures of the re-run tests.
from tests.guardian_app.test_index import *  # noqa: F403 - the index tests again, on PostgreSQL.
from tests.guardian_app.test_recall import *  # noqa: F403 - English, Chinese, hostile input, filters.
from tests.guardian_app.test_recall_api import *  # noqa: F403
from tests.guardian_app.test_recall_quality import FIXTURE as QUALITY_FIXTURE
from tests.guardian_app.test_recall_quality import QUESTIONS, recall_at_5
from tests.guardian_app.test_recall_ranking import *  # noqa: F403 - decay, hybrid, embeddings.
from tests.services import wait_until
from tests.sessions_app.test_openclaw_import import *  # noqa: F403 - the import, idempotent on PostgreSQL.

pytestmark = pytest.mark.django_db(transaction=True)

# Measured on PostgreSQL 15 ('english' configuration, ts_rank_cd): 38 of 40 in the top 5. One fewer than
# FTS5's BM25: ts_rank_cd has no inverse document frequency, so a rare word ("partner") weighs no more than
# a common one ("Peter").
POSTGRES_KEYWORD_RECALL_AT_5 = 38 / 40


def test_the_full_text_index_is_a_gin_indexed_tsvector_without_fast_update():
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT is_generated, data_type FROM information_schema.columns "
            "WHERE table_name = 'memory_index_chunks' AND column_name = 'search_vector'"
        )
        assert cursor.fetchone() == ("ALWAYS", "tsvector")
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_index_chunks_search'")
        assert "USING gin (search_vector)" in cursor.fetchone()[0]
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'memory_index_chunks_search'")
        assert "fastupdate=off" in cursor.fetchone()[0]  # No pending list for every search to scan.


def test_chinese_and_english_on_postgresql(write_md):  # noqa: F811 - the imported fixture.
    write_md(
        "TOOLS.md",
        "# Tools\n\n- 预发布服务器部署在东京，每周一凌晨三点自动备份。\n- The staging servers were deployed twice.\n",
    )
    index_workspace()
    assert recall("东京的服务器", mode="keyword").results[0].source == "TOOLS.md#L3"
    assert recall("京", mode="keyword").results[0].source == "TOOLS.md#L3"
    assert recall("deploying a staging server", mode="keyword").results[0].source == "TOOLS.md#L4"


def test_keyword_recall_at_5_on_postgresql(workspace, capsys):
    shutil.copytree(QUALITY_FIXTURE, workspace, dirs_exist_ok=True)
    (workspace / "questions.json").unlink()
    index_workspace()
    score, misses = recall_at_5("keyword")
    with capsys.disabled():
        print(f"\nPostgreSQL keyword-only recall@5 = {score:.3f} ({len(QUESTIONS) - len(misses)}/{len(QUESTIONS)})")
    assert score >= POSTGRES_KEYWORD_RECALL_AT_5, misses


def test_a_preference_travels_from_a_turn_to_a_recall_answer(make_worker, workspace: Path):
    """The issue's "done when", with real processes: ingest -> gate -> guardian write -> re-index -> recall."""
    settings.LLM_BASE_URL = ""  # The offline gate and guardian.
    worker = make_worker().start()
    _, raw = ApiKey.generate("recall-e2e", ["ingest", "read"])
    client = ApiClient(raw)
    posted = client.post("/api/v1/turns", turn_payload(user="I prefer summaries on Fridays."))
    assert posted.status_code == HTTPStatus.CREATED

    def answered() -> list[dict] | None:
        # The turn's transcript is indexed by its own task, before or after the memory file: wait for both.
        results = client.get("/api/v1/recall", {"q": "summaries Fridays"}).json()["results"]
        paths = {hit["path"].split("/")[0] for hit in results}
        return results if {"USER.md", "sessions"} <= paths else None

    results = wait_until(answered, timeout=90, message="the written fact to be re-indexed by the worker")
    top = results[0]
    # The curated line outranks the raw turn it came from.
    assert top["path"] == "USER.md", (results, worker.log()[-3000:])
    lines = (workspace / "USER.md").read_text().splitlines()
    assert "summaries on Fridays" in lines[top["start_line"] - 1]
    assert MemoryChunk.objects.filter(path="USER.md").exists()
    assert "run_memory_index" in worker.log()
