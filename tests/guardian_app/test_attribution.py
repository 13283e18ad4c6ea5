"""Whose fact it is (issue 21, item 3): the sender and channel name the speaker, USER.md describes the owner only,
other people's facts are written with them named, their rules for the agent are held for review."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from django.urls import reverse

from guardian_app.models import WriteGuardianAudit
from guardian_app.write.attribution import name_the_person
from guardian_app.write.guardian import write_fact
from sessions_app.models import ConversationSession, ConversationTurn, GateStatus, MemoryGateDecision, WorkspaceOwner
from sessions_app.speakers import owner_ids

pytestmark = pytest.mark.django_db
Status = WriteGuardianAudit.Status


def said(sender: str | None, decision: str, fact: str, *, channel: str = "telegram") -> WriteGuardianAudit:
    session, _ = ConversationSession.objects.get_or_create(id=f"{channel}:group", defaults={"channel_id": channel})
    number = ConversationTurn.objects.filter(session=session).count() + 1
    turn = ConversationTurn.objects.create(
        session=session,
        turn_number=number,
        user_from=sender,
        user_message_content=fact,
        agent_message_content="ok",
        gate_status=GateStatus.DONE,
    )
    row = MemoryGateDecision.objects.create(
        turn=turn, session=session, decision=decision, reason="test", candidate_fact=fact, llm_model="test"
    )
    return write_fact(row)


def test_the_first_sender_seen_owns_the_workspace_and_a_second_persons_home_is_written_with_their_name(workspace):
    said("Ana", "UPDATE_USER", "Lives in Lisbon.")
    audit = said("Marta", "UPDATE_USER", "Lives in Madrid.")

    assert owner_ids() == {"ana"}
    assert WorkspaceOwner.objects.get().source == "first_sender"
    assert audit.target_file == "MEMORY.md" and audit.status == Status.WRITTEN
    assert (workspace / "USER.md").read_text().count("Lives in") == 1
    assert "Marta lives in Madrid." in (workspace / "MEMORY.md").read_text()


def test_a_soul_rule_from_someone_else_is_held_for_review(workspace):
    said("Ana", "UPDATE_SOUL", "The agent should answer in Portuguese.")
    audit = said("Marta", "UPDATE_SOUL", "The agent should answer in Spanish.")

    assert audit.status == Status.SKIPPED and audit.held_for_review
    assert "Marta" in audit.reason
    assert "Spanish" not in (workspace / "SOUL.md").read_text()


def test_the_owner_setting_wins_and_matches_channel_qualified_ids(workspace, settings):
    settings.WORKSPACE_OWNER_IDS = ["telegram:Marta"]
    audit = said("Marta", "UPDATE_USER", "Lives in Madrid.")
    other = said("Ana", "UPDATE_USER", "Lives in Lisbon.")

    assert audit.target_file == "USER.md"
    assert other.target_file == "MEMORY.md"
    assert not WorkspaceOwner.objects.exists()


def test_a_turn_without_a_sender_is_the_owners(workspace):
    assert said(None, "UPDATE_USER", "Lives in Lisbon.").target_file == "USER.md"


@pytest.mark.parametrize(
    ("fact", "named"),
    [
        ("Lives in Madrid.", "Marta lives in Madrid."),
        ("The user's wife is Clara.", "Marta's wife is Clara."),
        ("The user prefers tea.", "Marta prefers tea."),
        ("用户住在马德里。", "Marta住在马德里。"),
    ],
)
def test_facts_name_the_person(fact, named):
    assert name_the_person(fact, "Marta") == named


def test_the_owner_ids_are_shown_and_changed_in_the_admin(admin_client):
    url = reverse("admin:sessions_app_workspaceowner_add")
    response = admin_client.post(url, {"sender_id": "whatsapp:+351900000000"})
    assert response.status_code == HTTPStatus.FOUND
    owner = WorkspaceOwner.objects.get()
    assert owner.source == "admin"
    page = admin_client.get(reverse("admin:sessions_app_workspaceowner_changelist"))
    assert b"whatsapp:+351900000000" in page.content


def test_another_persons_update_replaces_only_their_own_line(workspace):
    said("Ana", "UPDATE_USER", "Lives in Lisbon.")
    said("Marta", "UPDATE_USER", "Lives in Madrid.")
    said("Jon", "UPDATE_USER", "Lives in Oslo.")
    audit = said("Marta", "UPDATE_USER", "Moved to Valencia.")

    memory = (workspace / "MEMORY.md").read_text()
    assert audit.edits[0]["op"] == "replace"
    assert "Marta moved to Valencia." in memory and "Madrid" not in memory
    assert "Jon lives in Oslo." in memory
    assert "Lives in Lisbon." in (workspace / "USER.md").read_text()
