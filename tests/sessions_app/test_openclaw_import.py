"""Import of OpenClaw transcripts: turns and context through ingest_turn, once and only once, malformed files skipped."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, GateStatus
from sessions_app.openclaw_import import import_sessions

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openclaw_sessions"
WHATSAPP = "openclaw:550e8400-e29b-41d4-a716-446655440000"
TELEGRAM = "openclaw:6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
GROUP = "openclaw:grp-120363025"
ORPHAN = "openclaw:0b7e4a52-orphan"


@pytest.fixture
def sessions_dir(tmp_path: Path) -> Path:
    target = tmp_path / "openclaw" / "sessions"
    shutil.copytree(FIXTURE, target)
    return target


def turns_of(session_id: str) -> list[ConversationTurn]:
    return list(ConversationTurn.objects.filter(session_id=session_id).order_by("turn_number"))


def test_imports_every_transcript_as_a_session_with_turns(sessions_dir):
    report = import_sessions(sessions_dir)
    assert (report.files, report.sessions, report.turns_created, report.turns_existing) == (5, 4, 8, 0)
    assert [name for name, _ in report.malformed] == ["groups/broken.json5"]
    assert set(ConversationSession.objects.values_list("id", flat=True)) == {WHATSAPP, TELEGRAM, GROUP, ORPHAN}


def test_a_turn_is_a_user_message_and_the_reply_that_follows(sessions_dir):
    import_sessions(sessions_dir)
    first, second, third = turns_of(WHATSAPP)
    assert first.user_message_content.startswith("Remember that I prefer short replies")
    assert first.agent_message_content == "Got it: short replies on WhatsApp from now on."
    assert first.agent_metadata["thinking"][0]["thinking"].startswith("A durable preference")
    assert first.created_at.isoformat() == "2026-02-01T10:01:00+00:00"
    # Tool calls, tool results and thinking stay in the metadata; the reply is the assistant's text.
    assert second.agent_message_content == "Staging runs a1b2c3d from main, deployed on 1 February at 09:12."
    assert second.agent_metadata["tool_calls"][0]["name"] == "exec"
    assert second.agent_metadata["tool_results"][0]["content"] == "a1b2c3d (main, 2026-02-01 09:12)"
    assert second.agent_metadata["thinking"][0]["content"].startswith("I should check")
    assert (third.user_message_content, third.agent_message_content) == ("Thanks!", "")


def test_context_windows_hold_the_messages_before_each_turn(sessions_dir):
    import_sessions(sessions_dir)
    first, second, _ = turns_of(WHATSAPP)
    assert [(c.role, c.message) for c in first.context.all()] == [("agent", "Good morning Peter! Anything for today?")]
    roles = [c.role for c in second.context.all()]
    assert roles == ["agent", "user", "agent"]
    assert ConversationContext.objects.filter(turn=second).last().message.startswith("Got it")


def test_session_metadata_keeps_the_registry_entry(sessions_dir):
    import_sessions(sessions_dir)
    session = ConversationSession.objects.get(id=WHATSAPP)
    assert session.channel_id == "whatsapp"
    assert session.conversation_target == "+436641234567" and session.account_id == "default"
    assert session.metadata["session_key"] == "agent:main:whatsapp:dm:+436641234567"
    assert session.metadata["compacted_history"][0].startswith("[Summary]")
    orphan = ConversationSession.objects.get(id=ORPHAN)
    assert orphan.channel_id == "openclaw" and orphan.metadata["session_key"] is None


def test_group_chats_keep_the_sender_and_chinese_text_survives(sessions_dir):
    import_sessions(sessions_dir)
    first, second = turns_of(GROUP)
    assert first.user_from == "Anna" and second.user_from == "Jana"
    assert second.agent_message_content == "Added: family dinner, Sunday 18:00."
    assert second.agent_metadata["tool_calls"][0]["name"] == "calendar_add"
    assert ConversationSession.objects.get(id=GROUP).conversation_target == "120363025@g.us"
    first_cn, second_cn = turns_of(TELEGRAM)
    assert first_cn.user_message_content == "帮我记一下：预发布服务器部署在东京。"
    assert (
        second_cn.user_message_content == "还有，我每周一早上要一份周报。\n\n用中文写。"
    )  # Consecutive user messages.
    assert second_cn.user_metadata["message_count"] == 2


def test_importing_again_adds_nothing(sessions_dir):
    import_sessions(sessions_dir)
    counts = (
        ConversationSession.objects.count(),
        ConversationTurn.objects.count(),
        ConversationContext.objects.count(),
    )
    report = import_sessions(sessions_dir)
    assert (report.turns_created, report.turns_existing) == (0, 8)
    assert (
        ConversationSession.objects.count(),
        ConversationTurn.objects.count(),
        ConversationContext.objects.count(),
    ) == counts


def test_a_grown_transcript_imports_only_its_new_turns(sessions_dir):
    import_sessions(sessions_dir)
    path = sessions_dir / "chats" / "0b7e4a52-orphan.json5"
    text = path.read_text().replace(
        "  ],\n}",
        '    {role: "user", content: "And she likes orchids.", timestamp: 1767225700000},\n'
        '    {role: "assistant", content: "Orchids, noted.", timestamp: 1767225702000},\n  ],\n}',
    )
    path.write_text(text)
    report = import_sessions(sessions_dir)
    assert (report.turns_created, report.turns_existing) == (1, 8)
    assert [t.user_message_content for t in turns_of(ORPHAN)] == [
        "My sister Jana's birthday is on 2 April.",
        "And she likes orchids.",
    ]


def test_a_malformed_file_is_reported_and_the_rest_goes_on(sessions_dir):
    (sessions_dir / "chats" / "not-a-transcript.json5").write_text("[1, 2, 3]")
    (sessions_dir / "registry.json5").write_text("{ this is not json5")
    report = import_sessions(sessions_dir)
    names = [name for name, _ in report.malformed]
    assert names == ["registry.json5", "chats/not-a-transcript.json5", "groups/broken.json5"]
    assert report.turns_created == 8  # Without the registry, transcripts still import.
    assert ConversationSession.objects.get(id=WHATSAPP).channel_id == "openclaw"


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Turn ids handed to the memory gate (after commit, as ingest does)."""
    sent: list[str] = []
    monkeypatch.setattr("sessions_app.ingest.enqueue_gate", sent.append)
    return sent


