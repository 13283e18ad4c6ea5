"""Celery tasks of the write guardian; each takes ids and calls one domain function.

``run_guardian`` and ``run_guard_write`` go to the ``guardian`` queue (settings.CELERY_TASK_ROUTES) so that
writes to the workspace are serialised. A redelivered message is a no-op: the decision's audit (or the
``(source, source_ref)`` audit) is already there.
"""

from __future__ import annotations

import datetime as dt
import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from guardian_app.errors import FileBusy, GuardianError
from guardian_app.learning.decay import decay_learning
from guardian_app.models import ReflectRun
from guardian_app.recall.embeddings import prune_embedding_cache
from guardian_app.recall.index import (
    clear_index_pending,
    clear_transcript_index_pending,
    index_new_turns,
    index_workspace,
)
from guardian_app.reflect.projection import daily_projection_is_on, project
from guardian_app.reflect.reflect import execute_run, mark_failed, resume_interrupted, start_run, sweep_queued_runs
from guardian_app.reflect.reports import deliver, mark_delivery_failed, queue_delivery
from guardian_app.reflect.webhook import WebhookError
from guardian_app.write.consolidation import consolidate
from guardian_app.write.guardian import guard_write, write_fact
from guardian_app.write.history import check_drift
from guardian_app.write.recovery import record_failure, sweep_pending_decisions
from guardian_app.write.workspace import unsafe_files
from reflection_site.checkpoints import CheckpointBusy, LeaseLost, resume_incomplete
from reflection_site.llm import TRANSIENT_ERRORS
from sessions_app.queries import decision_with_its_turn

# What the guardian tasks retry: a slow or unparseable LLM, and a file whose lock stayed busy.
GUARDIAN_RETRY_ERRORS: tuple[type[Exception], ...] = (*TRANSIENT_ERRORS, FileBusy)

logger = logging.getLogger(__name__)


def _guardian_failed(self, exc, task_id, args, kwargs, einfo) -> None:  # noqa: ANN001
    """Retries spent: record a failed audit so the decision stays visible and the sweep leaves it alone."""
    if isinstance(exc, GuardianError) and not isinstance(exc, FileBusy):
        return
    try:
        record_failure(decision_id=args[0] if args else kwargs.get("decision_id"), error=repr(exc))
    except Exception:  # noqa: BLE001 - a failure handler must not raise.
        logger.exception("could not record the guardian failure of %s", args)


def _guard_write_failed(self, exc, task_id, args, kwargs, einfo) -> None:  # noqa: ANN001
    if isinstance(exc, GuardianError) and not isinstance(exc, FileBusy):
        return
    names = ("target_file", "candidate_fact", "source", "source_ref")
    values = {**dict(zip(names, args, strict=False)), **kwargs}
    try:
        record_failure(
            target_file=values.get("target_file"),
            candidate_fact=values.get("candidate_fact"),
            source=values.get("source", "reflect"),
            source_ref=values.get("source_ref", ""),
            error=repr(exc),
        )
    except Exception:  # noqa: BLE001 - a failure handler must not raise.
        logger.exception("could not record the guarded-write failure of %s", args)


@shared_task(
    autoretry_for=GUARDIAN_RETRY_ERRORS,
    retry_backoff=5,
    retry_backoff_max=600,
    max_retries=5,
    on_failure=_guardian_failed,
    throws=(GuardianError,),
)
def run_guardian(decision_id: str) -> str | None:
    """Fold one UPDATE_* gate decision into its memory file; a redelivered message finds its audit."""
    decision = decision_with_its_turn(decision_id)
    if decision is None:
        logger.warning("guardian: decision %s no longer exists", decision_id)
        return None
    return write_fact(decision).id


@shared_task(
    autoretry_for=GUARDIAN_RETRY_ERRORS,
    retry_backoff=5,
    retry_backoff_max=600,
    max_retries=5,
    on_failure=_guard_write_failed,
    throws=(GuardianError,),
)
def run_guard_write(target_file: str, candidate_fact: str, source: str, source_ref: str) -> str:
    """A guarded write from learning or reflect; idempotent per ``(source, source_ref)``."""
    return guard_write(target_file=target_file, candidate_fact=candidate_fact, source=source, source_ref=source_ref).id


@shared_task
def run_guardian_sweep() -> int:
    """Re-enqueue UPDATE_* decisions that have no audit after the grace period."""
    return sweep_pending_decisions()


@shared_task
def run_drift_check() -> int:
    """Snapshot memory files changed by hand since their last known version; reconcile interrupted writes."""
    versions = check_drift()
    for name, found in unsafe_files().items():
        logger.error("drift check: %s is %s; it is neither read nor written until it is replaced", name, found)
    return len(versions)


@shared_task
def run_learning_decay() -> dict:
    """Daily: decay learned memory items and rules, expire and archive stale ones, enforce the caps."""
    return decay_learning().summary()


