"""The Celery app, and the one place where each app's default beat entries become database rows."""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

from celery import Celery
from celery.signals import task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")

app = Celery("reflection")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


@task_prerun.connect
def _close_old_connections(task: Any = None, **kwargs: Any) -> None:
    """Before each task a worker runs, what Django does before each request: drop a connection that is broken (an
    error since its last use, or a failed health check on PostgreSQL) or older than CONN_MAX_AGE, and keep the
    rest (CELERY_DB_REUSE_MAX stops Celery's fix-up from closing every connection around every task). Not for a
    task run eagerly in the caller's process, which may be inside a transaction."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


SCHEDULE_MODULES = ("sessions_app.schedules", "guardian_app.schedules", "dataset_app.schedules")


def default_schedules() -> dict[str, tuple[str, str]]:
    """Every app's ``SCHEDULES``: name -> (task path, crontab "m h dom mon dow")."""
    entries: dict[str, tuple[str, str]] = {}
    for module_name in SCHEDULE_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        entries.update(module.SCHEDULES)
    return entries


def ensure_schedules(sender: Any = None, **kwargs: Any) -> int:
    """Create missing beat entries by name; code owns the task path, the operator owns timing and `enabled`.

    Connected to ``post_migrate``; rows are only ever added or have their task path updated, never
    deleted or re-timed, so an operator's edits in the admin survive every deploy.
    """
    if sender is not None and getattr(sender, "name", None) != "reflection_site":
        return 0
    from django.conf import settings
    from django_celery_beat.models import CrontabSchedule, PeriodicTask

    created = 0
    for name, (task, cron) in default_schedules().items():
        minute, hour, day_of_month, month_of_year, day_of_week = cron.split()
        crontab, _ = CrontabSchedule.objects.get_or_create(
            minute=minute,
            hour=hour,
            day_of_month=day_of_month,
            month_of_year=month_of_year,
            day_of_week=day_of_week,
            timezone=settings.CELERY_TIMEZONE,
        )
        _, was_created = PeriodicTask.objects.update_or_create(
            name=name, defaults={"task": task}, create_defaults={"task": task, "crontab": crontab, "enabled": True}
        )
        created += int(was_created)
    if created:
        logger.info("created %d default schedule(s)", created)
    return created
