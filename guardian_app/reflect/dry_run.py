"""Reflect's ``--dry-run``: what a run would change, computed in memory with the offline summariser (stages 0-3
read, nothing written), recorded on the run as previews with their diffs."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import timezone

from guardian_app.models import ReflectRun
from guardian_app.recall.index import index_workspace
from guardian_app.reflect.facts import Fact, collect_facts
from guardian_app.reflect.infer import infer_stage
from guardian_app.reflect.opinions import OpinionState, apply_fact, load_states
from guardian_app.reflect.page_writes import MEMORY_FILE, OPINIONS_PAGE, rolled_back_facts
from guardian_app.reflect.pages import (
    PageFact,
    compose_entity_page,
    compose_kind_page,
    compose_opinions_page,
    kind_page_fact,
)
from guardian_app.reflect.plan import (
    existing_entity_pages,
    group_by_page,
    kind_items,
    known_pages,
    memory_proposals,
    opinion_views,
)
from guardian_app.reflect.run_state import Progress, Status, finish, new_state, note_changes
from guardian_app.reflect.skills import find_candidates
from guardian_app.write import workspace
from guardian_app.write.diffs import diff_stats, unified_diff

Planned = tuple[dict[str, Any], str | None, str]  # (item, the page as it is, the page as the run would write it)


def execute_dry_run(run: ReflectRun, *, progress: Progress | None = None) -> ReflectRun:
    """What a run would change, computed in memory with the offline summariser; nothing is written."""
    ReflectRun.objects.filter(id=run.id).update(status=Status.RUNNING, started_at=timezone.now(), stage="collect")
    inferred = infer_stage(run, write=False)
    index_workspace()
    collected = collect_facts(run.since, run.until, known_pages=known_pages())
    facts = collected.facts
    state = new_state()
    state["retain"] = inferred
    state["excluded"] = collected.excluded[:200]
    states = load_states()
    moved: dict[int, OpinionState] = {}
    for index, fact in enumerate(facts):
        changes = apply_fact(states, fact, now=run.until)
        note_changes(state, changes)
        moved.update((id(change.state), change.state) for change in changes)
        if progress:
            progress(index + 1, len(facts), f"opinions: {fact.source}")
    items = group_by_page(facts, existing_entity_pages())
    state["entities"] = len(items)
    planned = _planned_pages(run, facts, items, states)
    previews = [_preview(item, current, new, state) for item, current, new in planned]
    for proposal in memory_proposals(list(moved.values())):
        previews.append({"type": "memory", "page": MEMORY_FILE, "status": "would_propose", "fact": proposal["fact"]})
        state["counts"]["memory_proposals"] += 1
    state["pages"] = previews
    state["counts"]["skill_drafts"] = len(find_candidates())
    return finish(run, state, len(facts))


def _planned_pages(
    run: ReflectRun, facts: list[Fact], items: list[dict[str, Any]], states: list[OpinionState]
) -> list[Planned]:
    """Each page the run would write: the entity pages, ``bank/opinions.md``, the kind pages."""
    updated = timezone.localtime(run.until).date()
    facts_by_id = {f.id: f for f in facts}
    planned: list[Planned] = []
    for item in items:
        current = workspace.read_file(item["page"])
        rejected = rolled_back_facts(item["page"])
        new = compose_entity_page(
            current,
            entity=item["entity"],
            new_facts=[facts_by_id[i] for i in item["facts"] if PageFact.of(facts_by_id[i]).key not in rejected],
            summary=None,
            opinions=opinion_views(states, entity=item["entity"]),
            updated=updated,
            limit=settings.REFLECT_PAGE_MAX_FACTS,
        )
        planned.append((item, current, new))
    if states:
        current = workspace.read_file(OPINIONS_PAGE)
        new = compose_opinions_page(current, opinion_views(states), updated=updated)
        planned.append(({"type": "opinions", "page": OPINIONS_PAGE}, current, new))
    for item in kind_items(facts):
        current = workspace.read_file(item["page"])
        rejected = rolled_back_facts(item["page"])
        chosen = [facts_by_id[i] for i in item["facts"] if kind_page_fact(facts_by_id[i]).key not in rejected]
        if not chosen:
            continue
        new = compose_kind_page(
            current, kind=item["kind"], new_facts=chosen, updated=updated, limit=settings.REFLECT_PAGE_MAX_FACTS
        )
        planned.append((item, current, new))
    return planned


def _preview(item: dict[str, Any], current: str | None, new: str, state: dict[str, Any]) -> dict[str, Any]:
    """A planned page as the run records it (its diff), counted as written or unchanged."""
    stats = diff_stats(current, new)
    changed = new != current
    state["counts"]["pages_written" if changed else "pages_unchanged"] += 1
    return {
        "type": item["type"],
        "page": item["page"],
        "status": "would_write" if changed else "unchanged",
        "lines_added": stats.added,
        "lines_removed": stats.removed + stats.modified,
        "diff": unified_diff(current, new, item["page"])[:20000] if changed else "",
    }
