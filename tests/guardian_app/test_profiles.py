"""Workspace profiles (issue 19): the gate's decisions land in the files the agent really reads.

``seed`` keeps the seed's five files; ``openclaw`` follows OpenClaw 2026.9.6 (tool facts under AGENTS.md
``## Tools``, USER.md <= 4,000 and MEMORY.md <= 20,000 characters, reflect's pages under ``memory/``, the
agent's own edits of MEMORY.md and ``memory/`` recorded as agent edits).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from http import HTTPStatus
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from guardian_app.errors import UnknownFile
from guardian_app.models import FileVersion, WriteGuardianAudit
from guardian_app.recall.index import workspace_files
from guardian_app.reflect.plan import existing_entity_pages
from guardian_app.write import history, paths
from guardian_app.write.guardian import guard_write
from guardian_app.write.rollback import rollback_write
from reflection_site import memory_files
from sessions_app.models import DECISION_FOR_FILE, MemoryGateDecision

pytestmark = pytest.mark.django_db
Status = WriteGuardianAudit.Status
REPO = Path(__file__).resolve().parents[2]

AGENTS_MD = """# AGENTS.md - Your Workspace

## Every Session

- Read SOUL.md and USER.md before anything else.

## Tools

Skills define how tools work. Keep environment-specific local notes in this section.

## Safety

