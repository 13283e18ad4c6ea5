"""The importer against the real OpenClaw's own migration: OpenClaw's ``doctor --session-sqlite import`` takes the
fixture's legacy ``sessions.json`` + JSONL into its SQLite store, and importing that store gives the same turns,
with the same ids and text, as importing the legacy files themselves; one import after the other adds nothing.

Outside CI (REQUIRE_SERVICES unset) the module skips when openclaw is not installed (``make openclaw``); with
REQUIRE_SERVICES=1 it installs it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessions_app.models import ConversationTurn
from sessions_app.openclaw_import import import_sessions
from tests import openclaw_harness

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openclaw_sessions"


def _turns() -> list[tuple[str, str, str, str]]:
    return sorted(
        ConversationTurn.objects.values_list(
            "session_id", "user_message_id", "user_message_content", "agent_message_content"
        )
    )


def test_openclaw_migrates_the_legacy_files_and_both_imports_agree(tmp_path: Path):
    claw = openclaw_harness.OpenClaw(tmp_path / "home", openclaw_harness.require_cli())
    legacy = claw.state_dir / "agents" / "main" / "sessions"
    shutil.copytree(FIXTURE / "agents" / "main" / "sessions", legacy)
    kept = tmp_path / "legacy-copy"
    shutil.copytree(legacy, kept)  # OpenClaw moves the files it imports into an archive folder.

    result = claw.run("doctor", "--session-sqlite", "import", "--session-sqlite-store", str(legacy / "sessions.json"))
    assert "2 legacy entries" in result.stdout and "0 issue(s)" in result.stdout, result.stdout

    from_files = import_sessions(kept)
    files_turns = _turns()
    assert from_files.turns_created == 2 and from_files.malformed == []
    assert {session for session, *_ in files_turns} == {"agent:main:main", "agent:main:telegram:direct:4711"}

    # The store OpenClaw built holds the main session's transcript (the Telegram one was only an archive).
    from_store = import_sessions(claw.store())
    assert (from_store.turns_created, from_store.turns_existing, from_store.turns_failed) == (0, 1, [])
    assert _turns() == files_turns
