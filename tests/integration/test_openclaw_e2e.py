"""The real OpenClaw end to end: ``openclaw@2026.9.6`` on Node 24 (from PyPI), the fake model server, the plugin
linked by its README's three commands, a live Reflection (PostgreSQL, Redis, a real Celery worker).

English and Chinese turns (one with a tool call whose result OpenClaw stores zstd-compressed) arrive through the
plugin, the gate decides, the guardian writes the memory files in OpenClaw's own workspace, and OpenClaw's next
prompt, as the model server receives it, carries the new facts through OpenClaw's bootstrap. Importing the
store OpenClaw wrote afterwards finds every turn already stored.

Outside CI (REQUIRE_SERVICES unset) the module skips when openclaw is not installed (``make openclaw``); with
REQUIRE_SERVICES=1 it installs it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from guardian_app.models import WriteGuardianAudit
from reflection_site.models import ApiKey
from sessions_app.models import ConversationSession, ConversationTurn, MemoryGateDecision
from sessions_app.openclaw_import import import_sessions
from tests import openclaw_harness
from tests.fake_llm import OPENCLAW_MARKER
from tests.services import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(1500)]

ENGLISH = "Remember that I prefer green tea over coffee."
CHINESE = "我喜欢喝乌龙茶。请读一下 notes.txt。"
QUESTION = "What should I drink this afternoon?"
TELEGRAM = "agent:main:telegram:direct:4711"


@pytest.fixture(scope="session")
def openclaw_cli() -> Path:
    return openclaw_harness.require_cli()


@pytest.fixture
def openclaw(openclaw_cli: Path, tmp_path: Path, workspace: Path, fake_llm) -> openclaw_harness.OpenClaw:
    claw = openclaw_harness.OpenClaw(tmp_path / "home", openclaw_cli)
    claw.configure(workspace=workspace, llm_base_url=fake_llm.base_url)
    return claw


def _agent_prompts(fake_llm) -> list[dict]:
    return [r for r in fake_llm.chat_requests if OPENCLAW_MARKER in str(r["messages"][0].get("content"))]


def _written(turn: ConversationTurn) -> WriteGuardianAudit | None:
    return WriteGuardianAudit.objects.filter(turn_id=turn.id, status="written").first()


def test_turns_flow_from_openclaw_to_memory_and_back_into_its_prompt(
    openclaw, live_server, fake_llm, make_worker, workspace: Path
):
    worker = make_worker().start()
    _, key = ApiKey.generate("openclaw-e2e", ["ingest"])
    openclaw.link_plugin(base_url=live_server.url, api_key=key, timeoutMs=20000)
    lines = [f"Line {n}: the staging server lives in Tokyo and deploys on Mondays." for n in range(40)]
    (workspace / "notes.txt").write_text("\n".join(lines) + "\n")  # > 1 KiB: OpenClaw stores the result zstd.

    openclaw.agent(ENGLISH)
    openclaw.agent(CHINESE)

    session = ConversationSession.objects.get(id="agent:main:main")
    assert session.metadata["source"] == "openclaw_plugin" and session.metadata["agent_id"] == "main"
    english, chinese = ConversationTurn.objects.filter(session=session).order_by("turn_number")
    assert english.user_message_content == ENGLISH
    assert chinese.user_message_content == CHINESE
    assert chinese.agent_message_content == f"The file says: {lines[0]}"
    (call,) = chinese.agent_metadata["tool_calls"]
    assert (call["name"], call["arguments"]) == ("read", {"path": "notes.txt"})
    (result,) = chinese.agent_metadata["tool_results"]
    assert result["tool_name"] == "read" and result["is_error"] is False and lines[1] in result["content"]
    assert [c.message for c in chinese.context.order_by("sequence_number")] == [ENGLISH, english.agent_message_content]

    # The gate decides each turn and the guardian writes both facts into the files OpenClaw reads.
    audits = [
        wait_until(lambda t=t: _written(t), timeout=120, message=f"the write of {t.user_message_content}")
        for t in (english, chinese)
    ]
    decisions = {d.turn_id: d for d in MemoryGateDecision.objects.filter(turn__session=session)}
    assert decisions[english.id].decision == "UPDATE_MEMORY", worker.log()[-3000:]
    assert decisions[chinese.id].decision == "UPDATE_USER"
    memory, user = (workspace / "MEMORY.md").read_text(), (workspace / "USER.md").read_text()
    assert audits[0].candidate_fact in memory and "green tea" in audits[0].candidate_fact
    assert audits[1].candidate_fact in user and "乌龙茶" in audits[1].candidate_fact

    # OpenClaw's next prompt carries both facts, read through its own bootstrap (the workspace files).
    before = len(_agent_prompts(fake_llm))
    openclaw.agent(QUESTION)
    system = _agent_prompts(fake_llm)[before]["messages"][0]["content"]
    assert f"## {workspace}/USER.md" in system and f"## {workspace}/MEMORY.md" in system
    user_section = system.split(f"## {workspace}/USER.md", 1)[1]
    memory_section = system.split(f"## {workspace}/MEMORY.md", 1)[1]
    assert audits[1].candidate_fact in user_section.split("\n## /", 1)[0]
    assert audits[0].candidate_fact in memory_section.split("\n## /", 1)[0]
    assert ConversationTurn.objects.filter(session=session).count() == 3

    # A direct chat's session key names its channel and peer.
    openclaw.agent("My name is Ada.", session_key=TELEGRAM)
    telegram = ConversationSession.objects.get(id=TELEGRAM)
    assert (telegram.channel_id, telegram.conversation_target) == ("telegram", "4711")
    assert telegram.turns.get().user_from == "4711"

    # The store OpenClaw wrote holds the same turns: importing it adds nothing (and it read a zstd row to say so).
    with sqlite3.connect(f"{openclaw.store().as_uri()}?mode=ro", uri=True) as db:
        assert db.execute("SELECT count(*) FROM transcript_events WHERE event_zstd IS NOT NULL").fetchone()[0] >= 1
    report = import_sessions(openclaw.state_dir)
    assert (report.sessions, report.turns_created, report.turns_existing, report.malformed) == (2, 0, 4, [])
    assert report.turns_failed == []
    assert ConversationTurn.objects.count() == 4 and ConversationSession.objects.count() == 2


def test_reflection_down_queues_turns_and_the_next_turn_delivers_them(openclaw, live_server, tmp_path: Path):
    _, key = ApiKey.generate("openclaw-queue", ["ingest"])
    queue = tmp_path / "queue.jsonl"
    # Nothing listens on the first address: the turn is queued, the agent answers all the same.
    openclaw.link_plugin(base_url="http://127.0.0.1:9", api_key=key, timeoutMs=2000, queueFile=str(queue))
    answer = openclaw.agent("Hello while Reflection is down.")
    assert answer["payloads"][0]["text"] == "Noted: Hello while Reflection is down."
    assert ConversationTurn.objects.count() == 0
    assert len(queue.read_text().splitlines()) == 1

    openclaw.run(
        "config",
        "set",
        "plugins.entries.reflection.config.baseUrl",
        live_server.url,
    )
    openclaw.agent("Hello again, Reflection is back.")
    turns = list(ConversationTurn.objects.order_by("turn_number").values_list("user_message_content", flat=True))
    assert turns == ["Hello while Reflection is down.", "Hello again, Reflection is back."]
    assert queue.read_text() == ""
