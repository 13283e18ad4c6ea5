"""Celery tasks of the dataset app; each takes ids or plain options and calls one domain function."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from dataset_app.errors import DatasetError
from reflection_site import cli

logger = logging.getLogger(__name__)

# Exports and evaluations can run for a long time; the global soft limit is sized for one LLM call.
LONG_JOB = {"soft_time_limit": 6 * 3600, "time_limit": 6 * 3600 + 300}


def _parse_time(value: Any) -> dt.datetime | None:
    """A task's time option, as the commands read one (``reflection_site.cli.parse_time``); None when empty."""
    if value in (None, ""):
        return None
    return cli.parse_time(value, tz=timezone.get_current_timezone(), now=timezone.now())


@shared_task
def run_auto_collect() -> dict[str, Any] | None:
    """The hourly collection (``datasetCollection.autoCollect``); applies auto-approve if DATASET_AUTO_APPROVE."""
    from dataset_app.collect import collect_samples

    if not (settings.DATASET_COLLECTION_ENABLED and settings.DATASET_AUTO_COLLECT):
        return None
    return collect_samples(auto_approve=settings.DATASET_AUTO_APPROVE).as_dict()


@shared_task
def run_collect(
    since: str | None = None,
    until: str | None = None,
    session: str | None = None,
    type: str = "all",  # noqa: A002 - the seed's option name
    auto_approve: bool = False,
) -> dict[str, Any]:
    """One collection on demand, with the CLI's and the API's options."""
    from dataset_app.collect import collect_samples

    return collect_samples(
        since=_parse_time(since),
        until=_parse_time(until),
        session_id=session,
        sample_type=type,
        auto_approve=auto_approve,
    ).as_dict()


@shared_task(throws=(DatasetError,), **LONG_JOB)
def run_export(export_id: str) -> str | None:
    """Write one export; a redelivered message finds it claimed or finished and does nothing."""
    from dataset_app.exports import run_export as write

    export = write(export_id)
    return export.id if export is not None else None


@shared_task
def run_export_sweep() -> int:
    """Re-enqueue exports a dead worker left pending or running."""
    from dataset_app.exports import sweep_stale_exports

    return sweep_stale_exports()


@shared_task
def run_conversation_export(day: str | None = None) -> str | None:
    """The nightly ``conversations-YYYY-MM-DD.jsonl`` (``storage.jsonlExport``), yesterday by default."""
    from dataset_app.exporters.conversations import export_conversations

    if not settings.JSONL_EXPORT_ENABLED:
        return None
    return str(export_conversations(dt.date.fromisoformat(day) if day else None).path)


@shared_task
def run_export_file_retention() -> int:
    """Delete conversation exports older than ``jsonlExport.retentionDays``."""
    from dataset_app.exporters.conversations import prune_export_files

    return len(prune_export_files())


@shared_task
def run_retention() -> dict[str, int]:
    """Delete sessions inactive for ``retentionDays`` (never one with an approved sample)."""
    from dataset_app.retention import apply_retention

    return apply_retention().as_dict()


@shared_task(throws=(DatasetError,), **LONG_JOB)
def run_evaluation(run_id: str, model: str | None = None, offline: bool | None = None) -> str:
    """Evaluate the gate or guardian for a run created by the API."""
    from dataset_app.evaluate import evaluate
    from dataset_app.models import EvaluationRun

    run = EvaluationRun.objects.get(id=run_id)
    evaluate(
        stage=run.stage,
        model=model or run.requested_model or None,
        split=run.split,
        train_split=run.train_split,
        offline=offline,
        created_by=run.created_by,
        run=run,
    )
    return run.id
