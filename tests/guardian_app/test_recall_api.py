"""The recall interfaces: GET /api/v1/recall, POST /api/v1/recall/hits, `memory recall`, the admin search page."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from guardian_app.models import MemoryChunk
from guardian_app.recall.index import index_workspace

pytestmark = pytest.mark.django_db

DAILY = """\
# 2026-02-03

Long day on the migration.

## Retain
- W @staging: The staging server runs PostgreSQL 15 on db-2.internal.
- O(c=0.9) @Peter: Prefers short replies on WhatsApp.
"""


@pytest.fixture
def api_notes(write_md: Callable[[str, str], Path]) -> None:
    write_md("USER.md", "# User\n\n## Preferences\n- Prefers summaries on Fridays.\n- Drinks green tea.\n")
    write_md("memory/2026-02-03.md", DAILY)
    index_workspace()


def test_get_recall_returns_ranked_attributed_facts(api_notes, client_for):
    response = client_for("read").get("/api/v1/recall", {"q": "what do we know about the staging server?", "k": 5})
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["mode"] == "hybrid" and body["note"] is None  # The local model, nothing configured.
    assert body["terms"] == ["staging", "server"] and body["operator"] == "OR"
    top = body["results"][0]
    assert top["source"] == "memory/2026-02-03.md#L6"
    assert top["kind"] == "world" and top["entities"] == ["staging"]
    assert top["content"] == "The staging server runs PostgreSQL 15 on db-2.internal."
    assert top["timestamp"].startswith("2026-02-03")
    assert set(top["score_parts"]) == {"vector", "keyword", "decay"}
    assert (top["path"], top["start_line"], top["end_line"]) == ("memory/2026-02-03.md", 6, 6)


def test_get_recall_applies_filters(api_notes, client_for):
    client = client_for("read")
    body = client.get("/api/v1/recall", {"q": "prefers", "kind": "opinion"}).json()
    assert [r["source"] for r in body["results"]] == ["memory/2026-02-03.md#L7"]
    body = client.get("/api/v1/recall", {"q": "prefers", "file": "USER.md"}).json()
    # Both USER.md facts: the second sits under "## Preferences", and headings are searched as context.
    assert [r["source"] for r in body["results"]] == ["USER.md#L4", "USER.md#L5"]
    body = client.get("/api/v1/recall", {"q": "prefers", "entity": "Peter", "since": "2026-02-01"}).json()
    assert [r["source"] for r in body["results"]] == ["memory/2026-02-03.md#L7"]
    assert body["filters"]["entity"] == "Peter" and body["filters"]["since"].startswith("2026-02-01")


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"q": ""},
        {"q": "x", "k": 0},
        {"q": "x", "k": 101},
        {"q": "x", "kind": "rumour"},
        {"q": "x", "since": "soon"},
    ],
)
def test_get_recall_refuses_bad_parameters(api_notes, client_for, params):
    response = client_for("read").get("/api/v1/recall", params)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["error"]["code"] in {"validation_error", "invalid_query"}


def test_recall_needs_a_key_with_the_read_scope(api_notes, client_for, anon_client):
    assert anon_client.get("/api/v1/recall", {"q": "staging"}).status_code == HTTPStatus.UNAUTHORIZED
    assert client_for("ingest").get("/api/v1/recall", {"q": "staging"}).status_code == HTTPStatus.FORBIDDEN
    # Reporting hits changes ranking: a read-only key may not.
    assert client_for("read").post("/api/v1/recall/hits", {"ids": [1]}).status_code == HTTPStatus.FORBIDDEN


def test_reported_hits_raise_the_hit_count(api_notes, client_for):
    client = client_for("read", "ingest")  # The agent's key.
    top = client.get("/api/v1/recall", {"q": "green tea"}).json()["results"][0]
    response = client.post(reverse("api:recall_hits"), {"ids": [top["id"], 123456789]})
    assert response.status_code == HTTPStatus.OK and response.json() == {"updated": 1}
    again = client.get(reverse("api:recall"), {"q": "green tea"}).json()["results"][0]
    assert again["hits"] == 1 and again["score_parts"]["decay"] > top["score_parts"]["decay"]
    assert client.post("/api/v1/recall/hits", {"ids": []}).status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert client.post("/api/v1/recall/hits", {"ids": ["x"]}).status_code == HTTPStatus.UNPROCESSABLE_ENTITY


# --- CLI ----------------------------------------------------------------------------------------------------------
def test_memory_recall_prints_a_table_with_sources(write_md):
    write_md("USER.md", "# User\n\n- Prefers summaries on Fridays.\n")
    write_md("memory/2026-02-03.md", DAILY)
    out, err = io.StringIO(), io.StringIO()
    call_command("memory", "recall", "staging server", "--k", "25", "--since", "3650d", stdout=out, stderr=err)
    text = out.getvalue()
    assert "memory/2026-02-03.md#L6" in text and "world" in text
    assert "The staging server runs PostgreSQL 15" in text
    assert "result(s), hybrid" in text  # The recall ran its incremental index (and embedding) first.


def test_memory_recall_json(api_notes):
    out = io.StringIO()
    call_command("memory", "recall", "short replies", "--json", "--no-index", stdout=out, stderr=io.StringIO())
    body = json.loads(out.getvalue())
    assert body["results"][0]["source"] == "memory/2026-02-03.md#L7"
    assert body["results"][0]["confidence"] == 0.9


def test_memory_recall_reports_bad_input_and_no_results(api_notes):
    with pytest.raises(CommandError, match="not a time"):
        call_command("memory", "recall", "staging", "--since", "soon", "--no-index", stdout=io.StringIO())
    out = io.StringIO()
    call_command("memory", "recall", "kubernetes", "--mode", "keyword", "--no-index", stdout=out, stderr=io.StringIO())
    assert "No matching facts." in out.getvalue()


def test_preferences_written_by_the_guardian_and_a_dropped_daily_log_are_recalled(write, write_md):
    """The issue's "done when": guardian writes plus a daily log with a Retain section, then `memory recall`."""
    write("Prefers window seats on long flights.", file="USER.md")
    write("Prefers oat milk in coffee.", file="USER.md")
    write_md("memory/2026-02-10.md", "# 2026-02-10\n\n## Retain\n- W @Vienna: The team offsite is in Vienna in May.\n")
    out = io.StringIO()
    call_command("memory", "recall", "oat milk", "--json", stdout=out, stderr=io.StringIO())
    top = json.loads(out.getvalue())["results"][0]
    user_md = Path(top["source"].split("#")[0])
    assert user_md.name == "USER.md" and "oat milk" in top["content"]
    line = int(top["source"].split("#L")[1].split("-")[0])
    from django.conf import settings

    assert "oat milk" in (Path(settings.WORKSPACE_DIR) / "USER.md").read_text().splitlines()[line - 1]
    out = io.StringIO()
    call_command("memory", "recall", "Where is the offsite?", "--json", "--no-index", stdout=out, stderr=io.StringIO())
    top = json.loads(out.getvalue())["results"][0]
    assert top["source"] == "memory/2026-02-10.md#L4" and top["kind"] == "world" and top["entities"] == ["Vienna"]


