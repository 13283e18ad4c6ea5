"""Import of what OpenClaw stores: its per-agent SQLite store, legacy sessions.json + JSONL, zstd archives.

The fixture (tests/fixtures/openclaw_sessions) is an OpenClaw home written by the real openclaw@2026.9.6 (its
``regenerate.py`` makes it again): ``agents/main/agent/openclaw-agent.sqlite`` holds an English turn and a
Chinese turn with a ``read`` tool call whose result OpenClaw stored zstd-compressed; ``agents/main/sessions/``
holds a second installation's sessions in the legacy layout: ``sessions.json``, ``<id>.jsonl`` ("I live in
Vienna.") and a Telegram session's ``<id>.jsonl.deleted.<t>.zst`` archive ("My name is Ada.").
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import zstandard
from django.core.management import CommandError, call_command

from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, GateStatus
from sessions_app.openclaw_import import (
    NothingToImport,
    build_turns,
    find_sources,
    import_sessions,
    parse_jsonl,
    read_store,
)

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openclaw_sessions"
MAIN = "agent:main:main"
TELEGRAM = "agent:main:telegram:direct:4711"
ENGLISH = "Remember that I prefer green tea over coffee."
CHINESE = "我喜欢喝乌龙茶。请读一下 notes.txt。"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    target = tmp_path / ".openclaw"
    shutil.copytree(FIXTURE, target, ignore=shutil.ignore_patterns("*.py", "*.md"))
    return target


@pytest.fixture
def store(home: Path) -> Path:
    return home / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


@pytest.fixture
def legacy(home: Path) -> Path:
    return home / "agents" / "main" / "sessions"


def turns_of(session_id: str) -> list[ConversationTurn]:
    return list(ConversationTurn.objects.filter(session_id=session_id).order_by("turn_number"))


def _run_ids(store: Path) -> list[str]:
    """The run ids OpenClaw stamped on its assistant messages, in order."""
    with sqlite3.connect(f"{store.as_uri()}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT event_json FROM transcript_events WHERE event_json IS NOT NULL ORDER BY seq"
        ).fetchall()
    ids = []
    for (text,) in rows:
        message = json.loads(text).get("message") or {}
        run = (message.get("__openclaw") or {}).get("runId")
        if message.get("role") == "assistant" and run and run not in ids:
            ids.append(run)
    return ids


def test_the_fixture_is_what_openclaw_writes(store: Path, legacy: Path):
    with sqlite3.connect(f"{store.as_uri()}?mode=ro", uri=True) as db:
        assert db.execute("SELECT count(*) FROM transcript_events WHERE event_zstd IS NOT NULL").fetchone()[0] >= 1
        version = db.execute("SELECT app_version FROM schema_meta WHERE app_version IS NOT NULL").fetchone()[0]
    assert version == "2026.9.6"
    assert (
        (legacy / "sessions.json").is_file() and list(legacy.glob("*.jsonl")) and list(legacy.glob("*.deleted.*.zst"))
    )


def test_imports_the_store_the_legacy_files_and_the_archive(home: Path):
    report = import_sessions(home)
    assert (report.files, report.sessions, report.turns_created, report.turns_existing) == (3, 2, 4, 0)
    assert report.malformed == [] and report.turns_failed == []
    assert set(ConversationSession.objects.values_list("id", flat=True)) == {MAIN, TELEGRAM}
    # One session for the key, whichever source each window came from (the legacy one was written last).
    main = turns_of(MAIN)
    assert [t.user_message_content for t in main] == [ENGLISH, CHINESE, "I live in Vienna."]
    assert [t.created_at for t in main] == sorted(t.created_at for t in main)
    assert [t.user_message_content for t in turns_of(TELEGRAM)] == ["My name is Ada."]


def test_a_turn_keeps_its_run_id_tool_calls_and_the_zstd_tool_result(home: Path, store: Path):
    import_sessions(store)
    english, chinese = turns_of(MAIN)
    assert [english.user_message_id, chinese.user_message_id] == _run_ids(store)
    assert english.agent_message_content == f"Noted: {ENGLISH}"
    assert chinese.agent_message_content.startswith("The file says: Line 0: the staging server lives in Tokyo")
    (call,) = chinese.agent_metadata["tool_calls"]
    assert (call["name"], call["arguments"]) == ("read", {"path": "notes.txt"})
    (result,) = chinese.agent_metadata["tool_results"]
    assert result["tool_call_id"] == call["id"] and result["is_error"] is False
    assert "Line 39: the staging server" in result["content"]  # The compressed row, decoded.
    assert chinese.agent_metadata["run_id"] == chinese.user_message_id
    assert chinese.agent_metadata["model"] == "fake-model-1" and chinese.agent_metadata["usage"]
    meta = chinese.user_metadata["openclaw"]
    assert meta["entry_id"] and meta["parent_id"] and meta["idempotency_key"].endswith(":user")
    assert [(c.role, c.message) for c in chinese.context.order_by("sequence_number")] == [
        ("user", ENGLISH),
        ("agent", f"Noted: {ENGLISH}"),
    ]


def test_the_session_is_named_by_its_key_with_channel_and_peer(home: Path):
    import_sessions(home)
    main = ConversationSession.objects.get(id=MAIN)
    assert main.channel_id == "openclaw" and main.metadata["session_key"] == MAIN
    assert main.metadata["agent_id"] == "main" and main.metadata["source"] == "openclaw_import"
    assert main.metadata["windows"][0]["transcript_version"] == 4  # The session header of the first window read.
    telegram = ConversationSession.objects.get(id=TELEGRAM)
    assert (telegram.channel_id, telegram.conversation_target) == ("telegram", "4711")
    (ada,) = turns_of(TELEGRAM)
    assert ada.user_from == "4711"


def test_importing_again_adds_nothing(home: Path):
    import_sessions(home)
    counts = (
        ConversationSession.objects.count(),
        ConversationTurn.objects.count(),
        ConversationContext.objects.count(),
    )
    report = import_sessions(home)
    assert (report.turns_created, report.turns_existing) == (0, 4)
    assert (
        ConversationSession.objects.count(),
        ConversationTurn.objects.count(),
        ConversationContext.objects.count(),
    ) == counts


def test_a_turn_the_plugin_sent_first_is_not_imported_again(home: Path, store: Path, api_client):
    """The plugin's body for the English turn (as integrations/openclaw/src/turn.js builds it from agent_end)."""
    run_id = _run_ids(store)[0]
    body = {
        "session": {"id": MAIN, "channel_id": "openclaw", "metadata": {"source": "openclaw_plugin"}},
        "user_message": {"id": run_id, "content": ENGLISH},
        "agent_reply": {"content": f"Noted: {ENGLISH}", "metadata": {"run_id": run_id}},
    }
    assert api_client.post("/api/v1/turns", body).status_code == 201
    report = import_sessions(store)
    assert (report.turns_created, report.turns_existing) == (1, 1)
    assert ConversationTurn.objects.filter(session_id=MAIN).count() == 2
    assert ConversationSession.objects.get(id=MAIN).metadata["source"] == "openclaw_plugin"


