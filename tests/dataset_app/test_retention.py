"""The nightly conversation export, export-file retention, and the data retention policy."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from dataset_app.exporters import export_dir
from dataset_app.models import DatasetSample
from dataset_app.retention import apply_retention, export_conversations, prune_export_files
from guardian_app.models import FileSnapshot, FileVersion, WriteGuardianAudit
from sessions_app.models import ConversationSession, ConversationTurn, MemoryGateDecision
from tests.dataset_app.factories import (
    AuditFactory,
    ContextFactory,
    RollbackFactory,
    SampleFactory,
    SessionFactory,
    SnapshotFactory,
    TurnFactory,
    written_decision,
)

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 3, 11)


def at(day: dt.date, hour: int = 12) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour), tzinfo=timezone.get_default_timezone())


def test_the_nightly_export_writes_each_turn_of_the_day_with_its_context_decision_and_audits():
    decision = written_decision(days=0)
    turn = decision.turn
    ConversationTurn.objects.filter(id=turn.id).update(
        created_at=at(DAY, 9), feedback_json={"events": [], "last": "up"}
    )
    ContextFactory(turn=turn, role="agent", message="Good morning", sequence_number=0)
    TurnFactory(created_at=at(DAY - dt.timedelta(days=1), 23))  # the day before
    TurnFactory(created_at=at(DAY + dt.timedelta(days=1), 0))  # the day after

    result = export_conversations(DAY)

    assert result.path == export_dir() / "conversations-2026-03-11.jsonl"
    assert result.turns == 1
    (line,) = result.path.read_text().splitlines()
    record = json.loads(line)
    assert record["id"] == turn.id and record["session_id"] == turn.session_id
    assert record["user_message"]["content"] == "I prefer morning check-ins."
    assert record["context"][0]["message"] == "Good morning"
    assert record["decisions"][0]["decision"] == "UPDATE_USER"
    assert record["audits"][0]["status"] == "written"
    assert record["feedback"] == {"events": [], "last": "up"}


def test_a_rerun_replaces_the_file_and_leaves_no_partial_file():
    TurnFactory(created_at=at(DAY))
    export_conversations(DAY)
    TurnFactory(created_at=at(DAY, 13))

    result = export_conversations(DAY)

    assert result.turns == 2
    assert len(result.path.read_text().splitlines()) == 2
    assert not list(export_dir().glob("*.part"))


def test_the_default_day_is_yesterday():
    assert export_conversations().path.name == f"conversations-{timezone.localdate() - dt.timedelta(days=1)}.jsonl"


def test_export_files_older_than_the_retention_are_deleted(settings):
    settings.JSONL_EXPORT_RETENTION_DAYS = 30
    folder = export_dir()
    folder.mkdir(parents=True)
    today = dt.date(2026, 6, 30)
    old = folder / "conversations-2026-05-30.jsonl"
    kept = folder / "conversations-2026-05-31.jsonl"
    dataset = folder / "my-dataset-train.jsonl"
    for path in (old, kept, dataset):
        path.write_text("{}\n")

    deleted = prune_export_files(today=today)

    assert deleted == [old]
    assert not old.exists() and kept.exists() and dataset.exists()


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
