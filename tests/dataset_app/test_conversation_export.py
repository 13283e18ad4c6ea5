"""The nightly conversation export (storage.jsonlExport) and the pruning of its files."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from dataset_app.exporters.conversations import export_conversations, prune_export_files
from dataset_app.exporters.files import export_dir
from sessions_app.models import ConversationTurn
from tests.dataset_app.factories import ContextFactory, TurnFactory, written_decision

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
