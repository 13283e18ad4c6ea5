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


# --- Corrections re-attribute a fact (issue 21, item 3) -------------------------------------------------------
@pytest.mark.parametrize(
    ("fact", "said_by", "about", "expected"),
    [
        ("Marta lives in Madrid.", "Marta", "owner", ("USER.md", "Lives in Madrid.")),
        ("Marta's wife is Clara.", "Marta", "owner", ("USER.md", "The user's wife is Clara.")),
        ("Marta住在马德里。", "Marta", "owner", ("USER.md", "用户住在马德里。")),
        ("Lives in Madrid.", None, "Marta", ("MEMORY.md", "Marta lives in Madrid.")),
        ("Marta lives in Madrid.", "Marta", "Jon", ("MEMORY.md", "Jon lives in Madrid.")),
        ("The user's wife is Clara.", None, "Jon", ("MEMORY.md", "Jon's wife is Clara.")),
    ],
)
def test_a_fact_is_reattributed_to_the_owner_or_to_a_named_person(fact, said_by, about, expected):
    from guardian_app.write.attribution import reattribute

    assert reattribute(fact, said_by=said_by, about=about) == expected


def test_a_correction_gives_a_misattributed_fact_back_to_the_owner_as_audited_writes(workspace):
    """The owner wrote from a second account the guardian took for someone else: the correction names the owner,
    and applying it removes "Marta lives in Madrid." from MEMORY.md and writes "Lives in Madrid." to USER.md."""
    from guardian_app.write.corrections import apply_correction, correct_audit

    said("Ana", "UPDATE_USER", "Likes green tea.")
    wrong = said("Marta", "UPDATE_USER", "Lives in Madrid.")
    assert "Marta lives in Madrid." in (workspace / "MEMORY.md").read_text()

    correction = correct_audit(
        wrong, status="written", reason="Marta is Ana's work account.", corrected_by="op", about="owner"
    )
    assert (correction.corrected_target_file, correction.corrected_candidate_fact) == ("USER.md", "Lives in Madrid.")
    applied = apply_correction(wrong, correction, requested_by="op")

    assert applied.rollback is not None and applied.written is not None
    assert applied.written.status == Status.WRITTEN and applied.written.target_file == "USER.md"
    memory = workspace / "MEMORY.md"  # The wrong write had created it: the rollback removes it again.
    assert not memory.exists() or "Madrid" not in memory.read_text()
    assert "Lives in Madrid." in (workspace / "USER.md").read_text()
    wrong.refresh_from_db()
    assert wrong.status == Status.ROLLED_BACK  # The old text stays in the file's history.


def test_a_correction_moves_a_fact_of_another_person_out_of_user_md(workspace, settings):
    from django.core.management import call_command

    settings.WORKSPACE_OWNER_IDS = ["Ana"]
    wrong = said(None, "UPDATE_USER", "Works at Revolut.")  # No sender on the turn: taken for the owner's.
    assert "Works at Revolut." in (workspace / "USER.md").read_text()

    call_command(
        "guardian", "correct", wrong.id, "--status", "written", "--about", "Jon", "--reason", "Jon said it.", "--apply"
    )

    user = workspace / "USER.md"
    assert not user.exists() or "Revolut" not in user.read_text()
    assert "Jon works at Revolut." in (workspace / "MEMORY.md").read_text()


def test_a_reattribution_through_the_api_records_where_the_fact_belongs(workspace, client_for):
    wrong = said("Marta", "UPDATE_USER", "Lives in Madrid.")
    url = reverse("api:correct_audit", args=[wrong.id])
    response = client_for("annotate").post(
        url, {"status": "written", "reason": "It is the owner's.", "about": "owner"}, content_type="application/json"
    )
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert response.json()["corrected_target_file"] == "USER.md"
    assert response.json()["corrected_candidate_fact"] == "Lives in Madrid."
    nameless = client_for("annotate").post(
        url, {"status": "written", "reason": "x", "about": " "}, content_type="application/json"
    )
    assert nameless.status_code == HTTPStatus.UNPROCESSABLE_ENTITY  # The schema refuses a blank name.


def test_the_speakers_i_past_the_subject_is_the_speaker_too(workspace):
    """v4's class (examples of our own): the gate writes every "I" of a turn as "the user"; in another person's
    fact each one is that person, not the workspace's owner."""
    said("Ana", "UPDATE_USER", "Lives in Lisbon.")
    said("Priya", "UPDATE_USER", "Is not at Halvorsen anymore, the user joined Brightwave this week.")
    said("Lin", "UPDATE_USER", "用户不在银行工作了，用户的新公司在杭州。")
    memory = (workspace / "MEMORY.md").read_text()
    assert "Priya is not at Halvorsen anymore, Priya joined Brightwave this week." in memory
    assert "Lin不在银行工作了，Lin的新公司在杭州。" in memory
    assert "the user" not in memory and "用户" not in memory


def test_an_update_goes_to_the_owners_file_that_states_the_attribute(workspace):
    """One attribute, one place: the editor stated in TOOLS.md is replaced there by an update the gate sent to
    USER.md, and the other way round; a new fact with nothing to update goes where the gate sent it."""
    said("Ana", "UPDATE_TOOLS", "Uses Vim for everything.")
    moved = said("Ana", "UPDATE_USER", "Switched to Emacs.")
    assert moved.target_file == "TOOLS.md" and moved.status == Status.WRITTEN
    tools = (workspace / "TOOLS.md").read_text()
    assert "Emacs" in tools and "Vim" not in tools
    assert not (workspace / "USER.md").exists() or "Emacs" not in (workspace / "USER.md").read_text()

    said("Ana", "UPDATE_USER", "Lives in Lisbon.")
    back = said("Ana", "UPDATE_TOOLS", "Moved to Porto.")
    assert back.target_file == "USER.md"
    assert "Porto" in (workspace / "USER.md").read_text() and "Lisbon" not in (workspace / "USER.md").read_text()

    fresh = said("Ana", "UPDATE_USER", "Uses a Kindle for reading.")
    assert fresh.target_file == "USER.md"