# --- Admin --------------------------------------------------------------------------------------------------------
def test_the_admin_search_page_shows_hits_with_file_and_line(api_notes, admin_client):
    url = reverse("admin:guardian_app_memorychunk_recall")
    response = admin_client.get(url, {"q": "staging server"})
    assert response.status_code == HTTPStatus.OK
    page = response.content.decode()
    assert "memory/2026-02-03.md#L6" in page
    assert "The staging server runs PostgreSQL 15 on db-2.internal." in page
    assert 'name="q"' in page and "hybrid" in page


def test_the_admin_search_page_escapes_and_reports_errors(api_notes, admin_client, write_md):
    write_md("MEMORY.md", "# M\n\n- <script>alert(1)</script> staging\n")
    index_workspace()
    url = reverse("admin:guardian_app_memorychunk_recall")
    page = admin_client.get(url, {"q": "staging alert"}).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    page = admin_client.get(url, {"q": "staging", "since": "soon"}).content.decode()
    assert "is not a time" in page


def test_the_admin_can_index_changed_files(api_notes, admin_client, write_md):
    write_md("TOOLS.md", "# Tools\n\n- ripgrep for search.\n")
    url = reverse("admin:guardian_app_memorychunk_recall")
    response = admin_client.post(url, {"q": "ripgrep"})
    assert response.status_code == HTTPStatus.FOUND and "q=ripgrep" in response["Location"]
    assert MemoryChunk.objects.filter(path="TOOLS.md").exists()


def test_the_chunk_list_links_to_the_search_page(api_notes, admin_client, django_assert_max_num_queries: Any):
    with django_assert_max_num_queries(12):
        page = admin_client.get(reverse("admin:guardian_app_memorychunk_changelist")).content.decode()
    assert reverse("admin:guardian_app_memorychunk_recall") in page
    assert "USER.md#L4" in page


def test_staff_without_the_view_permission_gets_a_403(api_notes, client, django_user_model):
    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    client.force_login(user)
    response = client.get(reverse("admin:guardian_app_memorychunk_recall"), {"q": "staging"})
    assert response.status_code == HTTPStatus.FORBIDDEN


def test_admin_cli_and_api_show_what_was_said_in_a_conversation(api_notes, admin_client, client_for):
    from sessions_app.models import ConversationSession, ConversationTurn

    session = ConversationSession.objects.create(id="telegram:peter", channel_id="telegram")
    ConversationTurn.objects.create(
        session=session,
        turn_number=3,
        user_from="Peter",
        user_message_content="The spare key is under the blue flower pot.",
        agent_message_content="Got it.",
    )
    index_workspace()
    page = admin_client.get(reverse("admin:guardian_app_memorychunk_recall"), {"q": "spare key flower pot"})
    assert "telegram:peter#3" in page.content.decode()
    out = io.StringIO()
    call_command("memory", "recall", "spare key", "--json", "--no-index", stdout=out, stderr=io.StringIO())
    top = json.loads(out.getvalue())["results"][0]
    assert (top["source"], top["origin"]) == ("telegram:peter#3", "transcript")
    body = client_for("read").get("/api/v1/recall", {"q": "where is the spare key?", "k": 3}).json()
    assert body["results"][0]["origin"] == "transcript" and body["results"][0]["source"] == "telegram:peter#3"
