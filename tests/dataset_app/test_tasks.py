"""Celery tasks and beat entries of the dataset app, called directly as the worker would."""

from __future__ import annotations

import pytest
from django_celery_beat.models import PeriodicTask

from dataset_app import tasks
from dataset_app.models import DatasetSample
from dataset_app.schedules import SCHEDULES
from reflection_site.celery import default_schedules, ensure_schedules
from tests.dataset_app.factories import written_decision

pytestmark = pytest.mark.django_db


def test_the_beat_entries_are_created_on_migrate():
    assert set(SCHEDULES) <= set(default_schedules())
    ensure_schedules()
    rows = {t.name: t for t in PeriodicTask.objects.filter(name__in=SCHEDULES)}
    assert set(rows) == set(SCHEDULES)
    collect = rows["dataset-auto-collect"]
    assert collect.task == "dataset_app.tasks.run_auto_collect"
    assert (collect.crontab.minute, collect.crontab.hour) == ("23", "*")
    nightly = rows["conversation-jsonl-export"].crontab
    assert (
        f"{nightly.minute} {nightly.hour} {nightly.day_of_month} {nightly.month_of_year} {nightly.day_of_week}"
        == "0 0 * * *"
    )
    for name, (task, _) in SCHEDULES.items():
        module, func = task.rsplit(".", 1)
        assert module == "dataset_app.tasks" and hasattr(tasks, func), name


def test_the_hourly_collection_follows_the_settings(settings):
    written_decision(days=10)
    settings.DATASET_AUTO_COLLECT = False
    assert tasks.run_auto_collect() is None
    assert DatasetSample.objects.count() == 0

    settings.DATASET_AUTO_COLLECT = True
    settings.DATASET_AUTO_APPROVE = True
    result = tasks.run_auto_collect()
    assert result["created"] == 2
    assert DatasetSample.objects.filter(annotation_status="auto_approved").exists()


def test_collect_on_demand_takes_iso_times():
    written_decision(days=10)
    assert tasks.run_collect(since="2000-01-01T00:00:00+00:00", type="positive")["created"] == 1


def test_the_nightly_export_can_be_switched_off(settings):
    settings.JSONL_EXPORT_ENABLED = False
    assert tasks.run_conversation_export() is None
    settings.JSONL_EXPORT_ENABLED = True
    assert tasks.run_conversation_export("2026-03-11").endswith("conversations-2026-03-11.jsonl")


def test_retention_tasks_report():
    assert tasks.run_retention()["sessions_deleted"] == 0
    assert tasks.run_export_file_retention() == 0
    assert tasks.run_export_sweep() == 0
