"""Collection: each criterion of the four sample types, statuses, privacy, and collecting once."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from dataset_app.collect import collect_samples
from dataset_app.models import DatasetSample
from tests.dataset_app.factories import (
    AuditFactory,
    ContextFactory,
    CorrectionFactory,
    DecisionFactory,
    RollbackFactory,
    SampleFactory,
    TurnFactory,
    days_ago,
    written_decision,
)

pytestmark = pytest.mark.django_db


def samples(sample_type: str) -> list[DatasetSample]:
    return list(DatasetSample.objects.filter(sample_type=sample_type).order_by("created_at", "id"))


# --- memory_gate_positive ------------------------------------------------------------------------


def test_a_write_that_stood_the_window_becomes_a_positive_sample():
    decision = written_decision(days=8)
    ContextFactory(turn=decision.turn, role="user", message="Let's plan the week.", sequence_number=0)

    collect_samples()

    (sample,) = samples("memory_gate_positive")
    assert sample.decision_id == decision.id
    assert sample.turn_id == decision.turn_id
    assert sample.session_id == decision.session_id
    assert sample.label == "UPDATE_USER"
    assert sample.collection_strategy == "auto_positive"
    content = sample.content
    assert content["type"] == "memory_gate_positive"
    assert content["correctDecision"] == "UPDATE_USER"
    assert content["correctFact"] == "Prefers morning check-ins."
    assert content["evidence"] == {"wasWritten": True, "userFeedback": None}
    assert content["conversation"] == [
        {"role": "user", "message": "Let's plan the week."},
        {"role": "user", "message": "I prefer morning check-ins."},
        {"role": "agent", "message": "Noted, I'll schedule check-ins in the morning."},
    ]


def test_a_turn_without_context_carries_the_previous_turns_the_gate_saw():
    """Issue 20: the gate falls back to the session's previous turns when the agent sent no context; the
    sample shows that same window (sessions_app.gate.context_window), not an empty one."""
    from sessions_app.gate import context_window

    first = TurnFactory(user_message_content="We moved to Lisbon.", agent_message_content="Nice!")
    TurnFactory(session=first.session, user_message_content="Any cafés?", agent_message_content="")
    turn = TurnFactory(session=first.session, created_at=days_ago(8))
    decision = DecisionFactory(turn=turn, created_at=days_ago(8))
    AuditFactory(decision=decision, created_at=days_ago(8))

    collect_samples()

    (sample,) = samples("memory_gate_positive")
    assert sample.content["conversation"][:-2] == [
        {"role": "user", "message": "We moved to Lisbon."},
        {"role": "agent", "message": "Nice!"},
        {"role": "user", "message": "Any cafés?"},
    ]
    assert [(m["role"], m["message"]) for m in sample.content["conversation"][:-2]] == context_window(turn)


def test_a_write_younger_than_the_window_is_not_collected_yet():
    written_decision(days=6)

    result = collect_samples(sample_type="positive")

    assert samples("memory_gate_positive") == []
    assert result.skipped["not_settled"] == 1


def test_the_window_is_configurable(settings):
    settings.DATASET_NOT_ROLLED_BACK_WITHIN_DAYS = 2
    written_decision(days=3)

    collect_samples()

    assert len(samples("memory_gate_positive")) == 1


def test_an_objection_on_the_turn_keeps_a_positive_out(settings):
    decision = written_decision(days=10)
    decision.turn.feedback_json = {
        "events": [
            {"user_id": "u1", "feedback": "up", "reason": None, "at": "2026-01-01T00:00:00Z"},
            {"user_id": "u2", "feedback": "down", "reason": "wrong", "at": "2026-01-01T00:01:00Z"},
        ],
        "last": "up",
    }
    decision.turn.save()

    result = collect_samples(sample_type="positive")

    assert samples("memory_gate_positive") == []
    assert result.skipped["user_objection"] == 1

    settings.DATASET_POSITIVE_NO_USER_OBJECTION = False
    collect_samples(sample_type="positive")
    assert len(samples("memory_gate_positive")) == 1


def test_thumbs_up_marks_the_positive_confirmed():
    decision = written_decision(days=10)
    decision.turn.feedback_json = {
        "events": [{"user_id": "u", "feedback": "up", "reason": None, "at": "x"}],
        "last": "up",
    }
    decision.turn.save()

    collect_samples()

    (sample,) = samples("memory_gate_positive")
    assert sample.content["evidence"]["userFeedback"] == "confirmed"


def test_a_positive_below_min_quality_is_left_out(settings):
    settings.DATASET_MIN_QUALITY_SCORE = 0.99
    written_decision(days=10)

    result = collect_samples(sample_type="positive")

    assert samples("memory_gate_positive") == []
    assert result.skipped["below_min_quality"] == 1


# --- memory_gate_negative ------------------------------------------------------------------------


def test_a_guardian_refusal_makes_a_negative_sample_at_once():
    decision = written_decision(days=0, status="refused", reason="Duplicate of an existing line.")

    collect_samples()

    (sample,) = samples("memory_gate_negative")
    assert sample.decision_id == decision.id
    assert sample.label == "NO_WRITE"
    assert sample.collection_strategy == "guardian_refused"
    assert sample.content["incorrectDecision"] == "UPDATE_USER"
    assert sample.content["incorrectFact"] == "Prefers morning check-ins."
    assert sample.content["correctDecision"] == "NO_WRITE"
    assert sample.content["correctFact"] is None
    assert sample.content["rejectionReason"] == "Duplicate of an existing line."
    assert sample.content["evidence"]["guardianRefused"] is True


def test_a_refusal_is_not_a_negative_when_the_criterion_is_off(settings):
    settings.DATASET_NEGATIVE_GUARDIAN_REFUSED = False
    written_decision(days=0, status="refused")

    collect_samples(sample_type="negative")

    assert samples("memory_gate_negative") == []


def test_a_refusal_overruled_by_a_written_retry_is_not_a_negative():
    decision = written_decision(days=10, status="refused")
    AuditFactory(decision=decision, status="written", retry_of=decision.audits.get(), created_at=days_ago(9))

    collect_samples()

    assert samples("memory_gate_negative") == []
    assert len(samples("memory_gate_positive")) == 1


def test_a_rollback_within_the_window_makes_a_negative_sample():
    decision = written_decision(days=3, status="rolled_back")
    RollbackFactory(audit=decision.audits.get(), reason="Not a real preference.")

    collect_samples()

    (sample,) = samples("memory_gate_negative")
    assert sample.collection_strategy == "rollback"
    assert sample.content["correctDecision"] == "NO_WRITE"
    assert sample.content["evidence"]["rolledBack"] is True
    assert "Not a real preference." in sample.content["rejectionReason"]
    assert samples("memory_gate_positive") == []


def test_a_rollback_after_the_window_leaves_the_write_a_positive():
    decision = written_decision(days=30, status="rolled_back")
    audit = decision.audits.get()
    RollbackFactory(audit=audit, rolled_back_at=audit.created_at + __import__("datetime").timedelta(days=20))

    collect_samples()

    assert samples("memory_gate_negative") == []
    assert len(samples("memory_gate_positive")) == 1


def test_a_correction_to_refused_records_no_write_as_correct():
    decision = written_decision(days=1)
    CorrectionFactory(audit=decision.audits.get(), corrected_status="refused", correction_reason="Small talk.")

    collect_samples()

    (sample,) = samples("memory_gate_negative")
    assert sample.collection_strategy == "behavior_correction"
    assert sample.content["correctDecision"] == "NO_WRITE"
    assert sample.content["rejectionReason"] == "Small talk."
    assert sample.content["evidence"]["correctionId"] is not None


def test_a_correction_to_another_file_records_that_files_decision():
    decision = written_decision(days=1)
    CorrectionFactory(
        audit=decision.audits.get(),
        corrected_status="written",
        corrected_target_file="MEMORY.md",
        corrected_candidate_fact="Team check-ins happen in the morning.",
        correction_reason="A team plan, not a personal preference.",
    )

    collect_samples()

    (sample,) = samples("memory_gate_negative")
    assert sample.label == "UPDATE_MEMORY"
    assert sample.content["correctDecision"] == "UPDATE_MEMORY"
    assert sample.content["correctFact"] == "Team check-ins happen in the morning."


def test_a_confirming_correction_makes_a_positive_at_once():
    decision = written_decision(days=0)
    CorrectionFactory(
        audit=decision.audits.get(),
        corrected_status="written",
        corrected_target_file="USER.md",
        corrected_candidate_fact="Prefers check-ins before 10am.",
        correction_reason="More precise.",
    )

    collect_samples(auto_approve=True)

    (sample,) = samples("memory_gate_positive")
    assert sample.content["correctFact"] == "Prefers check-ins before 10am."
    assert sample.content["evidence"]["userFeedback"] == "corrected"
    assert sample.annotation_status == "auto_approved"
    assert sample.annotation_notes == "auto-approved: confirmed_correction"


def test_a_later_correction_rejects_the_positive_it_contradicts():
    decision = written_decision(days=10)
    collect_samples()
    (positive,) = samples("memory_gate_positive")

    CorrectionFactory(audit=decision.audits.get(), corrected_status="refused")
    result = collect_samples()

    (negative,) = samples("memory_gate_negative")
    positive.refresh_from_db()
    assert positive.annotation_status == "rejected"
    assert negative.id in positive.annotation_notes
    assert result.superseded == 1


def test_a_later_correction_sends_a_human_approved_positive_back_to_review():
    decision = written_decision(days=10)
    collect_samples()
    DatasetSample.objects.update(annotation_status="approved", annotated_by="alice")

    CorrectionFactory(audit=decision.audits.get(), corrected_status="refused")
    collect_samples()

    positive = samples("memory_gate_positive")[0]
    assert positive.annotation_status == "needs_review"


def test_no_write_decisions_are_never_gate_samples():
    turn = TurnFactory(user_message_content="Thanks!")
    DecisionFactory(turn=turn, session=turn.session, decision="NO_WRITE", candidate_fact=None)

    collect_samples()

    assert DatasetSample.objects.count() == 0


# --- write_guardian_decision ---------------------------------------------------------------------


def test_a_refused_audit_becomes_a_guardian_sample_with_the_file_it_saw():
    decision = written_decision(days=0, status="refused", reason="Already in the file.")
    audit = decision.audits.get()

    collect_samples(sample_type="guardian")

    (sample,) = samples("write_guardian_decision")
    assert sample.audit_id == audit.id
    assert sample.label == "refused"
    assert sample.content == {
        "type": "write_guardian_decision",
        "candidateFact": "Prefers morning check-ins.",
        "targetFile": "USER.md",
        "currentFileContent": "# User\n\n- Lives in Lisbon.\n",
        "decision": "refused",
        "reason": "Already in the file.",
        "diff": audit.diff,
        "edits": [],
        "userCorrection": None,
    }


def test_a_written_audit_is_collected_at_once_and_stronger_once_it_stood():
    written_decision(days=2)
    written_decision(days=8)

    collect_samples(sample_type="guardian")

    fresh, stood = sorted(samples("write_guardian_decision"), key=lambda s: s.quality_factors["decisionConfidence"])
    assert fresh.label == stood.label == "written"
    assert fresh.content["userCorrection"] is None
    assert fresh.quality_factors["decisionConfidence"] < stood.quality_factors["decisionConfidence"]


def test_a_later_correction_amends_the_guardian_sample():
    decision = written_decision(days=1)
    collect_samples(sample_type="guardian")
    (sample,) = samples("write_guardian_decision")
    sample.annotation_status = "approved"
    sample.save()

    CorrectionFactory(audit=decision.audits.get(), corrected_status="refused", correction_reason="Not durable.")
    result = collect_samples(sample_type="guardian")

    sample.refresh_from_db()
    assert result.amended == 1
    assert sample.label == "refused"
    assert sample.content["userCorrection"]["correctedDecision"] == "refused"
    assert sample.annotation_status == "needs_review"  # a person approved the old label
    assert "Amended" in sample.annotation_notes
    assert collect_samples(sample_type="guardian").amended == 0  # once


def test_an_amendment_keeps_a_persons_rejection():
    decision = written_decision(days=1, status="rolled_back")
    collect_samples(sample_type="guardian")  # no rollback row yet: collected as written
    DatasetSample.objects.update(annotation_status="rejected")

    RollbackFactory(audit=decision.audits.get())
    collect_samples(sample_type="guardian")

    (sample,) = samples("write_guardian_decision")
    assert (sample.label, sample.annotation_status) == ("refused", "rejected")


def test_a_corrected_audit_carries_the_users_correction():
    decision = written_decision(days=1)
    CorrectionFactory(audit=decision.audits.get(), corrected_status="refused", correction_reason="Not durable.")

    collect_samples(sample_type="guardian")

    (sample,) = samples("write_guardian_decision")
    assert sample.label == "refused"
    assert sample.content["decision"] == "written"
    assert sample.content["userCorrection"] == {
        "originalDecision": "written",
        "correctedDecision": "refused",
        "reason": "Not durable.",
    }


def test_audits_without_a_session_are_not_samples():
    AuditFactory(decision=None, turn=None, session=None, source="reflect", candidate_fact="A fact.", status="refused")

    collect_samples()

    assert DatasetSample.objects.count() == 0


# --- annotated_turn ------------------------------------------------------------------------------


def test_a_turn_with_feedback_becomes_an_annotated_turn():
    decision = written_decision(days=0)
    turn = decision.turn
    turn.feedback_json = {"events": [{"user_id": "u1", "feedback": "up", "reason": None, "at": "t"}], "last": "up"}
    turn.save()

    collect_samples(sample_type="annotated")

    (sample,) = samples("annotated_turn")
    content = sample.content
    assert content["conversationId"] == turn.session_id
    assert content["turnNumber"] == turn.turn_number
    assert content["memoryGate"]["output"] == {
        "decision": "UPDATE_USER",
        "reason": decision.reason,
        "candidateFact": "Prefers morning check-ins.",
    }
    assert content["memoryGate"]["label"] == "correct"
    assert content["writeGuardian"]["input"]["currentContent"] == "# User\n\n- Lives in Lisbon.\n"
    assert content["writeGuardian"]["label"] == "correct"
    assert content["feedback"]["last"] == "up"
    assert sample.annotation_status == "needs_review"  # userFeedbackReceived


def test_a_corrected_turn_has_corrected_labels_for_both_stages():
    decision = written_decision(days=0)
    CorrectionFactory(audit=decision.audits.get(), corrected_status="refused", correction_reason="Chit-chat.")

    collect_samples(sample_type="annotated")

    (sample,) = samples("annotated_turn")
    gate = sample.content["memoryGate"]
    assert gate["label"] == "corrected"
    assert gate["correctedOutput"] == {"decision": "NO_WRITE", "reason": "Chit-chat.", "candidateFact": None}
    guardian = sample.content["writeGuardian"]
    assert guardian["label"] == "corrected"
    assert guardian["correctedOutput"]["status"] == "refused"
    assert sample.label == "NO_WRITE"


def test_a_turn_without_feedback_or_correction_is_not_annotated():
    written_decision(days=0)

    collect_samples(sample_type="annotated")

    assert samples("annotated_turn") == []


# --- collecting once, dry runs, filters ----------------------------------------------------------


def test_collecting_twice_makes_no_second_sample():
    written_decision(days=10)
    written_decision(days=0, status="refused")

    first = collect_samples()
    second = collect_samples()

    assert first.total_created == 4  # a positive, a negative, and each audit as a guardian sample
    assert second.total_created == 0
    assert DatasetSample.objects.count() == 4


def test_the_database_refuses_a_second_sample_of_the_same_source():
    sample = SampleFactory()

    with pytest.raises(IntegrityError), transaction.atomic():
        SampleFactory(source_key=sample.source_key, session=sample.session)


def test_concurrent_collectors_insert_each_source_once():
    """Both collectors drafted the same source; the second insert is ignored by the constraint."""
    from django.utils import timezone

    from dataset_app.collect import CollectionResult, draft_gate_sample, finish_drafts
    from dataset_app.collect import collect as collect_module
    from dataset_app.scoring import QualityWeights

    decision = written_decision(days=10)
    now = timezone.now()
    drafts = []
    for _ in range(2):
        d = type(decision).objects.prefetch_related("audits__corrections", "turn__context").get(id=decision.id)
        draft, _ = draft_gate_sample(d, now=now, types=("memory_gate_positive",))
        drafts.append(draft)
    finish_drafts(drafts, auto_approve=False, now=now, weights=QualityWeights())
    result = CollectionResult()
    created = collect_module._insert(drafts[:1], result) + collect_module._insert(drafts[1:], result)

    assert len(created) == 1
    assert DatasetSample.objects.filter(decision=decision).count() == 1


def test_dry_run_counts_and_stores_nothing():
    written_decision(days=10)

    result = collect_samples(dry_run=True)

    assert result.dry_run is True
    assert result.total_created == 2
    assert DatasetSample.objects.count() == 0


def test_type_session_and_time_filters():
    old = written_decision(days=20)
    recent = written_decision(days=9)

    collect_samples(sample_type="positive", session_id=recent.session_id)
    assert [s.decision_id for s in samples("memory_gate_positive")] == [recent.id]
    assert samples("write_guardian_decision") == []

    collect_samples(sample_type="positive", until=days_ago(15))
    assert {s.decision_id for s in samples("memory_gate_positive")} == {old.id, recent.id}


def test_an_unknown_type_is_an_error():
    with pytest.raises(ValueError):
        collect_samples(sample_type="bogus")


def test_collection_disabled_collects_nothing(settings):
    settings.DATASET_COLLECTION_ENABLED = False
    written_decision(days=10)

    collect_samples()

    assert DatasetSample.objects.count() == 0


def test_progress_reports_done_and_total():
    written_decision(days=10)
    calls = []

    collect_samples(progress=lambda done, total: calls.append((done, total)))

    assert calls[0] == (0, 2)
    assert calls[-1] == (2, 2)


# --- statuses and privacy ------------------------------------------------------------------------


def test_auto_approve_takes_high_quality_samples_without_doubts():
    written_decision(days=10)

    collect_samples(sample_type="positive", auto_approve=True)

    (sample,) = samples("memory_gate_positive")
    assert sample.quality_score >= 0.85
    assert sample.annotation_status == "auto_approved"
    assert sample.annotated_by == "collector"


def test_without_auto_approve_clean_samples_stay_pending():
    written_decision(days=10)

    collect_samples(sample_type="positive")

    assert samples("memory_gate_positive")[0].annotation_status == "pending"


def test_low_gate_confidence_needs_review():
    decision = written_decision(days=10)
    decision.confidence = 0.3
    decision.save()

    collect_samples(sample_type="positive", auto_approve=True)

    (sample,) = samples("memory_gate_positive")
    assert sample.annotation_status == "needs_review"
    assert "low_confidence" in sample.annotation_notes


def test_medium_quality_needs_review(settings):
    settings.DATASET_HIGH_QUALITY_SCORE = 0.99
    written_decision(days=10)

    collect_samples(sample_type="positive", auto_approve=True)

    (sample,) = samples("memory_gate_positive")
    assert sample.annotation_status == "needs_review"
    assert "medium_quality" in sample.annotation_notes


def test_a_sample_matching_an_approved_pattern_is_auto_approved(settings):
    settings.DATASET_HIGH_QUALITY_SCORE = 0.99
    settings.DATASET_REVIEW_MEDIUM_QUALITY = False
    written_decision(days=10)
    collect_samples(sample_type="positive")
    DatasetSample.objects.update(annotation_status="approved")

    written_decision(days=10)  # same fact, same decision
    collect_samples(sample_type="positive", auto_approve=True)

    newest = samples("memory_gate_positive")[-1]
    assert newest.annotation_status == "auto_approved"
    assert newest.annotation_notes == "auto-approved: matches_approved_pattern"


def test_pii_is_detected_redacted_and_sent_to_review():
    written_decision(
        days=10,
        user="My email is alice@example.com and my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
        fact="Email is alice@example.com.",
    )

    collect_samples(sample_type="positive", auto_approve=True)

    (sample,) = samples("memory_gate_positive")
    assert sample.privacy_checked is True
    assert sample.contains_pii is True
    assert sample.annotation_status == "needs_review"
    assert "sensitive_info" in sample.annotation_notes
    redacted = str(sample.pii_redacted_content)
    assert "alice@example.com" not in redacted
    assert "sk-proj-" not in redacted
    assert "[EMAIL]" in redacted and "[SECRET]" in redacted
    assert "alice@example.com" in str(sample.content)  # the raw text is kept for people with the permission


def test_clean_samples_have_no_redacted_copy():
    written_decision(days=10)

    collect_samples(sample_type="positive")

    sample = samples("memory_gate_positive")[0]
    assert (sample.privacy_checked, sample.contains_pii, sample.pii_redacted_content) == (True, False, None)


def test_privacy_filtering_off_leaves_samples_unchecked(settings):
    settings.DATASET_PRIVACY_FILTERING_ENABLED = False
    written_decision(days=10, user="Mail me at bob@example.org please")

    collect_samples(sample_type="positive")

    sample = samples("memory_gate_positive")[0]
    assert sample.privacy_checked is False
    assert sample.contains_pii is False


def test_unverifiable_redaction_is_not_kept(monkeypatch):
    from reflection_site import privacy

    written_decision(days=10, user="Write to carol@example.com")
    monkeypatch.setattr(privacy, "redact_data", lambda value: value)  # a redactor that fails silently

    collect_samples(sample_type="positive")

    sample = samples("memory_gate_positive")[0]
    assert sample.contains_pii is True
    assert sample.pii_redacted_content is None