- Never run destructive commands without asking.
"""


@pytest.fixture
def openclaw(settings: Any) -> Any:
    settings.WORKSPACE_PROFILE = "openclaw"
    return settings


def _fact(make_decision: Callable[..., MemoryGateDecision], decision: str, fact: str) -> WriteGuardianAudit:
    from guardian_app.write.guardian import write_fact

    return write_fact(make_decision(decision, fact))


def _line(n: int, width: int = 60) -> str:
    return f"- note {n:05d} " + "x" * (width - 14) + "\n"


# --- The profiles themselves ---------------------------------------------------------------------
def test_each_profile_maps_every_update_decision_to_one_of_its_own_files():
    for profile in (memory_files.SEED_PROFILE, memory_files.OPENCLAW_PROFILE):
        assert set(profile.file_for_decision.values()) == set(profile.files)
        assert len(profile.files) == 5
    assert memory_files.SEED_PROFILE.file_for_decision["UPDATE_TOOLS"] == "TOOLS.md"
    assert memory_files.OPENCLAW_PROFILE.file_for_decision["UPDATE_TOOLS"] == "AGENTS.md"
    assert memory_files.OPENCLAW_PROFILE.section_for("AGENTS.md") == "Tools"
    assert "TOOLS.md" not in memory_files.OPENCLAW_PROFILE.files
    # Either profile's file maps back to its decision (corrections and datasets name files).
    assert DECISION_FOR_FILE["AGENTS.md"] == DECISION_FOR_FILE["TOOLS.md"] == "UPDATE_TOOLS"
    with pytest.raises(ValueError, match="seed, openclaw"):
        memory_files.profile("hermes")


def test_the_limits_are_openclaws_user_md_4000_and_every_other_bootstrap_file_20000():
    limits = memory_files.OPENCLAW_PROFILE.max_chars
    assert limits["USER.md"] == 4_000
    assert limits["MEMORY.md"] == limits["AGENTS.md"] == limits["SOUL.md"] == limits["IDENTITY.md"] == 20_000
    assert memory_files.SEED_PROFILE.max_chars == {}
    # agents.defaults.bootstrapMaxChars moves the others; USER.md stays at min(it, 4,000).
    raised = memory_files.profile("openclaw", bootstrap_max_chars=50_000)
    assert raised.limit_for("MEMORY.md") == 50_000 and raised.limit_for("USER.md") == 4_000
    lowered = memory_files.profile("openclaw", bootstrap_max_chars=3_000)
    assert lowered.limit_for("USER.md") == 3_000


def test_length_is_counted_as_javascript_counts_trim_end_length():
    assert memory_files.prompt_chars("abc  \n\n") == 3
    assert memory_files.prompt_chars("喜欢绿茶") == 4  # one UTF-16 unit each
    assert memory_files.prompt_chars("tea 🍵") == 6  # an emoji is a surrogate pair: two
    assert memory_files.prompt_chars(None) == 0


# --- seed: the five-file layout unchanged ---------------------------------------------------------
def test_seed_writes_tool_facts_to_tools_md_and_has_no_size_limit(workspace: Path, make_decision):
    audit = _fact(make_decision, "UPDATE_TOOLS", "Uses ripgrep for code search.")
    assert audit.status == Status.WRITTEN, audit.reason
    assert audit.target_file == "TOOLS.md"
    assert "ripgrep" in (workspace / "TOOLS.md").read_text()
    assert not (workspace / "AGENTS.md").exists()

    (workspace / "USER.md").write_text("# User\n\n## Preferences\n\n" + "".join(_line(n) for n in range(80)))
    assert memory_files.prompt_chars((workspace / "USER.md").read_text()) > 4_000
    audit = _fact(make_decision, "UPDATE_USER", "Prefers oolong tea in the evening.")
    assert audit.status == Status.WRITTEN, audit.reason


def test_seed_rejects_agents_md_as_a_file_name(api_client):
    with pytest.raises(UnknownFile, match="TOOLS.md"):
        paths.path_for("AGENTS.md")
    response = api_client.get(reverse("api:get_memory_file", args=["AGENTS.md"]))
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json()["error"]["code"] == "unknown_file"


# --- openclaw: tool facts under AGENTS.md "## Tools" ---------------------------------------------
def test_openclaw_writes_tool_facts_under_agents_md_tools_and_nowhere_else(openclaw, workspace, make_decision):
    (workspace / "AGENTS.md").write_text(AGENTS_MD)
    audit = _fact(make_decision, "UPDATE_TOOLS", "The home server is reached with `ssh nas` (user admin).")
    assert audit.status == Status.WRITTEN, audit.reason
    assert audit.target_file == "AGENTS.md"
    text = (workspace / "AGENTS.md").read_text()
    tools = text.index("## Tools")
    fact_at = text.index("ssh nas")
    assert tools < fact_at < text.index("## Safety")  # inside the Tools section
    # Everything outside the section is what it was.
    assert text.replace(text[tools : text.index("## Safety")], "") == AGENTS_MD.replace(
        AGENTS_MD[AGENTS_MD.index("## Tools") : AGENTS_MD.index("## Safety")], ""
    )
    assert not (workspace / "TOOLS.md").exists()
    assert MemoryGateDecision.objects.get(id=audit.decision_id).target_file == "AGENTS.md"


def test_openclaw_adds_a_tools_section_to_an_agents_md_without_one(openclaw, workspace, make_decision):
    (workspace / "AGENTS.md").write_text("# AGENTS.md\n\n## Safety\n\n- Ask first.\n")
    audit = _fact(make_decision, "UPDATE_TOOLS", "Deploys run with `make deploy ENV=staging`.")
    assert audit.status == Status.WRITTEN, audit.reason
    text = (workspace / "AGENTS.md").read_text()
    assert text.startswith("# AGENTS.md\n\n## Safety\n\n- Ask first.\n")
    assert text.index("## Tools") < text.index("make deploy")


def test_openclaw_refuses_an_edit_of_agents_md_outside_its_tools_section(openclaw, workspace):
    (workspace / "AGENTS.md").write_text(AGENTS_MD)
    reply = {
        "action": "write",
        "reason": "tidy",
        "edits": [{"op": "replace", "find": "Never run destructive commands", "text": "Run any command"}],
    }
    audit = guard_write(
        target_file="AGENTS.md", candidate_fact="x", source="reflect", source_ref="r1", compose=lambda _: reply
    )
    assert audit.status == Status.REFUSED
    assert "outside its ## Tools section" in audit.reason
    assert (workspace / "AGENTS.md").read_text() == AGENTS_MD


# --- openclaw: size limits ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "decision", "limit"), [("USER.md", "UPDATE_USER", 4_000), ("MEMORY.md", "UPDATE_MEMORY", 20_000)]
)
def test_openclaw_refuses_a_write_that_would_push_a_file_past_what_the_agent_loads(
    openclaw, workspace, make_decision, name, decision, limit
):
    body = "".join(_line(n) for n in range(10_000))
    header = "# Notes\n\n## Facts\n\n"
    content = header + body[: limit - len(header) - 30]  # 30 characters short of the limit
    assert limit - 40 < memory_files.prompt_chars(content) <= limit
    (workspace / name).write_text(content)
    audit = _fact(make_decision, decision, "Prefers oolong tea in the evening after dinner, never coffee.")
    assert audit.status == Status.REFUSED
    assert f"past the {limit:,}" in audit.reason and "consolidate" in audit.reason
    assert (workspace / name).read_text() == content  # untouched

    # A fact that still fits is written.
    (workspace / name).write_text(header + body[: limit - len(header) - 200])
    audit = _fact(make_decision, decision, "Drinks oolong tea.")
    assert audit.status == Status.WRITTEN, audit.reason
    assert memory_files.prompt_chars((workspace / name).read_text()) <= limit


def test_openclaw_lets_a_write_shorten_a_file_a_hand_edit_left_too_long(openclaw, workspace):
    content = "# User\n\n## Facts\n\n" + "".join(_line(n) for n in range(100)) + "- Likes coffee a lot.\n"
    assert memory_files.prompt_chars(content) > 4_000
    (workspace / "USER.md").write_text(content)
    reply = {"action": "write", "reason": "shorter", "edits": [{"op": "replace", "find": "a lot", "text": ""}]}
    audit = guard_write(
        target_file="USER.md", candidate_fact="x", source="reflect", source_ref="r2", compose=lambda _: reply
    )
    assert audit.status == Status.WRITTEN, audit.reason
    grow = {"action": "write", "reason": "longer", "edits": [{"op": "append", "text": "- Also tea."}]}
    audit = guard_write(
        target_file="USER.md", candidate_fact="y", source="reflect", source_ref="r3", compose=lambda _: grow
    )
    assert audit.status == Status.REFUSED and "past the 4,000" in audit.reason


# --- openclaw: the agent's own edits -------------------------------------------------------------
def test_openclaw_records_a_change_to_memory_md_as_the_agents_and_keeps_it(openclaw, workspace, make_decision):
    audit = _fact(make_decision, "UPDATE_MEMORY", "The staging database moved to db2.internal.")
    assert audit.status == Status.WRITTEN, audit.reason
    dreamed = (workspace / "MEMORY.md").read_text() + "- Consolidated: the user ships on Fridays.\n"
    (workspace / "MEMORY.md").write_text(dreamed)  # OpenClaw's dreaming, not us
    (workspace / "USER.md").write_text("# User\n\n- Alice.\n")
    history.check_drift()
    (workspace / "USER.md").write_text("# User\n\n- Alice, in Berlin.\n")
    versions = history.check_drift()
    kinds = {(v.file_name, v.kind) for v in versions}
    assert ("USER.md", "hand_edit") in kinds
    memory = FileVersion.objects.filter(file_name="MEMORY.md").order_by("seq")
    assert [v.kind for v in memory] == ["write", "agent_edit"]

    # The next write folds into what the agent wrote; nothing of it is lost.
    later = _fact(make_decision, "UPDATE_MEMORY", "Deploys need a green CI run.")
    assert later.status == Status.WRITTEN, later.reason
    text = (workspace / "MEMORY.md").read_text()
    assert "ships on Fridays" in text and "green CI" in text
    # Rolling back our first write keeps the agent's line too.
    rollback_write(audit, reason="wrong", requested_by="alice")
    text = (workspace / "MEMORY.md").read_text()
    assert "db2.internal" not in text and "ships on Fridays" in text and "green CI" in text


def test_seed_still_calls_a_change_to_memory_md_a_hand_edit(workspace, make_decision):
    _fact(make_decision, "UPDATE_MEMORY", "The staging database moved to db2.internal.")
    (workspace / "MEMORY.md").write_text((workspace / "MEMORY.md").read_text() + "- By hand.\n")
    assert [v.kind for v in history.check_drift()] == ["hand_edit"]


def test_the_history_api_filters_agent_edits(openclaw, workspace, make_decision, api_client):
    _fact(make_decision, "UPDATE_MEMORY", "The staging database moved to db2.internal.")
    (workspace / "MEMORY.md").write_text((workspace / "MEMORY.md").read_text() + "- Dreamed.\n")
    history.check_drift()
    response = api_client.get(reverse("api:file_history", args=["MEMORY.md"]), {"kind": "agent_edit"})
    assert response.status_code == HTTPStatus.OK
    assert [v["kind"] for v in response.json()["items"]] == ["agent_edit"]


# --- Reflect's pages ----------------------------------------------------------------------------
def _write_page(entity: str, line: str, ref: str) -> WriteGuardianAudit:
    page = paths.bank_page(entity)
    reply = {"action": "write", "reason": "page", "edits": [{"op": "append", "section": entity, "text": line}]}
    return guard_write(target_file=page, candidate_fact=line, source="reflect", source_ref=ref, compose=lambda _: reply)


def test_openclaw_puts_reflects_pages_under_memory_where_it_indexes_them(openclaw, workspace):
    audit = _write_page("Peter", "- Peter runs the Berlin office.", "p1")
    assert audit.status == Status.WRITTEN, audit.reason
    assert audit.target_file == "bank/entities/Peter.md"  # the page's name is the same in both profiles
    assert "Berlin" in (workspace / "memory" / "bank" / "entities" / "Peter.md").read_text()
    assert not (workspace / "bank").exists()
    assert existing_entity_pages() == {"peter": "Peter"}
    assert [f.path for f in workspace_files(workspace)] == ["bank/entities/Peter.md"]
    # A change there that Reflection did not make is the agent's (it writes memory/).
    page = workspace / "memory" / "bank" / "entities" / "Peter.md"
    page.write_text(page.read_text() + "- Peter moved to Munich.\n")
    assert [(v.file_name, v.kind) for v in history.check_drift()] == [("bank/entities/Peter.md", "agent_edit")]


def test_seed_keeps_reflects_pages_under_bank(workspace):
    audit = _write_page("Peter", "- Peter runs the Berlin office.", "p1")
    assert audit.status == Status.WRITTEN, audit.reason
    assert (workspace / "bank" / "entities" / "Peter.md").is_file()
    assert not (workspace / "memory").exists()
    assert [f.path for f in workspace_files(workspace)] == ["bank/entities/Peter.md"]


# --- The interfaces show the profile's files -----------------------------------------------------
def test_the_file_list_endpoint_lists_the_profiles_files(openclaw, workspace, api_client, client_for):
    (workspace / "USER.md").write_text("# User\n\n- Alice 🍵\n")
    response = api_client.get(reverse("api:list_memory_files"))
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["profile"] == "openclaw"
    files = {f["file_name"]: f for f in body["files"]}
    assert list(files) == ["MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "AGENTS.md"]
    assert files["AGENTS.md"]["decision"] == "UPDATE_TOOLS" and files["AGENTS.md"]["section"] == "Tools"
    assert files["USER.md"] == {
        "file_name": "USER.md",
        "path": "USER.md",
        "decision": "UPDATE_USER",
        "section": None,
        "exists": True,
        "chars": len("# User\n\n- Alice ") + 2,
        "max_chars": 4_000,
        "written_by_agent": False,
        "unsafe": "",
    }
    assert files["MEMORY.md"]["written_by_agent"] is True
    assert client_for("ingest").get(reverse("api:list_memory_files")).status_code == HTTPStatus.FORBIDDEN
    # A name from a client is looked up in the profile's set, never joined to a path.
    for name in ("TOOLS.md", "..", "user.md", "USER.md.tmp", "bank", "Peter.md"):
        response = api_client.get(reverse("api:get_memory_file", args=[name]))
        assert response.status_code == HTTPStatus.NOT_FOUND, name
    assert "AGENTS.md" in api_client.get(reverse("api:get_memory_file", args=["TOOLS.md"])).json()["error"]["message"]
    assert api_client.get(reverse("api:get_memory_file", args=["AGENTS.md"])).status_code == HTTPStatus.OK


def test_the_seed_file_list(api_client):
    body = api_client.get(reverse("api:list_memory_files")).json()
    assert body["profile"] == "seed"
    assert [f["file_name"] for f in body["files"]] == list(memory_files.SEED_FILES)
    assert all(f["max_chars"] is None and not f["written_by_agent"] for f in body["files"])


def test_the_cli_lists_and_accepts_only_the_profiles_files(openclaw, workspace):
    out = StringIO()
    call_command("guardian", "files", "--json", stdout=out)
    listing = json.loads(out.getvalue())
    assert listing["profile"] == "openclaw"
    assert [f["file_name"] for f in listing["files"]] == list(memory_files.OPENCLAW_FILES)
    out = StringIO()
    call_command("guardian", "files", stdout=out)
    assert "AGENTS.md" in out.getvalue() and "under ## Tools" in out.getvalue() and "TOOLS.md" not in out.getvalue()
    with pytest.raises(CommandError, match="AGENTS.md"):
        call_command("guardian", "history", "-f", "TOOLS.md", stdout=StringIO())


def test_the_admin_offers_the_profiles_files(openclaw, workspace, admin_client, make_decision):
    audit = _fact(make_decision, "UPDATE_TOOLS", "Uses ripgrep for code search.")
    response = admin_client.get(reverse("admin:guardian_app_file_history", args=["AGENTS.md"]))
    assert response.status_code == HTTPStatus.OK
    assert b"ripgrep" in response.content
    retry = admin_client.get(reverse("admin:guardian_app_writeguardianaudit_retry", args=[audit.id]))
    assert retry.status_code == HTTPStatus.OK
    assert b'value="AGENTS.md"' in retry.content and b'value="TOOLS.md"' not in retry.content


# --- The data dir is never committed with the workspace -----------------------------------------
def _start(workspace: Path) -> None:
    """A real start: a process that loads the settings with this workspace."""
    env = {**os.environ, "WORKSPACE_DIR": str(workspace), "DJANGO_SETTINGS_MODULE": "reflection_site.settings"}
    code = "import django; django.setup(); from django.conf import settings; print(settings.DATA_DIR)"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, capture_output=True, timeout=120)


def _git(workspace: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workspace.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(["git", *args], cwd=workspace, env=env, check=True, capture_output=True, text=True)
    return done.stdout


def test_git_add_in_the_workspace_never_stages_the_data_dir(tmp_path):
    home = tmp_path / "openclaw-workspace"
    home.mkdir()
    _start(home)
    data = home / ".openclaw-reflection"
    assert (data / "secret_key").is_file()
    assert (data / ".gitignore").read_text().splitlines()[-1] == "*"
    (home / "MEMORY.md").write_text("# Memory\n")
    (data / "reflection.db").write_bytes(b"SQLite format 3\x00")  # whatever the data dir holds
    _git(home, "init", "-q")
    _git(home, "add", ".")
    staged = _git(home, "diff", "--cached", "--name-only").split()
    assert staged == ["MEMORY.md"]

    # A data dir from before this change (no .gitignore) gets one on the next start.
    (data / ".gitignore").unlink()
    _git(home, "rm", "-q", "--cached", "MEMORY.md")
    _git(home, "add", ".")
    assert any(
        name.startswith(".openclaw-reflection/") for name in _git(home, "diff", "--cached", "--name-only").split()
    )
    _git(home, "rm", "-rq", "--cached", ".")
    _start(home)
    _git(home, "add", ".")
    assert _git(home, "diff", "--cached", "--name-only").split() == ["MEMORY.md"]


def test_the_gate_prompt_shows_the_headings_of_the_profiles_files(openclaw, workspace):
    from sessions_app.gate import memory_file_headings

    (workspace / "AGENTS.md").write_text(AGENTS_MD)
    lines = memory_file_headings().splitlines()
    assert "- AGENTS.md (UPDATE_TOOLS): # AGENTS.md - Your Workspace; ## Every Session; ## Tools; ## Safety" in lines
    assert not any("TOOLS.md" in line.split(" ")[1] for line in lines)
    assert not any("not readable" in line for line in lines)


def test_rolling_back_our_write_keeps_the_agents_rewrite_of_its_line(openclaw, workspace, make_decision):
    audit = _fact(make_decision, "UPDATE_MEMORY", "The staging database moved to db2.internal.")
    text = (workspace / "MEMORY.md").read_text()
    dreamed = text.replace("moved to db2.internal.", "is db2.internal (consolidated).")
    (workspace / "MEMORY.md").write_text(dreamed)  # OpenClaw's dreaming rewrites our line
    rollback_write(audit, reason="wrong", requested_by="alice")
    assert "db2.internal (consolidated)" in (workspace / "MEMORY.md").read_text()
    kinds = list(FileVersion.objects.filter(file_name="MEMORY.md").order_by("seq").values_list("kind", flat=True))
    assert kinds[:2] == ["write", "agent_edit"]
