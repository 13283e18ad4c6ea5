"""Rows for the dataset tests, made directly through the ORM (no gate or guardian code runs)."""

from __future__ import annotations

import datetime as dt
import hashlib

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from dataset_app.models import DatasetSample
from guardian_app.models import BehaviorCorrection, FileSnapshot, Rollback, WriteGuardianAudit
from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, MemoryGateDecision

LONG_AGO = dt.timedelta(days=30)


def days_ago(days: float) -> dt.datetime:
    return timezone.now() - dt.timedelta(days=days)


class SessionFactory(DjangoModelFactory):
    class Meta:
        model = ConversationSession

    id = factory.Sequence(lambda n: f"channel:test:user{n}")
    channel_id = "test"


class TurnFactory(DjangoModelFactory):
    class Meta:
        model = ConversationTurn

    session = factory.SubFactory(SessionFactory)
    turn_number = factory.Sequence(lambda n: n + 1)
    user_message_content = "I prefer morning check-ins."
    agent_message_content = "Noted, I'll schedule check-ins in the morning."
    gate_status = "done"
    created_at = factory.LazyFunction(lambda: days_ago(30))


class ContextFactory(DjangoModelFactory):
    class Meta:
        model = ConversationContext

    turn = factory.SubFactory(TurnFactory)
    role = "user"
    message = "Hi there"
    timestamp = factory.LazyFunction(timezone.now)
    sequence_number = factory.Sequence(lambda n: n)


class DecisionFactory(DjangoModelFactory):
    class Meta:
        model = MemoryGateDecision

    turn = factory.SubFactory(TurnFactory)
    session = factory.SelfAttribute("turn.session")
    decision = "UPDATE_USER"
    reason = "A stable preference about collaboration cadence."
    candidate_fact = "Prefers morning check-ins."
    confidence = 0.9
    llm_model = "fake-model-1"
    created_at = factory.LazyFunction(lambda: days_ago(30))


class SnapshotFactory(DjangoModelFactory):
    class Meta:
        model = FileSnapshot
        django_get_or_create = ("file_name", "content_hash")

    file_name = "USER.md"
    content = "# User\n\n- Lives in Lisbon.\n"
    content_hash = factory.LazyAttribute(lambda o: hashlib.sha256(o.content.encode()).hexdigest())


class AuditFactory(DjangoModelFactory):
    class Meta:
        model = WriteGuardianAudit

    decision = factory.SubFactory(DecisionFactory)
    turn = factory.SelfAttribute("decision.turn")
    session = factory.SelfAttribute("decision.session")
    target_file = "USER.md"
    candidate_fact = factory.SelfAttribute("decision.candidate_fact")
    before_snapshot = factory.SubFactory(SnapshotFactory)
    diff = "@@ -1,3 +1,4 @@\n # User\n \n - Lives in Lisbon.\n+- Prefers morning check-ins.\n"
    status = "written"
    reason = "New preference."
    created_at = factory.LazyFunction(lambda: days_ago(30))


class RollbackFactory(DjangoModelFactory):
    class Meta:
        model = Rollback

    audit = factory.SubFactory(AuditFactory)
    rolled_back_by = "ops"
    reason = "Not a real preference."
    previous_status = "written"
    rolled_back_at = factory.LazyAttribute(lambda o: o.audit.created_at + dt.timedelta(days=1))


class CorrectionFactory(DjangoModelFactory):
    class Meta:
        model = BehaviorCorrection

    audit = factory.SubFactory(AuditFactory)
    original_status = factory.SelfAttribute("audit.status")
    original_candidate_fact = factory.SelfAttribute("audit.candidate_fact")
    original_target_file = factory.SelfAttribute("audit.target_file")
    corrected_status = "refused"
    correction_reason = "Small talk, not a preference."
    corrected_by = "annotator"


class SampleFactory(DjangoModelFactory):
    class Meta:
        model = DatasetSample

    sample_type = "memory_gate_positive"
    session = factory.SubFactory(SessionFactory)
    source_key = factory.Sequence(lambda n: f"memory_gate_positive:test{n:06d}")
    content = factory.LazyFunction(
        lambda: {
            "type": "memory_gate_positive",
            "conversation": [
                {"role": "user", "message": "I prefer morning check-ins."},
                {"role": "agent", "message": "Noted."},
            ],
            "correctDecision": "UPDATE_USER",
            "correctFact": "Prefers morning check-ins.",
            "reason": "A stable preference.",
            "targetFile": "USER.md",
            "evidence": {"wasWritten": True, "userFeedback": None},
        }
    )
    label = "UPDATE_USER"
    quality_score = 0.8
    quality_factors = factory.LazyFunction(
        lambda: {"conversationClarity": 0.8, "decisionConfidence": 0.8, "factVerifiability": 0.8}
    )
    annotation_status = "pending"
    privacy_checked = True
    collection_strategy = "auto_positive"


def written_decision(
    *, days: float = 30, user: str | None = None, fact: str | None = None, **audit_kw
) -> MemoryGateDecision:
    """An UPDATE_USER decision whose write happened ``days`` ago."""
    turn_kw = {"created_at": days_ago(days)}
    if user is not None:
        turn_kw["user_message_content"] = user
    turn = TurnFactory(**turn_kw)
    decision_kw = {"turn": turn, "session": turn.session, "created_at": days_ago(days)}
    if fact is not None:
        decision_kw["candidate_fact"] = fact
    decision = DecisionFactory(**decision_kw)
    AuditFactory(decision=decision, created_at=days_ago(days), **audit_kw)
    return decision
