"""The data retention policy (storage.retentionDays); the conversation export's are test_conversation_export.py."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from dataset_app.models import DatasetSample
from dataset_app.retention import apply_retention
from guardian_app.models import FileSnapshot, FileVersion, WriteGuardianAudit
from sessions_app.models import ConversationSession, ConversationTurn, MemoryGateDecision
from tests.dataset_app.factories import (
    AuditFactory,
    RollbackFactory,
    SampleFactory,
    SessionFactory,
    SnapshotFactory,
    TurnFactory,
    written_decision,
)

pytestmark = pytest.mark.django_db


def old_session(days: int = 400) -> ConversationSession:
    return SessionFactory(last_activity_at=timezone.now() - dt.timedelta(days=days))


def test_retention_deletes_inactive_sessions_and_what_hangs_from_them(settings):
    settings.RETENTION_DAYS = 365
    session = old_session()
    decision = written_decision(days=400)
    ConversationTurn.objects.filter(id=decision.turn_id).update(session=session)
    MemoryGateDecision.objects.filter(id=decision.id).update(session=session)
    WriteGuardianAudit.objects.filter(decision=decision).update(session=session)
    ConversationSession.objects.filter(id=decision.turn.session_id).exclude(id=session.id).update(
        last_activity_at=timezone.now()
    )
    SampleFactory(session=session, decision=decision, annotation_status="pending")
    recent = SessionFactory()

    result = apply_retention()

    assert result.sessions_deleted == 1
    assert not ConversationSession.objects.filter(id=session.id).exists()
    assert not MemoryGateDecision.objects.filter(id=decision.id).exists()
    assert not WriteGuardianAudit.objects.filter(decision_id=decision.id).exists()
    assert not DatasetSample.objects.filter(session_id=session.id).exists()
    assert ConversationSession.objects.filter(id=recent.id).exists()


def test_retention_never_deletes_a_session_with_an_approved_sample(settings):
    settings.RETENTION_DAYS = 30
    approved = old_session()
    SampleFactory(session=approved, annotation_status="approved")
    auto = old_session()
    SampleFactory(session=auto, annotation_status="auto_approved")
    rejected = old_session()
    SampleFactory(session=rejected, annotation_status="rejected")

    result = apply_retention()

    assert (result.sessions_deleted, result.sessions_kept) == (1, 2)
    assert set(ConversationSession.objects.values_list("id", flat=True)) == {approved.id, auto.id}


def test_retention_keeps_snapshots_that_remaining_rows_need(settings):
    settings.RETENTION_DAYS = 30
    shared = SnapshotFactory(content="# User\nshared\n")
    own = SnapshotFactory(content="# User\nonly the old audit\n")
    in_history = SnapshotFactory(content="# User\nin the file history\n")
    session = old_session()
    turn = TurnFactory(session=session)
    decision = MemoryGateDecision.objects.create(
        turn=turn, session=session, decision="UPDATE_USER", reason="r", candidate_fact="f", llm_model="m"
    )
    AuditFactory(decision=decision, before_snapshot=shared, after_snapshot=own, status="rolled_back")
    RollbackFactory(audit=decision.audits.get(), restored_snapshot=in_history, replaced_snapshot=own)
    FileVersion.objects.create(file_name="USER.md", seq=1, snapshot=in_history, kind="write")
    AuditFactory(before_snapshot=shared)  # a remaining audit in a recent session

    result = apply_retention()

    assert result.sessions_deleted == 1
    assert set(FileSnapshot.objects.values_list("id", flat=True)) == {shared.id, in_history.id}
    assert result.snapshots_deleted == 1


def test_retention_off_and_dry_run(settings):
    session = old_session()
    settings.RETENTION_DAYS = 0
    assert apply_retention().sessions_deleted == 0
    settings.RETENTION_DAYS = 30
    assert apply_retention(dry_run=True).deleted_ids == [session.id]
    assert ConversationSession.objects.filter(id=session.id).exists()
