"""A reflect run's record: the state its stages carry in the checkpoint (counts, moved opinions, pages), the
run's row when it finishes, and the run as JSON-ready data (the CLI's ``--json``, the admin)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.utils import timezone

from guardian_app.models import Opinion, OpinionEvidence, ReflectRun
from guardian_app.reflect.page_writes import run_audits

Status = ReflectRun.Status
Progress = Callable[[int, int, str], None]


def new_state() -> dict[str, Any]:
    return {
        "counts": {
            "opinions_created": 0,
            "opinions_updated": 0,
            "pages_written": 0,
            "pages_unchanged": 0,
            "pages_refused": 0,
            "memory_proposals": 0,
            "skill_drafts": 0,
            "llm_fallbacks": 0,
        },
        "touched": [],
        "moves": [],
        "pages": [],
        "items": [],
        "excluded": [],
        "entities": 0,
        "llm_model": "",
    }


def note_changes(state: dict[str, Any], changes: list[Any]) -> None:
    touched = set(state["touched"])
    for change in changes:
        if change.created:
            state["counts"]["opinions_created"] += 1
        elif change.state.id not in touched:
            state["counts"]["opinions_updated"] += 1
        touched.add(change.state.id)
        if len(state["moves"]) < 200:
            state["moves"].append(
                {
                    "opinion": change.state.id,
                    "entity": change.state.entity,
                    "statement": change.state.statement[:200],
                    "stance": change.stance,
                    "before": change.before,
                    "after": change.after,
                    "created": change.created,
                    "source": change.fact.source,
                }
            )
    state["touched"] = sorted(t for t in touched if t)


def opinions_of_run(run: ReflectRun, state: dict[str, Any]) -> None:
    """What the run did to the opinions, read from the evidence it recorded (so a resumed run counts the
    facts its killed predecessor applied too)."""
    rows = list(OpinionEvidence.objects.filter(run=run).select_related("opinion").order_by("created_at", "id")[:10_000])
    created = set(Opinion.objects.filter(created_by_run=run).values_list("id", flat=True))
    touched = {row.opinion_id for row in rows}
    state["touched"] = sorted(touched)
    state["counts"]["opinions_created"] = len(created)
    state["counts"]["opinions_updated"] = len(touched - created)
    state["moves"] = [
        {
            "opinion": row.opinion_id,
            "entity": row.opinion.entity,
            "statement": row.opinion.statement[:200],
            "stance": row.stance,
            "before": row.confidence_before,
            "after": row.confidence_after,
            "created": row.opinion_id in created and row.confidence_before == row.confidence_after,
            "source": row.source,
        }
        for row in rows[:200]
    ]


def finish(run: ReflectRun, state: dict[str, Any], facts: int) -> ReflectRun:
    counts = state["counts"]
    stats = {
        "pages": state["pages"],
        "moves": state["moves"],
        "excluded": state["excluded"],
        "llm_fallbacks": counts.get("llm_fallbacks", 0),
        "retain": state.get("retain", []),
    }
    if "preview" in state:
        stats["preview"] = state["preview"]
    fields = {
        "status": Status.DONE,
        "stage": "done",
        "finished_at": timezone.now(),
        "facts_count": facts,
        "entities_count": state["entities"],
        "pages_written": counts["pages_written"],
        "pages_unchanged": counts["pages_unchanged"],
        "pages_refused": counts["pages_refused"],
        "opinions_created": counts["opinions_created"],
        "opinions_updated": counts["opinions_updated"],
        "memory_proposals": counts["memory_proposals"],
        "skill_drafts": counts["skill_drafts"],
        "llm_model": state.get("llm_model") or "",
        "stats": stats,
        "error": "",
    }
    ReflectRun.objects.filter(id=run.id).update(**fields)
    for name, value in fields.items():
        setattr(run, name, value)
    return run


RUN_FIELDS = (
    "id",
    "status",
    "stage",
    "since",
    "until",
    "dry_run",
    "requested_by",
    "facts_count",
    "entities_count",
    "pages_written",
    "pages_unchanged",
    "pages_refused",
    "opinions_created",
    "opinions_updated",
    "memory_proposals",
    "skill_drafts",
    "llm_model",
    "error",
    "stats",
    "created_at",
    "started_at",
    "finished_at",
)


def run_as_dict(run: ReflectRun) -> dict[str, Any]:
    """The run as JSON-ready data (the CLI's ``--json``; the API's ReflectRunOut has the same fields)."""
    data: dict[str, Any] = {}
    for name in RUN_FIELDS:
        value = getattr(run, name)
        data[name] = value.isoformat() if isinstance(value, dt.datetime) else value
    data["audit_ids"] = [a.id for a in run_audits(run)]
    return data
