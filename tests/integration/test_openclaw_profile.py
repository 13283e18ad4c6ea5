"""The openclaw workspace profile against the real ``openclaw@2026.9.6`` (Node 24 from PyPI, the fake model server):
a tool fact the guardian writes under AGENTS.md ``## Tools`` is in OpenClaw's next prompt, and our count of a
file's characters is OpenClaw's: a USER.md of exactly 4,000 (CJK and an emoji included) reaches the prompt whole,
one more character and OpenClaw cuts it, and the guardian refuses the write that would get it there.

Outside CI (REQUIRE_SERVICES unset) the module skips when openclaw is not installed (``make openclaw``); with
REQUIRE_SERVICES=1 it installs it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from guardian_app.models import WriteGuardianAudit
from guardian_app.write.guardian import guard_write
from reflection_site import memory_files
from tests import openclaw_harness
from tests.fake_llm import OPENCLAW_MARKER

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(1200)]
TOOL_FACT = "The NAS is reached with `ssh nas-tokyo` as user backup."


@pytest.fixture(scope="module")
def openclaw_cli() -> Path:
    if openclaw_harness.installed_version() != openclaw_harness.OPENCLAW_VERSION:
        if os.environ.get("REQUIRE_SERVICES") != "1":
            pytest.skip("openclaw is not installed (make openclaw); REQUIRE_SERVICES=1 installs it")
        openclaw_harness.install()
    return openclaw_harness.cli_path()


def _system_prompts(fake_llm: Any) -> list[str]:
    found = [r["messages"][0].get("content") for r in fake_llm.chat_requests]
    return [str(c) for c in found if OPENCLAW_MARKER in str(c)]


def _section(system: str, workspace: Path, name: str) -> str:
    """What OpenClaw put in its prompt for ``name`` (its bootstrap block, up to the next file's)."""
    return system.split(f"## {workspace}/{name}", 1)[1].split(f"\n## {workspace}/", 1)[0]


def _next_prompt(claw: openclaw_harness.OpenClaw, fake_llm: Any, message: str) -> str:
    before = len(_system_prompts(fake_llm))
    claw.agent(message)
    return _system_prompts(fake_llm)[before]


def _user_md(chars: int) -> str:
    """A USER.md of exactly ``chars`` characters as OpenClaw counts them, ending in a line we look for."""
    head = "# USER.md\n\n- 名字：Alice 🍵\n"
    tail = "\n- END-OF-USER-MD"
    filler = "- likes oolong tea\n" * 400
    head_units = len(head.encode("utf-16-le")) // 2  # the emoji is two
    text = head + filler[: chars - head_units - len(tail)] + tail
    assert memory_files.prompt_chars(text) == chars
    return text + "\n"


def test_openclaw_reads_what_the_openclaw_profile_writes(
    openclaw_cli: Path, tmp_path: Path, workspace: Path, fake_llm: Any, settings: Any
):
    settings.WORKSPACE_PROFILE = "openclaw"
    settings.LLM_BASE_URL = ""  # The offline guardian; the fake model server answers OpenClaw only.
    claw = openclaw_harness.OpenClaw(tmp_path / "home", openclaw_cli)
    claw.configure(workspace=workspace, llm_base_url=fake_llm.base_url)

    first = _next_prompt(claw, fake_llm, "Hello there.")  # OpenClaw seeds its workspace (AGENTS.md …)
    assert f"## {workspace}/AGENTS.md" in first
    assert "TOOLS.md" not in [p.name for p in workspace.iterdir()]  # and no longer has a TOOLS.md

    # A tool fact goes under AGENTS.md "## Tools"; USER.md is 4,000 characters as we count them (CJK, an emoji).
    target = memory_files.active().file_for_decision["UPDATE_TOOLS"]
    audit = guard_write(target_file=target, candidate_fact=TOOL_FACT, source="learning", source_ref="tool-1")
    assert audit.status == WriteGuardianAudit.Status.WRITTEN, audit.reason
    (workspace / "USER.md").write_text(_user_md(4_000))
    system = _next_prompt(claw, fake_llm, "Which host holds the backups?")
    # The fact is in the next prompt, inside AGENTS.md's block, under its Tools heading …
    agents = _section(system, workspace, "AGENTS.md")
    assert TOOL_FACT in agents
    assert agents.index("## Tools") < agents.index(TOOL_FACT)
    # … and OpenClaw loads a USER.md of 4,000 characters whole …
    user = _section(system, workspace, "USER.md")
    assert "END-OF-USER-MD" in user and "truncated" not in user
    assert user.count("- likes oolong tea") == _user_md(4_000).count("- likes oolong tea")
    # … so the guardian refuses a fact that would grow it past that …
    refused = guard_write(
        target_file="USER.md", candidate_fact="Alice works from Lisbon.", source="learning", source_ref="u1"
    )
    assert refused.status == WriteGuardianAudit.Status.REFUSED and "past the 4,000" in refused.reason
    # … since one character more is what OpenClaw cuts.
    (workspace / "USER.md").write_text(_user_md(4_001))
    user = _section(_next_prompt(claw, fake_llm, "What do I like?"), workspace, "USER.md")
    assert "truncated USER.md: kept" in user  # its head and tail, the middle cut out
