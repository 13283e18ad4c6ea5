"""Writes that did not happen: a ``failed`` audit once a task's retries are spent, and the sweep that
re-enqueues gate decisions left without an audit and finishes writes a dead worker left half-done."""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from guardian_app.models import WorkspaceFile, WriteGuardianAudit
from guardian_app.write import history, paths
from guardian_app.write.guardian import find_existing, new_audit
from reflection_site import memory_files
from reflection_site.celery import send
from sessions_app.models import Decision, MemoryGateDecision

logger = logging.getLogger(__name__)

Status = WriteGuardianAudit.Status


def record_failure(
    *,
    decision_id: str | None = None,
    target_file: str | None = None,
    candidate_fact: str | None = None,
    source: str = "gate",
    source_ref: str = "",
    error: str,
) -> WriteGuardianAudit | None:
    """A task whose retries are spent: record a ``failed`` audit (once) so the write stays visible."""
    decision = MemoryGateDecision.objects.filter(id=decision_id).first() if decision_id else None
    if decision is not None:
        target_file = memory_files.active().file_for_decision.get(decision.decision)
        candidate_fact = decision.candidate_fact
    if target_file is None:
        return None
    name = paths.canonical_name(target_file)
    lookup = {"decision": decision, "source": source, "source_ref": source_ref, "retry_of": None}
    existing = find_existing(**lookup)
    if existing is not None:
        return existing
    audit = new_audit(
        name,
        candidate_fact or "",
        decision=decision,
        source=source,
        source_ref=source_ref,
        retry_of=None,
        requested_by="system",
    )
    audit.status, audit.reason = Status.FAILED, f"the guardian gave up after its retries: {error}"[:2000]
    try:
        with transaction.atomic():
            audit.save(force_insert=True)
    except IntegrityError:
        return find_existing(**lookup)
    return audit


def sweep_pending_decisions(*, grace_s: int | None = None, limit: int = 1000) -> int:
    """Re-enqueue ``UPDATE_*`` decisions that have no audit ``grace_s`` seconds after they were made, and
    finish writes interrupted that long ago (a write-ahead audit whose worker died) without waiting for
    the drift check. Returns the number of decisions re-enqueued."""
    grace = settings.GUARDIAN_SWEEP_GRACE_S if grace_s is None else grace_s
    cutoff = timezone.now() - dt.timedelta(seconds=grace)
    interrupted = list(
        WorkspaceFile.objects.filter(pending_audit__isnull=False, pending_audit__created_at__lte=cutoff).values_list(
            "file_name", flat=True
        )
    )
    if interrupted:
        history.check_drift(interrupted)
    audited = WriteGuardianAudit.objects.filter(decision=OuterRef("pk"), retry_of__isnull=True)
    ids = list(
        MemoryGateDecision.objects.exclude(decision=Decision.NO_WRITE)
        .filter(created_at__lte=cutoff)
        .filter(~Exists(audited))
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    sent = 0
    for decision_id in ids:
        try:
            send("guardian_app.tasks.run_guardian", decision_id)
        except Exception as exc:  # noqa: BLE001 - a dead broker: the next sweep tries again.
            logger.warning("guardian sweep: could not enqueue %s: %s", decision_id, exc)
            break
        sent += 1
    if sent:
        logger.info("guardian sweep: re-enqueued %d decision(s)", sent)
    return sent
