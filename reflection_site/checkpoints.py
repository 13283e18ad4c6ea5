"""Resumable jobs (seed 004 P2-002): a checkpoint per job in the database, taken over when its holder died.

A long job (reflect, the OpenClaw transcript import) keeps a ``JobCheckpoint``: its ``stage``, the
``candidates`` it is working through and the ``processed_index`` of the next one. The loop is always:

    checkpoint = claim(job, key, params=…)          # new, or the one a killed run left behind
    for i in range(checkpoint.processed_index, len(candidates)):
        do(candidates[i])                            # idempotent: a unique constraint or a (source, source_ref)
        save(checkpoint, processed_index=i + 1)      # renews the lease
    finish(checkpoint)

Killed between ``do`` and ``save``, the next run does item ``i`` again and the item's own idempotency makes
that a no-op: nothing is written twice and nothing is skipped.

Who may work on a checkpoint: the process that holds it (``owner`` = host:pid:token, renewed at every
``save`` until ``lease_until``). Another process takes it over when the lease has expired, or at once when
the owner ran on this machine and its process is gone (a SIGKILLed worker, an OOM kill). A process that
lost its checkpoint to another gets ``LeaseLost`` at its next save and stops.

``resume_incomplete()`` resumes every unfinished checkpoint whose holder is gone; the worker calls it when
it starts (``worker_ready``, see ``guardian_app.tasks``) and a beat entry calls it every few minutes.
"""

from __future__ import annotations

import datetime as dt
import importlib
import logging
import os
import socket
import uuid
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from reflection_site.errors import ReflectionError
from reflection_site.models import JobCheckpoint

logger = logging.getLogger(__name__)

Job = JobCheckpoint.Job

# job -> "module.function(checkpoint)" that finishes an interrupted run of it.
RESUMERS: dict[str, str] = {
    Job.REFLECT: "guardian_app.reflect.reflect.resume_checkpoint",
    Job.OPENCLAW_IMPORT: "sessions_app.openclaw_import.resume_checkpoint",
}

_TOKEN = uuid.uuid4().hex[:8]


class CheckpointBusy(ReflectionError):
    """Another live process is working on this job."""

    code = "job_busy"
    status = HTTPStatus.CONFLICT


class LeaseLost(ReflectionError):
    """This process's checkpoint was taken over by another (its lease had expired)."""

    code = "lease_lost"
    status = HTTPStatus.CONFLICT


def owner_id() -> str:
    """``host:pid:token`` of this process (the token tells a reused pid from the old process)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_TOKEN}"


def _lease_until() -> dt.datetime:
    return timezone.now() + dt.timedelta(seconds=float(settings.CHECKPOINT_LEASE_S))


def owner_is_gone(owner: str) -> bool:
    """True when ``owner`` ran on this machine and its process no longer exists (or is not the same one)."""
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    if not owner or host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return token != _TOKEN
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # Someone else's live process: not ours to judge.
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """A killed child not yet reaped by its parent still answers kill(pid, 0)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def is_free(checkpoint: JobCheckpoint, *, now: dt.datetime | None = None) -> bool:
    """Whether this process may take the checkpoint: nobody holds it, the lease expired, or the holder died."""
    now = now or timezone.now()
    if not checkpoint.owner or checkpoint.owner == owner_id():
        return True
    if checkpoint.lease_until is None or checkpoint.lease_until <= now:
        return True
    return owner_is_gone(checkpoint.owner)


def claim(job: str, key: str, *, params: dict[str, Any] | None = None, restart: bool = False) -> JobCheckpoint:
    """The checkpoint of ``(job, key)``, held by this process: created, or taken over when free.

    A finished checkpoint is returned as it is (``is_finished``) unless ``restart``, which starts it over.
    Raises CheckpointBusy when a live process holds it.
    """
    now = timezone.now()
    try:
        with transaction.atomic():
            checkpoint, created = JobCheckpoint.objects.get_or_create(
                job=job,
                key=key,
                defaults={
                    "params": params or {},
                    "owner": owner_id(),
                    "lease_until": _lease_until(),
                    "attempts": 1,
                    "updated_at": now,
                },
            )
    except IntegrityError:  # Created by another process between our lookup and insert.
        checkpoint, created = JobCheckpoint.objects.get(job=job, key=key), False
    if created:
        return checkpoint
    if checkpoint.is_finished and not restart:
        return checkpoint
    if not is_free(checkpoint, now=now):
        raise CheckpointBusy(
            f"{job} {key} is being worked on by {checkpoint.owner} (lease until {checkpoint.lease_until:%H:%M:%S})."
        )
    fields: dict[str, Any] = {"owner": owner_id(), "lease_until": _lease_until(), "updated_at": now}
    started_over = restart and checkpoint.is_finished
    if started_over:  # a new run of a finished job: its first attempt, not a resume
        fields.update(stage="", candidates=[], processed_index=0, state={}, finished_at=None, params=params or {})
    # The claim is a conditional UPDATE on what we read: of two processes taking over, one wins.
    taken = JobCheckpoint.objects.filter(
        id=checkpoint.id, owner=checkpoint.owner, updated_at=checkpoint.updated_at
    ).update(attempts=1 if started_over else checkpoint.attempts + 1, **fields)
    if not taken:
        raise CheckpointBusy(f"{job} {key} was just taken over by another process.")
    checkpoint.refresh_from_db()
    if checkpoint.attempts > 1:
        logger.info(
            "resuming %s %s at %s[%d] (attempt %d)",
            job,
            key,
            checkpoint.stage or "start",
            checkpoint.processed_index,
            checkpoint.attempts,
        )
    return checkpoint


