"""Reflect (seed 001): turn a period's facts into entity pages and opinions, as audited, resumable writes.

``execute_run(run)`` works in stages, each recorded in the run's checkpoint (``reflection_site.checkpoints``)
so that a run killed at any point finishes on its next start, with the same result:

0. **infer** (seed 001: "reflect can infer these bullets from the rest of the log"): each daily log of the
   period gets ``## Retain`` bullets (``W``/``B``/``O(c=…)``/``S`` with ``@entities``, relative days made
   absolute) inferred from its untyped lines (``guardian_app.recall.retain.infer_bullet``), added to its Retain section
   by one guarded write per log (``source_ref="<run id>:memory/<day>"``). A line whose bullet the log holds
   already, or that a rolled-back write added, is not inferred again (``guardian_app.reflect.infer``).
1. **collect**: bring the recall index up to date, read the period's facts (``guardian_app.reflect.facts``) and
   store them in the checkpoint; from here on the run works from that list.
2. **opinions**: apply each fact to the opinions (``guardian_app.reflect.opinions.record_fact``), one
   transaction per fact; a fact is counted once per opinion, so doing one again changes nothing.
3. **pages**: one item per page, in a fixed order (``guardian_app.reflect.plan``): each entity page with new
   facts, then ``bank/opinions.md``, then ``bank/world.md`` and ``bank/experience.md`` (the period's ``W`` and ``B``
   facts, merged with those on the page), then proposals for MEMORY.md. An entity page is summarised by the LLM
   when one is configured (every statement with its sources; statements it cannot source are dropped;
   ``guardian_app.reflect.summary``), else by the offline summariser, and written by
   ``guard_write(source="reflect", source_ref="<run id>:<page>")`` (``guardian_app.reflect.page_writes``):
   snapshot, diff, write-ahead audit, history, rollback, like any memory write. A page that would not
   change is not written. MEMORY.md proposals go through the write guardian like a gate's fact (it may
   refuse them), each proposed once.
4. **skills**: patterns recalled often enough become skill drafts for review (``guardian_app.reflect.skills``).

``--dry-run`` runs stages 0-3 in memory, with the offline summariser, and records what would change
(``guardian_app.reflect.dry_run``).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from guardian_app.errors import GuardianError
from guardian_app.models import Opinion, OpinionEvidence, ReflectRun
from guardian_app.recall.index import index_workspace
from guardian_app.recall.recall import InvalidRecallQuery, parse_time
from guardian_app.reflect.dry_run import execute_dry_run
from guardian_app.reflect.facts import Fact, collect_facts
from guardian_app.reflect.infer import infer_stage
from guardian_app.reflect.opinions import load_states, record_fact
from guardian_app.reflect.page_writes import OPINIONS_PAGE, process_item
from guardian_app.reflect.plan import existing_entity_pages, group_by_page, kind_items, known_pages, memory_proposals
from guardian_app.reflect.run_state import Progress, Status, finish, new_state, opinions_of_run
from guardian_app.reflect.skills import propose_drafts
from reflection_site import checkpoints
from reflection_site.celery import send
from reflection_site.models import JobCheckpoint

logger = logging.getLogger(__name__)

REFLECT_TASK = "guardian_app.tasks.run_reflect"  # Sent by name: guardian_app.tasks imports this module.

OPINION_BATCH = 50  # Facts applied to the opinions per transaction (and per checkpoint save).


class InvalidReflectRequest(GuardianError):
    code = "invalid_reflect_request"
    status = 422


# --- Starting a run ----------------------------------------------------------------------------------
def default_since(now: dt.datetime) -> dt.datetime:
    """Where the daily job starts: the end of the last finished run, else ``REFLECT_DEFAULT_SINCE`` ago."""
    last = (
        ReflectRun.objects.filter(status=Status.DONE, dry_run=False).order_by("-until").values_list("until", flat=True)
    ).first()
    if last is not None and last < now:
        return last
    return parse_time(settings.REFLECT_DEFAULT_SINCE, now=now) or now - dt.timedelta(days=7)


def start_run(
    *,
    since: str | dt.datetime | None = None,
    until: str | dt.datetime | None = None,
    dry_run: bool = False,
    requested_by: str = "system",
    now: dt.datetime | None = None,
) -> ReflectRun:
    """A queued run over ``since`` (30d, 12h, an ISO date; default: since the last run) to ``until`` (now)."""
    now = now or timezone.now()
    try:
        end = parse_time(until, now=now, end_of_day=True) if until else now
        start = parse_time(since, now=end) if since else default_since(end)
    except InvalidRecallQuery as exc:
        raise InvalidReflectRequest(exc.message, details=exc.details) from exc
    if start is None or end is None or start > end:
        raise InvalidReflectRequest("since must be before until.")
    return ReflectRun.objects.create(
        since=start, until=end, dry_run=dry_run, requested_by=(requested_by or "system")[:255], created_at=now
    )


def execute_run(run: ReflectRun, *, progress: Progress | None = None) -> ReflectRun:
    """Run (or resume) ``run`` to the end; see the module docstring. A finished run is returned as it is.

    Raises CheckpointBusy when another live process is running it, LeaseLost when another took it over;
    any other error leaves the checkpoint for the next start (the run shows the error) and is raised.
    """
    if run.dry_run:
        return execute_dry_run(run, progress=progress)
    checkpoint = checkpoints.claim(JobCheckpoint.Job.REFLECT, run.id, params={"run_id": run.id})
    if checkpoint.is_finished:
        run.refresh_from_db()
        return run
    ReflectRun.objects.filter(id=run.id).exclude(status=Status.DONE).update(
        status=Status.RUNNING, started_at=run.started_at or timezone.now(), error=""
    )
    try:
        return _run_stages(run, checkpoint, progress)
    except (checkpoints.LeaseLost, checkpoints.CheckpointBusy):
        raise
    except Exception as exc:
        checkpoints.release(checkpoint, error=repr(exc))
        ReflectRun.objects.filter(id=run.id).update(error=f"{type(exc).__name__}: {exc}"[:4000])
        raise


def _run_stages(run: ReflectRun, checkpoint: JobCheckpoint, progress: Progress | None) -> ReflectRun:
    if checkpoint.stage in ("", "collect"):
        _collect_stage(run, checkpoint)
    facts = [Fact.from_dict(d) for d in checkpoint.candidates]
    state = checkpoint.state
    if checkpoint.stage == "opinions":
        _opinions_stage(run, checkpoint, facts, state, progress)
    if checkpoint.stage == "pages":
        _pages_stage(run, checkpoint, facts, state, progress)
    if checkpoint.stage == "skills":
        ReflectRun.objects.filter(id=run.id).update(stage="skills")
        state["counts"]["skill_drafts"] = len(propose_drafts(run=run))
        checkpoints.save(checkpoint, stage="finishing", state=state)

    run = finish(run, state, len(facts))
    checkpoints.finish(checkpoint)
    logger.info(
        "reflect %s: %d fact(s), %d page(s) written, %d opinion(s) new, %d moved",
        run.id,
        run.facts_count,
        run.pages_written,
        run.opinions_created,
        run.opinions_updated,
    )
    return run


def _collect_stage(run: ReflectRun, checkpoint: JobCheckpoint) -> None:
    """Stages 0 and 1: infer the logs' Retain bullets, index, and store the period's facts in the checkpoint."""
    ReflectRun.objects.filter(id=run.id).update(stage="collect")
    inferred = infer_stage(run)  # before the index: the new bullets are this run's typed facts
    index_workspace()
    collected = collect_facts(run.since, run.until, known_pages=known_pages())
    state = new_state()
    state["excluded"] = collected.excluded[:200]
    state["retain"] = inferred
    checkpoints.save(
        checkpoint,
        stage="opinions",
        candidates=[f.as_dict() for f in collected.facts],
        processed_index=0,
        state=state,
    )


def _opinions_stage(
    run: ReflectRun, checkpoint: JobCheckpoint, facts: list[Fact], state: dict[str, Any], progress: Progress | None
) -> None:
    """Stage 2: apply the facts to the opinions, then plan the pages (the run's items)."""
    ReflectRun.objects.filter(id=run.id).update(stage="opinions")
    # Facts are applied in batches, one transaction and one checkpoint save each: a crash redoes at most
    # one batch, whose facts the evidence table has either all or none of.
    for start in range(checkpoint.processed_index, len(facts), OPINION_BATCH):
        batch = facts[start : start + OPINION_BATCH]
        # Facts already counted (an earlier run over the same days) change nothing: skip them in one query.
        counted = set(
            OpinionEvidence.objects.filter(fact_id__in=[f.id for f in batch]).values_list("fact_id", flat=True)
        )
        with transaction.atomic():
            for fact in batch:
                if fact.id not in counted:
                    record_fact(fact, run=run, now=run.until)
        checkpoints.save(checkpoint, processed_index=start + len(batch))
        if progress:
            progress(start + len(batch), len(facts), f"opinions: {batch[-1].source}")
    opinions_of_run(run, state)
    items = group_by_page(facts, existing_entity_pages())
    state["entities"] = len(items)
    if Opinion.objects.exists():
        items.append({"type": "opinions", "page": OPINIONS_PAGE})
    items += kind_items(facts)
    touched = set(state["touched"])
    items += memory_proposals([s for s in load_states() if s.id in touched])
    state["items"] = items
    checkpoints.save(checkpoint, stage="pages", processed_index=0, state=state)


def _pages_stage(
    run: ReflectRun, checkpoint: JobCheckpoint, facts: list[Fact], state: dict[str, Any], progress: Progress | None
) -> None:
    """Stage 3: write the run's items, one checkpoint save after each."""
    ReflectRun.objects.filter(id=run.id).update(stage="pages")
    facts_by_id = {f.id: f for f in facts}
    index = checkpoint.processed_index
    while index < len(state["items"]):  # An LLM's MEMORY.md proposals join the list as it goes.
        item = state["items"][index]
        process_item(run, item, facts_by_id, state)
        index += 1
        checkpoints.save(checkpoint, processed_index=index, state=state)
        if progress:
            progress(index, len(state["items"]), f"pages: {item.get('page') or item.get('fact', '')[:40]}")
    checkpoints.save(checkpoint, stage="skills", processed_index=0, state=state)


def reflect(
    *,
    since: str | dt.datetime | None = None,
    until: str | dt.datetime | None = None,
    dry_run: bool = False,
    requested_by: str = "system",
    progress: Progress | None = None,
) -> ReflectRun:
    """Start a run and execute it here (the CLI and the daily task)."""
    run = start_run(since=since, until=until, dry_run=dry_run, requested_by=requested_by)
    return execute_run(run, progress=progress)


def resume_checkpoint(checkpoint: JobCheckpoint) -> ReflectRun | None:
    """``checkpoints.resume_incomplete``'s entry: finish the run the checkpoint belongs to."""
    run = ReflectRun.objects.filter(id=checkpoint.key).first()
    if run is None:
        checkpoints.claim(checkpoint.job, checkpoint.key)  # An orphan: close it.
        checkpoints.finish(checkpoint)
        return None
    return execute_run(run)


def resume_interrupted(*, progress: Progress | None = None) -> list[ReflectRun]:
    """Finish every reflect run that was killed or failed halfway (the CLI does this before a new run)."""
    resumed = []
    for checkpoint in checkpoints.resumable(JobCheckpoint.Job.REFLECT):
        run = ReflectRun.objects.filter(id=checkpoint.key).first()
        if run is None:
            continue
        try:
            resumed.append(execute_run(run, progress=progress))
        except checkpoints.CheckpointBusy:
            continue
    return resumed


def sweep_queued_runs(*, grace_s: int | None = None) -> int:
    """Re-enqueue runs still queued ``REFLECT_SWEEP_GRACE_S`` after they were created (a dead broker)."""
    grace = settings.REFLECT_SWEEP_GRACE_S if grace_s is None else grace_s
    cutoff = timezone.now() - dt.timedelta(seconds=grace)
    started = JobCheckpoint.objects.filter(job=JobCheckpoint.Job.REFLECT).values("key")
    ids = list(
        ReflectRun.objects.filter(status=Status.QUEUED, created_at__lte=cutoff)
        .exclude(id__in=started)
        .order_by("created_at")
        .values_list("id", flat=True)[:100]
    )
    sent = 0
    for run_id in ids:
        try:
            send(REFLECT_TASK, run_id)
        except Exception as exc:  # noqa: BLE001 - a dead broker: the next sweep tries again.
            logger.warning("reflect sweep: could not enqueue %s: %s", run_id, exc)
            break
        sent += 1
    return sent


def mark_failed(run_id: str, error: str) -> None:
    ReflectRun.objects.filter(id=run_id).exclude(status=Status.DONE).update(
        status=Status.FAILED, error=error[:4000], finished_at=timezone.now()
    )
