"""A refused value is not readable outside the verbatim turn (issue 23): the refused audit and its gate decision
are redacted as the refusal is recorded, so the admin, `gate list`, `guardian export`, the API and the nightly
conversation export show placeholders; a retry of the refusal cannot write the placeholder."""

from __future__ import annotations

import datetime as dt
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from dataset_app.exporters.conversations import export_conversations
from guardian_app.models import WriteGuardianAudit
from guardian_app.write.guardian import write_fact
from sessions_app.models import ConversationTurn, MemoryGateDecision

pytestmark = pytest.mark.django_db

KEY = "sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm"
PHONE = "+1 415 555 0132"
PASSWORD = "Tr0ub4dor&3horse"

REFUSED = [
    (f"The user's OpenAI API key is {KEY}", KEY),
    (f"The user's phone number is {PHONE}", PHONE),
    (f"The user's email password is password: {PASSWORD}", PASSWORD),
]


def refused(make_decision, fact: str) -> WriteGuardianAudit:
    decision = make_decision("UPDATE_USER", fact)
    MemoryGateDecision.objects.filter(id=decision.id).update(
        raw_response=json.dumps({"decision": "UPDATE_USER", "candidate_fact": fact, "reason": f"user said: {fact}"}),
        reason=f"the user stated: {fact}",
    )
    audit = write_fact(MemoryGateDecision.objects.get(id=decision.id))
    assert audit.status == WriteGuardianAudit.Status.REFUSED, audit.reason
    return audit


@pytest.mark.parametrize(("fact", "value"), REFUSED)
def test_a_refused_write_leaves_the_value_only_in_the_turn(make_decision, user_md, fact, value):
    audit = refused(make_decision, fact)

    stored = WriteGuardianAudit.objects.get(id=audit.id)
    decision = MemoryGateDecision.objects.get(id=audit.decision_id)
    derived = [
        stored.candidate_fact,
        stored.reason or "",
        decision.candidate_fact,
        decision.raw_response,
        decision.reason,
    ]
    assert all(value not in text for text in derived), derived
    assert "[" in stored.candidate_fact and "]" in decision.candidate_fact  # says that a value was redacted
    assert value in ConversationTurn.objects.get(id=decision.turn_id).user_message_content
    assert not user_md.exists()


def test_no_cli_output_or_export_shows_a_refused_value(make_decision, tmp_path):
    audits = [refused(make_decision, fact) for fact, _ in REFUSED]
    ConversationTurn.objects.filter(audits__in=audits).update(created_at=timezone.now() - dt.timedelta(days=1))
    outputs = []
    for args in (("gate", "list"), ("gate", "show", audits[0].decision_id), ("guardian", "list")):
        out = StringIO()
        call_command(*args, stdout=out)
        outputs.append(out.getvalue())
    for fmt in ("json", "csv", "markdown"):
        out = StringIO()
        call_command("guardian", "export", "--format", fmt, stdout=out)
        outputs.append(out.getvalue())
    nightly = export_conversations(timezone.localdate() - dt.timedelta(days=1))
    outputs.append(nightly.path.read_text())

    assert nightly.turns == len(REFUSED)
    for text in outputs:
        for _, value in REFUSED:
            assert value not in text, text[:500]


def test_the_conversation_export_keeps_raw_text_only_when_asked(make_decision, settings, caplog):
    audit = refused(make_decision, REFUSED[0][0])
    ConversationTurn.objects.filter(audits=audit).update(created_at=timezone.now() - dt.timedelta(days=1))
    day = timezone.localdate() - dt.timedelta(days=1)

    assert KEY not in export_conversations(day).path.read_text()
    settings.JSONL_EXPORT_INCLUDE_PII = True
    with caplog.at_level("WARNING", logger="dataset_app.exporters.conversations"):
        assert KEY in export_conversations(day).path.read_text()
    assert "JSONL_EXPORT_INCLUDE_PII=true" in caplog.text


def test_a_retry_of_a_redacted_refusal_cannot_write_the_placeholder(make_decision, user_md):
    from guardian_app.write.guardian import retry_write

    audit = refused(make_decision, REFUSED[1][0])

    again = retry_write(WriteGuardianAudit.objects.get(id=audit.id), requested_by="op")

    assert again.status == WriteGuardianAudit.Status.REFUSED
    assert "redacted value" in again.reason
    assert not user_md.exists()


def test_the_gate_keeps_no_value_in_its_reason_and_raw_reply(settings):
    """A NO_WRITE never reaches the guardian: the decision's own reason and raw reply are redacted as recorded."""
    from sessions_app.gate import decide_turn
    from sessions_app.models import ConversationSession

    settings.LLM_BASE_URL = ""
    session = ConversationSession.objects.create(id="channel:test:privacy", channel_id="test")
    turn = ConversationTurn.objects.create(
        session=session, turn_number=1, user_message_content=f"here is my key {KEY}", agent_message_content="ok"
    )

    decision = decide_turn(turn)

    assert KEY not in (decision.raw_response or "") and KEY not in (decision.reason or "")
    assert KEY not in (decision.candidate_fact or "") or decision.decision != "NO_WRITE"


def test_the_conversation_export_redacts_decisions_and_audits_as_well(make_decision):
    """A written fact may hold personal data that its memory file keeps (the operator's choice); the export of the
    day's conversations does not repeat it, whatever the decision and audit rows hold."""
    decision = make_decision("UPDATE_USER", "Works with dana.lee@example.com on the launch.")
    audit = write_fact(decision)
    MemoryGateDecision.objects.filter(id=decision.id).update(reason="stated: dana.lee@example.com")
    WriteGuardianAudit.objects.filter(id=audit.id).update(candidate_fact="Works with dana.lee@example.com.")
    ConversationTurn.objects.filter(id=decision.turn_id).update(created_at=timezone.now() - dt.timedelta(days=1))

    text = export_conversations(timezone.localdate() - dt.timedelta(days=1)).path.read_text()

    assert "dana.lee@example.com" not in text and "[EMAIL]" in text