def save(
    checkpoint: JobCheckpoint,
    *,
    stage: str | None = None,
    candidates: list[Any] | None = None,
    processed_index: int | None = None,
    state: dict[str, Any] | None = None,
) -> JobCheckpoint:
    """Record progress (and renew the lease). Raises LeaseLost when another process holds the checkpoint now."""
    fields: dict[str, Any] = {"lease_until": _lease_until(), "updated_at": timezone.now()}
    if stage is not None:
        fields["stage"] = stage
    if candidates is not None:
        fields["candidates"] = candidates
    if processed_index is not None:
        fields["processed_index"] = processed_index
    if state is not None:
        fields["state"] = state
    if not JobCheckpoint.objects.filter(id=checkpoint.id, owner=owner_id(), finished_at__isnull=True).update(**fields):
        raise LeaseLost(f"{checkpoint.job} {checkpoint.key} is no longer held by this process.")
    for name, value in fields.items():
        setattr(checkpoint, name, value)
    return checkpoint


def finish(checkpoint: JobCheckpoint, *, state: dict[str, Any] | None = None) -> None:
    """The job is done: the checkpoint is kept (finished) as a record, and released."""
    now = timezone.now()
    fields: dict[str, Any] = {"finished_at": now, "updated_at": now, "owner": "", "lease_until": None, "stage": "done"}
    if state is not None:
        fields["state"] = state
    JobCheckpoint.objects.filter(id=checkpoint.id, owner=owner_id()).update(**fields)
    for name, value in fields.items():
        setattr(checkpoint, name, value)


def release(checkpoint: JobCheckpoint, *, error: str = "") -> None:
    """Stop holding an unfinished checkpoint (after an error): the next run or resume takes it at once."""
    JobCheckpoint.objects.filter(id=checkpoint.id, owner=owner_id()).update(
        owner="", lease_until=None, last_error=error[:4000], updated_at=timezone.now()
    )


def incomplete(job: str | None = None) -> list[JobCheckpoint]:
    """Unfinished checkpoints, oldest first."""
    rows = JobCheckpoint.objects.filter(finished_at__isnull=True)
    if job is not None:
        rows = rows.filter(job=job)
    return list(rows.order_by("created_at", "id"))


def resumable(job: str | None = None) -> list[JobCheckpoint]:
    """Unfinished checkpoints nobody alive holds, below ``CHECKPOINT_MAX_ATTEMPTS``."""
    now = timezone.now()
    return [
        cp
        for cp in incomplete(job)
        if cp.attempts < settings.CHECKPOINT_MAX_ATTEMPTS and is_free(cp, now=now) and cp.owner != owner_id()
    ]


def resume_incomplete(job: str | None = None) -> list[str]:
    """Finish every interrupted job nobody holds (worker start, the resume sweep, the CLI). Returns their keys.

    A job that fails again is logged and left for the next resume (its attempts count up to
    ``CHECKPOINT_MAX_ATTEMPTS``); it never stops the others.
    """
    done: list[str] = []
    for checkpoint in resumable(job):
        path = RESUMERS.get(checkpoint.job)
        if path is None:
            continue
        module_name, _, function_name = path.rpartition(".")
        try:
            resume = getattr(importlib.import_module(module_name), function_name)
            resume(checkpoint)
        except CheckpointBusy:
            continue
        except Exception as exc:  # noqa: BLE001 - one broken job must not stop the others.
            logger.exception("could not resume %s %s", checkpoint.job, checkpoint.key)
            JobCheckpoint.objects.filter(id=checkpoint.id).filter(Q(owner="") | Q(owner=owner_id())).update(
                owner="", lease_until=None, last_error=repr(exc)[:4000]
            )
            continue
        done.append(checkpoint.key)
    return done