def test_imported_turns_skip_the_gate_unless_asked(sessions_dir, settings, gated, django_capture_on_commit_callbacks):
    settings.MEMORY_GATE_ENABLED = True
    with django_capture_on_commit_callbacks(execute=True):
        import_sessions(sessions_dir)
    assert gated == []
    assert set(ConversationTurn.objects.values_list("gate_status", flat=True)) == {GateStatus.DISABLED}
    assert settings.MEMORY_GATE_ENABLED is True


def test_gate_sends_imported_turns_through_the_memory_gate(sessions_dir, gated, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        import_sessions(sessions_dir, gate=True)
    assert sorted(gated) == sorted(ConversationTurn.objects.values_list("id", flat=True)) and len(gated) == 8
    assert set(ConversationTurn.objects.values_list("gate_status", flat=True)) == {GateStatus.PENDING}


def test_dry_run_counts_and_stores_nothing(sessions_dir):
    report = import_sessions(sessions_dir, dry_run=True)
    assert (report.turns_created, report.sessions) == (8, 4) and report.dry_run
    assert ConversationTurn.objects.count() == 0
    import_sessions(sessions_dir)
    again = import_sessions(sessions_dir, dry_run=True)
    assert (again.turns_created, again.turns_existing) == (0, 8)


def test_an_over_long_message_is_refused_and_the_rest_imported(sessions_dir, settings):
    settings.MAX_MESSAGE_CHARS = 60
    report = import_sessions(sessions_dir)
    assert report.turns_failed and all("MAX_MESSAGE_CHARS" in f or "limit" in f for f in report.turns_failed)
    assert report.turns_created == 8 - len(report.turns_failed)


def test_the_command_reports_progress_malformed_files_and_a_summary(sessions_dir):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_openclaw", str(sessions_dir.parent), stdout=out, stderr=err)  # The OpenClaw home works too.
    assert "Imported 4 session(s) from 5 file(s): 8 new turn(s), 0 already stored" in out.getvalue()
    assert "Skipped malformed file groups/broken.json5" in err.getvalue()
    assert "importing" in err.getvalue()
    out = io.StringIO()
    call_command("import_openclaw", str(sessions_dir), "--json", "--no-progress", stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["turns_existing"] == 8


def test_the_command_dry_run_and_a_missing_folder(sessions_dir, tmp_path):
    out = io.StringIO()
    call_command("import_openclaw", str(sessions_dir), "--dry-run", "--no-progress", stdout=out, stderr=io.StringIO())
    assert out.getvalue().startswith("Would import 4 session(s)")
    assert ConversationTurn.objects.count() == 0
    with pytest.raises(CommandError, match="is not a folder"):
        call_command("import_openclaw", str(tmp_path / "nowhere"), stdout=io.StringIO(), stderr=io.StringIO())
