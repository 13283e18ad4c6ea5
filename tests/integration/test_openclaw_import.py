"""The importer against the real OpenClaw's own migration: OpenClaw's ``doctor --session-sqlite import`` takes the
fixture's legacy ``sessions.json`` + JSONL into its SQLite store, and importing that store gives the same turns,
with the same ids and text, as importing the legacy files themselves; one import after the other adds nothing.

Outside CI (REQUIRE_SERVICES unset) the module skips when openclaw is not installed (``make openclaw``); with
REQUIRE_SERVICES=1 it installs it.
"""

from __future__ import annotations

import shutil
import sqlite3
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


def test_a_deleted_session_is_imported_once_from_its_archives(tmp_path: Path, fake_llm, workspace: Path):
    """OpenClaw's ``sessions delete`` (through a running gateway) keeps the transcript twice: zstd in the store's
    session_transcript_archives and as ``<id>.jsonl.deleted.<t>.<hash>.zst`` beside it. Both are read, under the
    deleted session's key, and give one turn."""
    claw = openclaw_harness.OpenClaw(tmp_path / "home", openclaw_harness.require_cli())
    claw.configure(workspace=workspace, llm_base_url=fake_llm.base_url)
    scratch = "agent:main:scratch-1"
    with claw.gateway():
        run = claw.agent("Scratch note: the boiler is serviced in May.", session_key=scratch, local=False)
        claw.run("sessions", "delete", scratch, "--yes", "--json")
    (archive,) = (claw.state_dir / "agents" / "main" / "sessions").glob("*.jsonl.deleted.*.zst")
    with sqlite3.connect(f"{claw.store().as_uri()}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT session_key, reason, encoding, archive_name FROM session_transcript_archives"
        ).fetchall()
    assert rows == [(scratch, "deleted", "zstd", archive.name)]

    report = import_sessions(claw.state_dir)
    assert (report.files, report.sessions, report.turns_created, report.turns_existing) == (2, 1, 1, 1)
    assert report.malformed == [] and report.turns_failed == []
    (turn,) = ConversationTurn.objects.filter(session_id=scratch)
    assert turn.user_message_id == run["runId"]
    assert turn.agent_message_content == "Noted: Scratch note: the boiler is serviced in May."
