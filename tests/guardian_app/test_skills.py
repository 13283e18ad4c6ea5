"""Skill drafts (seed 004 P3-001): a pattern recalled SKILL_PROMOTION_THRESHOLD times becomes a SKILL.md draft
that a person approves (written under skills/<name>/) or rejects; nothing is promoted without a person."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from guardian_app.models import MemoryChunk, SkillDraft
from guardian_app.recall.index import index_workspace
from guardian_app.reflect.skills import (
    SkillError,
    approve_draft,
    find_candidates,
    is_pattern,
    propose_drafts,
    reject_draft,
    split_steps,
)
from tests.fake_llm import FakeReply

pytestmark = pytest.mark.django_db

DEPLOY = "Deploy the staging server: run `make build`, then run `make deploy ENV=staging`, then check /healthz."


@pytest.fixture
def pattern(write_md):
    write_md("TOOLS.md", f"# Tools\n\n## Deploy\n\n- {DEPLOY}\n")
    write_md("USER.md", "# User\n\n- Prefers green tea in the afternoon.\n")
    index_workspace()
    chunk = MemoryChunk.objects.get(path="TOOLS.md", content__contains="Deploy the staging")
    MemoryChunk.objects.filter(path="USER.md").update(hits=50)
    return chunk


def use(chunk: MemoryChunk, times: int) -> None:
    MemoryChunk.objects.filter(id=chunk.id).update(hits=times)


@pytest.mark.parametrize(
    ("path", "kind", "text", "expected"),
    [
        ("TOOLS.md", None, "Staging is at staging.example.com.", True),
        ("memory/2025-11-27.md", "experience", "I fixed the crash with a try/catch.", True),
        ("MEMORY.md", None, "1. Open the dashboard\n2. Click export", True),
        ("MEMORY.md", None, "First run `make build`, then deploy.", True),
        ("USER.md", None, "Prefers green tea in the afternoon.", False),
        ("memory/2025-11-27.md", "opinion", "Prefers to run `make` first, then deploy.", False),
        ("bank/entities/Peter.md", None, "1. a\n2. b", False),
    ],
)
def test_what_counts_as_a_pattern(path, kind, text, expected):
    assert is_pattern(path, kind, text) is expected


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        (DEPLOY, ["Deploy the staging server: run `make build`", "Run `make deploy ENV=staging`", "Check /healthz"]),
        (
            "1. Open the dashboard\n2. Click export\n3. Send the file",
            ["Open the dashboard", "Click export", "Send the file"],
        ),
        (
            "- B @warelay: Wrapped the handler in try/catch; restarted the bot.",
            ["Wrapped the handler in try/catch", "Restarted the bot"],
        ),
    ],
)
def test_steps_come_from_the_text(text, steps):
    assert split_steps(text) == steps


def test_a_pattern_below_the_threshold_is_not_drafted(pattern, settings):
    settings.SKILL_PROMOTION_THRESHOLD = 5
    use(pattern, 4)
    assert find_candidates() == [] and propose_drafts() == []


def test_a_pattern_recalled_often_enough_becomes_one_pending_draft(pattern, workspace):
    use(pattern, 6)

    drafts = propose_drafts()

    assert [d.status for d in drafts] == ["pending"]
    draft = drafts[0]
    assert draft.name == "deploy-the-staging-server-run"
    assert draft.source_path == "TOOLS.md" and draft.hits == 6 and draft.confidence >= 0.7
    assert draft.steps[1] == "Run `make deploy ENV=staging`"
    assert draft.content.startswith(f"---\nname: {draft.name}\ndescription: ")
    assert '"pattern": "TOOLS.md#L5"' in draft.content and "## Triggers" in draft.content
    assert "1. Deploy the staging server" in draft.content
    assert not (workspace / "skills").exists()  # Nothing is written before a person approves.
    assert propose_drafts() == []  # Drafted once.


def test_approving_writes_the_skill_and_rejecting_records_why(pattern, workspace):
    use(pattern, 5)
    draft = propose_drafts()[0]

    approved = approve_draft(draft, reviewed_by="alice")

    path = workspace / "skills" / draft.name / "SKILL.md"
    assert path.read_text() == draft.content
    assert (approved.status, approved.reviewed_by, approved.written_path) == (
        "approved",
        "alice",
        f"skills/{draft.name}/SKILL.md",
    )
    with pytest.raises(SkillError, match="already approved"):
        approve_draft(approved, reviewed_by="bob")


def test_a_rejection_needs_a_reason(pattern):
    use(pattern, 5)
    draft = propose_drafts()[0]
    with pytest.raises(SkillError):
        reject_draft(draft, reviewed_by="alice", reason=" ")
    rejected = reject_draft(draft, reviewed_by="alice", reason="Too specific to one release.")
    assert rejected.status == "rejected" and rejected.review_reason == "Too specific to one release."


def test_an_existing_different_skill_is_never_overwritten(pattern, workspace):
    use(pattern, 5)
    draft = propose_drafts()[0]
    existing = workspace / "skills" / draft.name / "SKILL.md"
    existing.parent.mkdir(parents=True)
    existing.write_text("my own skill\n")

    with pytest.raises(SkillError, match="exists already"):
        approve_draft(draft, reviewed_by="alice")

    assert existing.read_text() == "my own skill\n"
    draft.refresh_from_db()
    assert draft.status == "pending"


def test_the_llm_drafts_when_configured(pattern, fake_llm):
    use(pattern, 5)

    draft = propose_drafts()[0]

    assert draft.llm_model == "fake-model-1" and draft.confidence == 0.85
    assert "ROLE: skill_draft" in fake_llm.chat_requests[0]["messages"][0]["content"]


def test_a_pattern_the_llm_rates_low_is_recorded_as_rejected_and_not_asked_again(pattern, fake_llm):
    use(pattern, 5)
    fake_llm.queue({"name": "x", "description": "d", "triggers": [], "steps": ["a"], "confidence": 0.3})

    assert propose_drafts() == []

    draft = SkillDraft.objects.get()
    assert draft.status == "rejected" and draft.reviewed_by == "reflect" and "0.30" in draft.review_reason
    propose_drafts()
    assert len(fake_llm.chat_requests) == 1


def test_an_llm_failure_drafts_offline(pattern, fake_llm, settings):
    settings.LLM_MAX_RETRIES = 0
    use(pattern, 5)
    fake_llm.queue(FakeReply(status=500))

    draft = propose_drafts()[0]

    assert draft.llm_model == "" and draft.status == "pending"


# --- The review list in the admin ----------------------------------------------------------------------
@pytest.fixture
def operator_client(client):
    user = User.objects.create_user("olivia", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name="operator"))
    client.force_login(user)
    return client


def test_an_operator_approves_a_draft_in_the_admin(pattern, operator_client, workspace):
    use(pattern, 5)
    draft = propose_drafts()[0]
    change = reverse("admin:guardian_app_skilldraft_change", args=[draft.id])

    page = operator_client.get(change)
    assert page.status_code == HTTPStatus.OK and b"Approve: write skills/" in page.content
    operator_client.post(reverse("admin:guardian_app_skilldraft_approve", args=[draft.id]))

    assert (workspace / "skills" / draft.name / "SKILL.md").exists()
    draft.refresh_from_db()
    assert draft.status == "approved" and draft.reviewed_by == "olivia"


def test_an_operator_edits_then_rejects_a_draft(pattern, operator_client):
    use(pattern, 5)
    draft = propose_drafts()[0]
    change = reverse("admin:guardian_app_skilldraft_change", args=[draft.id])

    operator_client.post(
        change,
        {
            "name": "deploy-staging",
            "description": "Deploy staging.",
            "triggers_text": "Deploys\n",
            "steps_text": "a\nb\n",
        },
    )
    draft.refresh_from_db()
    assert draft.name == "deploy-staging" and draft.steps == ["a", "b"] and "name: deploy-staging" in draft.content
    bad = operator_client.post(change, {"name": "../evil", "description": "x", "steps_text": "a"})
    assert b"Lower-case letters" in bad.content

    reject = reverse("admin:guardian_app_skilldraft_reject", args=[draft.id])
    assert operator_client.get(reject).status_code == HTTPStatus.OK
    operator_client.post(reject, {"reason": "We deploy with CI."})
    draft.refresh_from_db()
    assert draft.status == "rejected" and draft.review_reason == "We deploy with CI."


def test_an_annotator_cannot_approve(pattern, client):
    use(pattern, 5)
    draft = propose_drafts()[0]
    user = User.objects.create_user("ann", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name="annotator"))
    client.force_login(user)

    response = client.post(reverse("admin:guardian_app_skilldraft_approve", args=[draft.id]))

    assert response.status_code == HTTPStatus.FORBIDDEN
    draft.refresh_from_db()
    assert draft.status == "pending"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_link_or_a_fifo_in_place_of_the_skill_is_refused_without_reading_or_waiting(pattern, workspace, kind):
    """Issue 18: a symbolic link is not read through (nor written through), a FIFO does not hang the approval."""
    import os

    use(pattern, 5)
    draft = propose_drafts()[0]
    existing = workspace / "skills" / draft.name / "SKILL.md"
    existing.parent.mkdir(parents=True)
    if kind == "link":
        existing.symlink_to("/etc/passwd")
    else:
        os.mkfifo(existing)
    with pytest.raises(SkillError, match="not a regular file"):
        approve_draft(draft, reviewed_by="alice")
    draft.refresh_from_db()
    assert draft.status == "pending" and (existing.is_symlink() or existing.is_fifo())