def test_sources_are_found_from_any_level(home: Path, store: Path, legacy: Path):
    assert [s.kind for s in find_sources(home)[0]] == ["store", "folder"]
    assert [s.kind for s in find_sources(home / "agents" / "main")[0]] == ["store", "folder"]
    assert [(s.kind, s.path) for s in find_sources(store)[0]] == [("store", store)]
    assert [(s.kind, s.path) for s in find_sources(legacy)[0]] == [("folder", legacy)]


def test_finding_nothing_is_an_error_that_names_where_it_looked(tmp_path: Path):
    (tmp_path / "agents" / "main" / "agent").mkdir(parents=True)
    with pytest.raises(NothingToImport) as caught:
        import_sessions(tmp_path)
    assert str(tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite") in caught.value.message
    assert str(tmp_path / "agents" / "main" / "sessions") in caught.value.message
    with pytest.raises(CommandError, match="Found no OpenClaw sessions"):
        call_command("import_openclaw", str(tmp_path), stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="does not exist"):
        call_command("import_openclaw", str(tmp_path / "nowhere"), stdout=io.StringIO(), stderr=io.StringIO())


def test_a_source_without_any_conversation_is_nothing_found_too(legacy: Path):
    for file in legacy.iterdir():
        file.unlink()
    (legacy / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(NothingToImport, match="broken.jsonl"):
        import_sessions(legacy)


def test_an_unreadable_source_is_reported_and_the_rest_goes_on(home: Path, legacy: Path):
    (legacy / "cafe.jsonl").write_text('{"type":"session","version":4,"id":"cafe"}\n{oops\n')
    (legacy / "bad.jsonl.deleted.1.zst").write_bytes(b"not zstd")
    report = import_sessions(home)
    names = sorted(name for name, _ in report.malformed)
    assert names == ["agents/main/sessions/bad.jsonl.deleted.1.zst", "agents/main/sessions/cafe.jsonl"]
    assert "line 2 is not JSON" in dict(report.malformed)["agents/main/sessions/cafe.jsonl"]
    assert report.turns_created == 4


def test_the_store_is_opened_read_only(store: Path):
    before = store.read_bytes()
    store.chmod(0o444)
    transcripts, problems = read_store(store, label="store")
    assert problems == [] and {t.session_key for t in transcripts} == {MAIN}
    assert store.read_bytes() == before


def test_compactions_and_resets_are_kept(store: Path):
    """Entries shaped as OpenClaw's SessionManager writes them (appendCompaction, appendResetBoundary)."""
    (transcript,) = read_store(store, label="store")[0]
    events = transcript.events
    split = next(i for i, e in enumerate(events) if (e.get("message") or {}).get("content") == CHINESE)
    compaction = {
        "type": "compaction",
        "id": "c0mp",
        "parentId": events[split - 1]["id"],
        "timestamp": "2026-11-25T09:00:00.000Z",
        "summary": "The user prefers green tea.",
        "firstKeptEntryId": events[split]["id"],
        "tokensBefore": 5000,
        "details": None,
        "fromHook": False,
    }
    reset = {
        "type": "reset",
        "id": "r3set",
        "parentId": "c0mp",
        "timestamp": "2026-11-25T09:01:00.000Z",
        "reason": "new",
    }
    transcript.events = [*events[:split], compaction, reset, *events[split:]]
    first, second = build_turns([transcript])
    meta = first["session"]["metadata"]
    assert (
        meta["compactions"][0]["summary"] == "The user prefers green tea."
        and meta["compactions"][0]["tokens_before"] == 5000
    )
    assert meta["resets"] == [{"id": "r3set", "timestamp": "2026-11-25T09:01:00.000Z", "reason": "new"}]
    assert second["user_message"]["metadata"]["after_compaction"] == "c0mp"
    assert second["user_message"]["metadata"]["after_reset"] == "new"
    assert second["context"] == []  # A reset starts an empty window.
    transcript.events = [*events[:split], compaction, *events[split:]]
    _, second = build_turns([transcript])
    assert second["context"][-1]["message"] == "[compaction summary] The user prefers green tea."


def test_a_jsonl_zst_archive_reads_like_its_jsonl(legacy: Path):
    (plain,) = legacy.glob("*.jsonl")
    data = plain.read_bytes()
    assert parse_jsonl(zstandard.ZstdDecompressor().decompress(zstandard.ZstdCompressor().compress(data)), "x") == (
        parse_jsonl(data, "y")
    )


@pytest.fixture
def gated(sent_tasks: Any) -> list[str]:
    """Turn ids handed to the memory gate (after commit, as ingest does)."""
    return sent_tasks.to("sessions_app.tasks.run_gate", single=True)


def test_imported_turns_skip_the_gate_unless_asked(home, settings, gated, django_capture_on_commit_callbacks):
    settings.MEMORY_GATE_ENABLED = True
    with django_capture_on_commit_callbacks(execute=True):
        import_sessions(home)
    assert gated == []
    assert set(ConversationTurn.objects.values_list("gate_status", flat=True)) == {GateStatus.DISABLED}
    assert settings.MEMORY_GATE_ENABLED is True


def test_gate_sends_imported_turns_through_the_memory_gate(home, gated, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        import_sessions(home, gate=True)
    assert sorted(gated) == sorted(ConversationTurn.objects.values_list("id", flat=True)) and len(gated) == 4


def test_dry_run_counts_and_stores_nothing(home: Path):
    report = import_sessions(home, dry_run=True)
    assert (report.turns_created, report.sessions, report.dry_run) == (4, 2, True)
    assert ConversationTurn.objects.count() == 0


def test_an_over_long_message_is_refused_and_the_rest_imported(home: Path, settings):
    settings.MAX_MESSAGE_CHARS = 30
    report = import_sessions(home)
    assert report.turns_failed and all("MAX_MESSAGE_CHARS" in f for f in report.turns_failed)
    assert report.turns_created == 4 - len(report.turns_failed)


def test_the_command_prints_a_summary_and_json(home: Path):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_openclaw", str(home), stdout=out, stderr=err)
    assert "Imported 2 session(s) from 3 source(s): 4 new turn(s), 0 already stored" in out.getvalue()
    assert "importing" in err.getvalue()
    out = io.StringIO()
    call_command("import_openclaw", str(home), "--json", "--no-progress", stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["turns_existing"] == 4
    out = io.StringIO()
    call_command("import_openclaw", str(home), "--dry-run", "--no-progress", stdout=out, stderr=io.StringIO())
    assert out.getvalue().startswith("Would import 2 session(s)")


def test_the_command_reports_an_unreadable_source_once_on_one_line(home: Path, legacy: Path, monkeypatch):
    import io

    from django.core.management import call_command

    from sessions_app import openclaw_import

    (legacy / "cafe.jsonl").write_text('{"type":"session","version":4,"id":"cafe"}\n{oops\n')
    real = openclaw_import.import_sessions

    def with_a_multiline_reason(*args, **kwargs):
        report = real(*args, **kwargs)
        report.malformed = [(name, why + "\n  at byte 7\n") for name, why in report.malformed]
        return report

    monkeypatch.setattr("sessions_app.management.commands.import_openclaw.import_sessions", with_a_multiline_reason)
    err = io.StringIO()
    call_command("import_openclaw", str(home), stdout=io.StringIO(), stderr=err)

    lines = [line for line in err.getvalue().splitlines() if "cafe.jsonl" in line]
    assert len(lines) == 1 and lines[0].rstrip().endswith("at byte 7")
