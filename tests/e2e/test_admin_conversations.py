"""A person reads a conversation in the admin: log in, find the session, open the turn and its context."""

from __future__ import annotations

import re

from reflection_site.models import ApiKey
from tests.conftest import ApiClient, turn_payload
from tests.e2e.conftest import login


def test_an_operator_finds_a_turn_and_its_context(page, shot, live_server, admin_user, worker):
    _, raw = ApiKey.generate("e2e", ["ingest", "read"])
    turn = (
        ApiClient(raw).post("/api/v1/turns", turn_payload(session_id="channel:e2e:ada", user="I live in Lyon.")).json()
    )

    login(page, live_server.url, "admin", "password")
    shot("admin index")
    page.goto(f"{live_server.url}/admin/sessions_app/conversationsession/?q=channel:e2e:ada")
    assert page.locator("#result_list").get_by_text("channel:e2e:ada").count() == 1
    shot("session found")
    page.goto(f"{live_server.url}/admin/sessions_app/conversationturn/{turn['id']}/change/")
    body = page.locator("body")
    assert re.search("I live in Lyon.", body.inner_text())
    assert "Hello! How can I help?" in body.inner_text()  # The context window, inline.
    shot("turn with context")