# --- Recall index (issue 10) ---
@shared_task
def run_memory_index(file_name: str | None = None, rebuild: bool = False) -> str:
    """Re-index the workspace's Markdown (only ``file_name`` when given); unchanged files are skipped."""
    clear_index_pending(file_name)  # Before the files are read: a write from now on asks for another run.
    return index_workspace(rebuild=rebuild, paths=[file_name] if file_name else None).summary()


@shared_task
def run_embedding_cache_prune() -> int:
    """Keep embedding_cache to EMBEDDING_CACHE_MAX_ENTRIES rows, least recently used out (seed 003)."""
    return prune_embedding_cache()


# --- Reflect (seeds 001, 004) ---
def _reflect_failed(self, exc, task_id, args, kwargs, einfo) -> None:  # noqa: ANN001
    """Retries spent: the run shows the error; its checkpoint stays for the next resume or CLI run."""
    try:
        mark_failed(args[0] if args else kwargs.get("run_id", ""), repr(exc))
    except Exception:  # noqa: BLE001 - a failure handler must not raise.
        logger.exception("could not record the reflect failure of %s", args)


@shared_task(
    autoretry_for=GUARDIAN_RETRY_ERRORS,
    retry_backoff=30,
    retry_backoff_max=600,
    max_retries=5,
    on_failure=_reflect_failed,
)
def run_reflect(run_id: str) -> str | None:
    """Run (or resume) one reflect run; a redelivered message finds it finished or held by its worker."""
    run = ReflectRun.objects.filter(id=run_id).first()
    if run is None:
        logger.warning("reflect: run %s no longer exists", run_id)
        return None
    try:
        return execute_run(run).status
    except (CheckpointBusy, LeaseLost) as exc:
        logger.info("reflect %s: %s", run_id, exc)
        return None


@shared_task
def run_daily_reflect() -> str:
    """Daily: reflect on the facts since the last run (first resuming any run a crash interrupted)."""
    resume_interrupted()
    run = start_run(requested_by="schedule")
    return execute_run(run).id


@shared_task
def run_consolidation() -> list[dict] | None:
    """At CONSOLIDATION_SCHEDULE: each memory file's repeated and superseded lines removed, one audited write each
    (guardian_app.write.consolidation); nothing while CONSOLIDATION_ENABLED is off (the default, as the seed's)."""
    if not settings.CONSOLIDATION_ENABLED:
        return None
    return [result.as_dict() for result in consolidate()]


@shared_task
def run_daily_projection() -> str:
    """Daily: the category views and today's summary under PROJECTION_DIR, if PROJECTION_ENABLED and
    PROJECTION_DAILY_TRIGGER (seed 004's qmdProjection.enabled, off by default, and dailyTrigger)."""
    if not daily_projection_is_on():
        return "projection is off (PROJECTION_ENABLED / PROJECTION_DAILY_TRIGGER)"
    return project().summary()


@shared_task
def run_daily_report(day: str | None = None) -> str:
    """Daily: yesterday's change report, posted to REPORT_WEBHOOK_URL (by run_report_webhook) when pivotal."""
    date = dt.date.fromisoformat(day) if day else timezone.localdate() - dt.timedelta(days=1)
    delivery = queue_delivery(date)
    return f"report {date}: {'queued for the webhook' if delivery else 'nothing to post'}"


def _webhook_failed(self, exc, task_id, args, kwargs, einfo) -> None:  # noqa: ANN001
    try:
        mark_delivery_failed(dt.date.fromisoformat(args[0] if args else kwargs["day"]), repr(exc))
    except Exception:  # noqa: BLE001 - a failure handler must not raise.
        logger.exception("could not record the webhook failure of %s", args)


@shared_task(
    autoretry_for=(WebhookError,),
    retry_backoff=settings.REPORT_WEBHOOK_RETRY_BACKOFF_S,
    retry_backoff_max=3600,
    max_retries=settings.REPORT_WEBHOOK_MAX_RETRIES,
    on_failure=_webhook_failed,
)
def run_report_webhook(day: str) -> str:
    """Post one day's report to REPORT_WEBHOOK_URL; a failure is retried with backoff, then recorded."""
    return deliver(dt.date.fromisoformat(day)).status


@shared_task
def run_resume_jobs() -> dict:
    """Finish jobs whose process died (reflect runs, transcript imports) and re-enqueue runs left queued."""
    return {"resumed": resume_incomplete(), "requeued": sweep_queued_runs()}


def resume_jobs_at_worker_start(sender: object = None, **kwargs: object) -> None:
    """A worker that starts (after a crash, a deploy) resumes the jobs a dead process left halfway."""
    try:
        run_resume_jobs.delay()
    except Exception as exc:  # noqa: BLE001 - the resume sweep of the beat catches up.
        logger.warning("could not enqueue the resume of interrupted jobs: %s", exc)


@shared_task
def run_transcript_index() -> str:
    """Index the conversation turns stored since the last run (asked for after the gate's decisions)."""
    clear_transcript_index_pending()
    return index_new_turns().summary()
