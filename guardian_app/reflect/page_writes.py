"""Reflect's writes (stage 3, "pages"): each item of the run's plan, an entity page, ``bank/opinions.md``, a kind
page or a MEMORY.md proposal, through the write guardian with ``source_ref="<run id>:<page>"``, so that a resumed
run finds the audit of a write it made before a crash instead of writing again."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils import timezone

from guardian_app.models import ReflectRun, WriteGuardianAudit
from guardian_app.recall.retain import entity_key
from guardian_app.reflect.facts import Fact
from guardian_app.reflect.opinions import load_states
from guardian_app.reflect.pages import (
    PageFact,
    Statement,
    added_fact_keys,
    block_length,
    compose_entity_page,
    compose_kind_page,
    compose_opinions_page,
    kind_page_fact,
    page_edits,
)
from guardian_app.reflect.plan import opinion_views
from guardian_app.reflect.summary import summarise_with_llm
from guardian_app.write import history, locks, workspace
from guardian_app.write.guardian import guard_write
from reflection_site import llm

logger = logging.getLogger(__name__)

OFFLINE_MODEL = "reflect-offline-v1"
OPINIONS_PAGE = "bank/opinions.md"
MEMORY_FILE = "MEMORY.md"


def source_ref(run_id: str, page: str) -> str:
    """``<run id>:<page>`` (64 characters at most: a long page name becomes a hash of it)."""
    short = page.removeprefix("bank/").removesuffix(".md")
    ref = f"{run_id}:{short}"
    if len(ref) <= 64:
        return ref
    return f"{run_id}:h:{hashlib.sha256(page.encode()).hexdigest()[:32]}"


def existing_audit(ref: str) -> WriteGuardianAudit | None:
    """The audit of this write if a run (this one, before a crash) made it; an interrupted one is finished first."""
    audit = WriteGuardianAudit.objects.filter(
        source=WriteGuardianAudit.Source.REFLECT, source_ref=ref, decision__isnull=True, retry_of__isnull=True
    ).first()
    if audit is not None and audit.status == WriteGuardianAudit.Status.FAILED and audit.reason == history.INTERRUPTED:
        # Killed between the write-ahead audit and its record: reconciling finishes (or closes) it.
        with locks.file_lock(audit.target_file):
            history.reconcile(audit.target_file)
        audit.refresh_from_db()
    return audit


def describe(run: ReflectRun, page: str, facts: list[Fact]) -> str:
    """The audit's candidate fact for a page write: the run, the page and the new facts (one a line)."""
    head = f"Reflect {run.id}, page {page}: {len(facts)} fact(s) from {run.since:%Y-%m-%d} to {run.until:%Y-%m-%d}"
    lines = [head] + [f"- {f.content}" for f in facts]
    return clip_fact("\n".join(lines))


def clip_fact(text: str) -> str:
    """An audit's candidate fact cut to fit ``GUARDIAN_MAX_FACT_CHARS`` (with room to spare)."""
    limit = max(200, settings.GUARDIAN_MAX_FACT_CHARS - 100)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _page_outcome(state: dict[str, Any], item: dict[str, Any], audit: WriteGuardianAudit | None, status: str) -> None:
    counts = state["counts"]
    record = {"type": item["type"], "page": item.get("page", MEMORY_FILE), "status": status}
    if audit is not None:
        record.update(
            audit_id=audit.id,
            status=audit.status,
            reason=(audit.reason or "")[:300],
            lines_added=audit.lines_added or 0,
            lines_removed=(audit.lines_removed or 0) + (audit.lines_modified or 0),
        )
        status = audit.status
    if item["type"] == "memory":
        record["fact"] = item["fact"][:300]
        counts["memory_proposals"] += 1
    elif status in ("written", "rolled_back"):
        counts["pages_written"] += 1
    elif status == "unchanged":
        counts["pages_unchanged"] += 1
    else:
        counts["pages_refused"] += 1
    state["pages"].append(record)


def _page_ref(run: ReflectRun, item: dict[str, Any], state: dict[str, Any]) -> str | None:
    """The page write's ``source_ref``; None when this run (before a crash) wrote the page already, whose
    outcome is then recorded."""
    ref = source_ref(run.id, item["page"])
    existing = existing_audit(ref)
    if existing is not None:
        _page_outcome(state, item, existing, existing.status)
        return None
    return ref


def rolled_back_facts(page: str) -> set[str]:
    """Facts that reflect added to ``page`` in writes a person rolled back: they are not added again."""
    diffs = WriteGuardianAudit.objects.filter(
        source=WriteGuardianAudit.Source.REFLECT, target_file=page, status=WriteGuardianAudit.Status.ROLLED_BACK
    ).values_list("diff", flat=True)
    keys: set[str] = set()
    for diff in diffs:
        keys |= added_fact_keys(diff)
    return keys


