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


def _cron(name: str) -> str:
    c = PeriodicTask.objects.get(name=name).crontab
    return f"{c.minute} {c.hour} {c.day_of_month} {c.month_of_year} {c.day_of_week}"


def test_the_nightly_export_follows_its_setting_at_every_migrate(settings, caplog):
    settings.JSONL_EXPORT_SCHEDULE = "15 2 * * *"
    ensure_schedules()
    assert _cron("conversation-jsonl-export") == "15 2 * * *"

    settings.JSONL_EXPORT_SCHEDULE = "30 4 * * 1"
    assert ensure_schedules() == 0
    assert _cron("conversation-jsonl-export") == "30 4 * * 1"
    assert "runs at '30 4 * * 1'" in caplog.text


def test_a_schedule_edited_in_the_admin_is_left_alone_with_a_warning(settings, caplog):
    from django_celery_beat.models import CrontabSchedule

    ensure_schedules()
    row = PeriodicTask.objects.get(name="conversation-jsonl-export")
    row.crontab = CrontabSchedule.objects.create(minute="5", hour="6")  # an operator's edit
    row.save()

    settings.JSONL_EXPORT_SCHEDULE = "30 4 * * *"
    with caplog.at_level("WARNING", logger="reflection_site.celery"):
        ensure_schedules()

    assert _cron("conversation-jsonl-export") == "5 6 * * *"
    assert (
        "was edited in the admin" in caplog.text and "JSONL_EXPORT_SCHEDULE='30 4 * * *' is not applied" in caplog.text
    )


def test_a_row_from_before_the_setting_owned_it_follows_the_setting_if_untouched(settings):
    settings.JSONL_EXPORT_SCHEDULE = "0 0 * * *"
    ensure_schedules()
    PeriodicTask.objects.filter(name="conversation-jsonl-export").update(description="")

    settings.JSONL_EXPORT_SCHEDULE = "45 1 * * *"
    ensure_schedules()

    row = PeriodicTask.objects.get(name="conversation-jsonl-export")
    assert _cron(row.name) == "45 1 * * *" and row.description.endswith("last applied: 45 1 * * *")