def _write_entity_page(run: ReflectRun, item: dict[str, Any], facts: list[Fact], state: dict[str, Any]) -> None:
    page, entity = item["page"], item["entity"]
    ref = _page_ref(run, item, state)
    if ref is None:
        return
    rejected = rolled_back_facts(page)
    if rejected:
        facts = [f for f in facts if PageFact.of(f).key not in rejected]
        if not facts:
            _page_outcome(state, item, None, "unchanged")
            return
    current = workspace.read_file(page)
    summary: list[Statement] | None = None
    model = OFFLINE_MODEL
    if llm.is_configured():
        try:
            summary, proposals, model = summarise_with_llm(entity, current, facts)
            state["llm_model"] = model
            pending = {i.get("fact") for i in state["items"] if i["type"] == "memory"}
            for proposal in proposals:
                if settings.REFLECT_PROPOSE_MEMORY and proposal.text not in pending:
                    state["items"].append({"type": "memory", "fact": proposal.text, "sources": list(proposal.sources)})
                    pending.add(proposal.text)
        except llm.LLMError as exc:
            logger.warning(
                "reflect %s: the LLM could not summarise %s (%s); using the offline summary", run.id, page, exc
            )
            state["counts"]["llm_fallbacks"] += 1
            summary, model = None, OFFLINE_MODEL
    views = opinion_views(load_states([entity_key(entity)]), entity=entity)
    updated = timezone.localtime(run.until).date()

    def build(content: str | None) -> str:
        return compose_entity_page(
            content,
            entity=entity,
            new_facts=facts,
            summary=summary,
            opinions=views,
            updated=updated,
            limit=settings.REFLECT_PAGE_MAX_FACTS,
        )

    if build(current) == current:
        _page_outcome(state, item, None, "unchanged")
        return
    audit = _guarded_page_write(run, page, ref, describe(run, page, facts), build, model=model)
    _page_outcome(state, item, audit, audit.status)


def _guarded_page_write(
    run: ReflectRun, page: str, ref: str, fact: str, build: Callable[[str | None], str], *, model: str
) -> WriteGuardianAudit:
    """The page through the write guardian: its edits are computed from the file as it is under the lock.

    Reflect may rewrite its own block (the lines between its markers); anything else it changes counts
    against ``GUARDIAN_MAX_REMOVED_LINES`` as any write does.
    """

    def compose(content: str | None) -> dict[str, Any]:
        new = build(content)
        return {
            "action": "write",
            "reason": f"reflect {run.id} updated {page}",
            "edits": page_edits(content, new),
            "max_removed_lines": block_length(content) + settings.GUARDIAN_MAX_REMOVED_LINES,
            "model": model,
        }

    return guard_write(
        target_file=page,
        candidate_fact=fact,
        source=WriteGuardianAudit.Source.REFLECT,
        source_ref=ref,
        requested_by=run.requested_by,
        compose=compose,
    )


def _write_opinions_page(run: ReflectRun, item: dict[str, Any], state: dict[str, Any]) -> None:
    ref = _page_ref(run, item, state)
    if ref is None:
        return
    views = opinion_views(load_states())
    updated = timezone.localtime(run.until).date()

    def build(content: str | None) -> str:
        return compose_opinions_page(content, views, updated=updated)

    current = workspace.read_file(OPINIONS_PAGE)
    if build(current) == current:
        _page_outcome(state, item, None, "unchanged")
        return
    fact = describe(run, OPINIONS_PAGE, []) + f"; {len(views)} opinion(s), {len(state['touched'])} moved"
    audit = _guarded_page_write(run, OPINIONS_PAGE, ref, fact, build, model=OFFLINE_MODEL)
    _page_outcome(state, item, audit, audit.status)


def _write_kind_page(run: ReflectRun, item: dict[str, Any], facts: list[Fact], state: dict[str, Any]) -> None:
    """``bank/world.md`` or ``bank/experience.md`` through the write guardian, as an entity page is written."""
    page, kind = item["page"], item["kind"]
    ref = _page_ref(run, item, state)
    if ref is None:
        return
    rejected = rolled_back_facts(page)
    facts = [f for f in facts if kind_page_fact(f).key not in rejected]
    updated = timezone.localtime(run.until).date()

    def build(content: str | None) -> str:
        return compose_kind_page(
            content, kind=kind, new_facts=facts, updated=updated, limit=settings.REFLECT_PAGE_MAX_FACTS
        )

    current = workspace.read_file(page)
    if not facts or build(current) == current:
        _page_outcome(state, item, None, "unchanged")
        return
    audit = _guarded_page_write(run, page, ref, describe(run, page, facts), build, model=OFFLINE_MODEL)
    _page_outcome(state, item, audit, audit.status)


def _propose_memory(run: ReflectRun, item: dict[str, Any], state: dict[str, Any]) -> None:
    text = item["fact"]
    ref = f"{run.id}:m:{hashlib.sha256(text.encode()).hexdigest()[:24]}"
    existing = existing_audit(ref)
    if existing is None:
        proposed_before = (
            WriteGuardianAudit.objects.filter(
                source=WriteGuardianAudit.Source.REFLECT, target_file=MEMORY_FILE, candidate_fact=text
            )
            .exclude(source_ref=ref)
            .exists()
        )
        if proposed_before:
            return  # Each fact is proposed once; the guardian's answer stands.
        existing = guard_write(
            target_file=MEMORY_FILE,
            candidate_fact=text,
            source=WriteGuardianAudit.Source.REFLECT,
            source_ref=ref,
            requested_by=run.requested_by,
            raise_transient=False,
        )
    _page_outcome(state, item, existing, existing.status)


def process_item(run: ReflectRun, item: dict[str, Any], facts_by_id: dict[str, Fact], state: dict[str, Any]) -> None:
    if item["type"] == "entity":
        _write_entity_page(run, item, [facts_by_id[i] for i in item["facts"] if i in facts_by_id], state)
    elif item["type"] == "opinions":
        _write_opinions_page(run, item, state)
    elif item["type"] == "kind":
        _write_kind_page(run, item, [facts_by_id[i] for i in item["facts"] if i in facts_by_id], state)
    elif item["type"] == "memory":
        _propose_memory(run, item, state)


def run_audits(run: ReflectRun) -> list[WriteGuardianAudit]:
    """The audits of a run's writes (its pages and MEMORY.md proposals), oldest first."""
    return list(
        WriteGuardianAudit.objects.filter(
            source=WriteGuardianAudit.Source.REFLECT, source_ref__startswith=f"{run.id}:"
        ).order_by("created_at", "id")
    )
