"""Reflect (seed 001): turn a period's facts into entity pages and opinions, as audited, resumable writes.

``execute_run(run)`` works in stages, each recorded in the run's checkpoint (``reflection_site.checkpoints``)
so that a run killed at any point finishes on its next start, with the same result:

0. **infer** (seed 001: "reflect can infer these bullets from the rest of the log"): each daily log of the
   period gets ``## Retain`` bullets (``W``/``B``/``O(c=…)``/``S`` with ``@entities``, relative days made
   absolute) inferred from its untyped lines (``guardian_app.recall.retain.infer_bullet``), added to its Retain section
   by one guarded write per log (``source_ref="<run id>:memory/<day>"``). A line whose bullet the log holds
   already, or that a rolled-back write added, is not inferred again.
1. **collect**: bring the recall index up to date, read the period's facts (``guardian_app.reflect.facts``) and
   store them in the checkpoint; from here on the run works from that list.
2. **opinions**: apply each fact to the opinions (``guardian_app.reflect.opinions.record_fact``), one
   transaction per fact; a fact is counted once per opinion, so doing one again changes nothing.
3. **pages**: one item per page, in a fixed order: each entity page with new facts, then
   ``bank/opinions.md``, then ``bank/world.md`` and ``bank/experience.md`` (the period's ``W`` and ``B``
   facts, merged with those on the page), then proposals for MEMORY.md. An entity page is summarised by the LLM when one is
   configured (every statement with its sources; statements it cannot source are dropped), else by the
   offline summariser, and written by ``guard_write(source="reflect", source_ref="<run id>:<page>")``:
   snapshot, diff, write-ahead audit, history, rollback, like any memory write. A page that would not
   change is not written. MEMORY.md proposals go through the write guardian like a gate's fact (it may
   refuse them), each proposed once.
4. **skills**: patterns recalled often enough become skill drafts for review (``guardian_app.reflect.skills``).

``--dry-run`` runs stages 1-3 in memory, with the offline summariser, and records what would change.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import re
import string
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from guardian_app.models import Opinion, OpinionEvidence, ReflectRun, WriteGuardianAudit
from guardian_app.recall.retain import entity_key, infer_bullet, is_retain_heading, parse_retain_bullet, untyped_lines
from guardian_app.reflect.facts import Fact, collect_facts, exclusion_reason
from guardian_app.reflect.opinions import (
    OpinionState,
    apply_fact,
    evidence_sources,
    load_states,
    opinion_view,
    record_fact,
)
from guardian_app.reflect.pages import (
    KIND_PAGES,
    PageFact,
    Statement,
    added_fact_keys,
    block_length,
    compose_entity_page,
    compose_kind_page,
    compose_opinions_page,
    compose_retain,
    kind_page_fact,
    page_edits,
)
from guardian_app.write import workspace
from guardian_app.write.diffs import diff_stats, unified_diff
from reflection_site import checkpoints
from reflection_site.errors import ReflectionError
from reflection_site.models import JobCheckpoint

logger = logging.getLogger(__name__)

PROMPT_VERSION = "reflect-v1"
PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
OFFLINE_MODEL = "reflect-offline-v1"
OPINIONS_PAGE = "bank/opinions.md"
MEMORY_FILE = "MEMORY.md"
MAX_STATEMENTS = 6
OPINION_BATCH = 50  # Facts applied to the opinions per transaction (and per checkpoint save).
Status = ReflectRun.Status
Progress = Callable[[int, int, str], None]


class InvalidReflectRequest(ReflectionError):
    code = "invalid_reflect_request"
    status = 422


# --- Starting a run ----------------------------------------------------------------------------------
def default_since(now: dt.datetime) -> dt.datetime:
    """Where the daily job starts: the end of the last finished run, else ``REFLECT_DEFAULT_SINCE`` ago."""
    from guardian_app.recall.recall import parse_time

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
    from guardian_app.recall.recall import InvalidRecallQuery, parse_time

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


def enqueue_run(run: ReflectRun) -> None:
    """Hand the run to a worker after commit; a dead broker leaves it queued for the resume sweep."""
    from guardian_app.tasks import run_reflect

    # Not functools.partial: Django 5.2 logs a failed robust callback by its __qualname__ (ticket #36487).
    transaction.on_commit(lambda: run_reflect.delay(run.id), robust=True)


# --- Helpers -------------------------------------------------------------------------------------------
def source_ref(run_id: str, page: str) -> str:
    """``<run id>:<page>`` (64 characters at most: a long page name becomes a hash of it)."""
    short = page.removeprefix("bank/").removesuffix(".md")
    ref = f"{run_id}:{short}"
    if len(ref) <= 64:
        return ref
    return f"{run_id}:h:{hashlib.sha256(page.encode()).hexdigest()[:32]}"


def _existing_audit(ref: str) -> WriteGuardianAudit | None:
    """The audit of this write if a run (this one, before a crash) made it; an interrupted one is finished first."""
    audit = WriteGuardianAudit.objects.filter(
        source=WriteGuardianAudit.Source.REFLECT, source_ref=ref, decision__isnull=True, retry_of__isnull=True
    ).first()
    if audit is not None and audit.status == WriteGuardianAudit.Status.FAILED and audit.reason == workspace.INTERRUPTED:
        # Killed between the write-ahead audit and its record: reconciling finishes (or closes) it.
        with workspace.file_lock(audit.target_file):
            workspace.reconcile(audit.target_file)
        audit.refresh_from_db()
    return audit


def _llm() -> Any:
    from reflection_site import llm

    return llm if llm.is_configured() else None


def existing_entity_pages() -> dict[str, str]:
    """``{entity key: page name stem}`` of the pages under ``bank/entities/`` (symlinks are ignored), in the
    workspace profile's bank folder."""
    folder = workspace.bank_dir() / "entities"
    found: dict[str, str] = {}
    if not folder.is_dir() or folder.is_symlink():
        return found
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_file(follow_symlinks=False) and entry.name.endswith(".md"):
            stem = entry.name[:-3]
            try:
                if workspace.bank_page(stem) == f"bank/entities/{stem}.md":
                    found.setdefault(entity_key(stem), stem)
            except ReflectionError:
                continue
    return found


def group_by_page(facts: list[Fact], existing: dict[str, str]) -> list[dict[str, Any]]:
    """One item per entity page, sorted by page: ``{"type": "entity", "page", "entity", "facts": [ids]}``.

    An entity keeps the page it has (whatever its spelling); a new one is named after its most used
    spelling (on a tie, the first seen). Names that make the same page share it.
    """
    spellings: dict[str, Counter[str]] = {}
    for fact in facts:
        for name in fact.entities:
            spellings.setdefault(entity_key(name), Counter())[name] += 1
    title_for: dict[str, str] = {}
    for key, counter in spellings.items():
        # The most used spelling; on a tie the first seen (facts come oldest first: stable across runs).
        title_for[key] = existing.get(key) or sorted(counter.items(), key=lambda kv: -kv[1])[0][0]
    groups: dict[str, dict[str, Any]] = {}
    for fact in facts:
        for key in fact.entity_keys:
            title = title_for[key]
            page = workspace.bank_page(title)
            group = groups.setdefault(page, {"type": "entity", "page": page, "entity": title, "facts": []})
            if fact.id not in group["facts"]:
                group["facts"].append(fact.id)
    return [groups[page] for page in sorted(groups)]


def _views(states: list[OpinionState], *, entity: str | None = None) -> list[dict[str, Any]]:
    chosen = [s for s in states if entity is None or s.entity_key == entity_key(entity)]
    evidence = evidence_sources([s.id for s in chosen if s.id])
    return [opinion_view(s, evidence.get(s.id or "", [])) for s in chosen]


def memory_proposals(moved: list[OpinionState]) -> list[dict[str, Any]]:
    """The opinions this run moved that are now sure enough for MEMORY.md (``REFLECT_MEMORY_MIN_CONFIDENCE``,
    at least two supporting facts, none against), as facts for the write guardian."""
    if not settings.REFLECT_PROPOSE_MEMORY:
        return []
    out = []
    for state in moved:
        if (
            state.confidence >= settings.REFLECT_MEMORY_MIN_CONFIDENCE
            and state.supporting >= 2
            and state.contradicting == 0
        ):
            text = f"{state.entity}: {state.statement}" if state.entity else state.statement
            out.append({"type": "memory", "fact": text, "sources": [state.source] if state.source else []})
    return sorted(out, key=lambda item: item["fact"])


def describe(run: ReflectRun, page: str, facts: list[Fact]) -> str:
    """The audit's candidate fact for a page write: the run, the page and the new facts (one a line)."""
    head = f"Reflect {run.id}, page {page}: {len(facts)} fact(s) from {run.since:%Y-%m-%d} to {run.until:%Y-%m-%d}"
    lines = [head] + [f"- {f.content}" for f in facts]
    text = "\n".join(lines)
    limit = max(200, settings.GUARDIAN_MAX_FACT_CHARS - 100)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- The LLM summary ----------------------------------------------------------------------------------
@lru_cache(maxsize=2)
def _templates(version: str) -> tuple[str, string.Template]:
    system = (PROMPT_DIR / f"{version}.system.txt").read_text(encoding="utf-8")
    user = (PROMPT_DIR / f"{version}.user.txt").read_text(encoding="utf-8")
    return system, string.Template(user)


def build_messages(entity: str, page: str | None, facts: list[Fact]) -> list[dict[str, str]]:
    system, user = _templates(PROMPT_VERSION)
    ordered = sorted(facts, key=lambda f: (-f.date.toordinal(), f.source))
    lines = "\n".join(
        json.dumps(
            {"source": f.source, "date": f.date.isoformat(), "kind": f.kind, "content": f.content}, ensure_ascii=False
        )
        for f in ordered
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": user.substitute(entity=entity, page=page or "(no page yet)", facts=lines)},
    ]


def _sourced(items: Any, key: str, known: set[str]) -> list[Statement]:
    """Statements whose sources are all among the facts' (unsourced, unsafe or malformed ones dropped)."""
    out: list[Statement] = []
    if not isinstance(items, list):
        return out
    for item in items:
        if not isinstance(item, dict):
            continue
        text = " ".join(str(item.get(key) or "").split())[:600]
        sources = item.get("sources")
        if not text or not isinstance(sources, list):
            continue
        cited = tuple(dict.fromkeys(str(s).strip() for s in sources if str(s).strip() in known))
        if not cited or exclusion_reason(text) is not None:
            continue
        out.append(Statement(text, cited))
    return out


def summarise_with_llm(
    entity: str, page: str | None, facts: list[Fact]
) -> tuple[list[Statement], list[Statement], str]:
    """(summary statements, MEMORY.md proposals, model) from the LLM. Raises the LLM client's errors."""
    from reflection_site import llm

    reply = llm.complete_json(build_messages(entity, page, facts))
    known = {f.source for f in facts}
    summary = _sourced(reply.data.get("summary"), "text", known)[:MAX_STATEMENTS]
    proposals = _sourced(reply.data.get("memory_proposals"), "fact", known)[:3]
    return summary, proposals, reply.model


# --- Stages -------------------------------------------------------------------------------------------
def _new_state() -> dict[str, Any]:
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


def _note_changes(state: dict[str, Any], changes: list[Any]) -> None:
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


def _opinions_of_run(run: ReflectRun, state: dict[str, Any]) -> None:
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
    existing = _existing_audit(ref)
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
    if _llm() is not None:
        from reflection_site import llm

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
    views = _views(load_states([entity_key(entity)]), entity=entity)
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
    from guardian_app.write.guardian import guard_write

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
    views = _views(load_states())
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


def _log_days(run: ReflectRun) -> list[tuple[str, dt.date]]:
    """The daily logs (``memory/YYYY-MM-DD.md``) of the run's period, oldest first."""
    from guardian_app.recall.index import daily_log_date
    from guardian_app.reflect.facts import start_of_day

    folder = Path(settings.WORKSPACE_DIR) / "memory"
    if not folder.is_dir() or folder.is_symlink():
        return []
    first, last = start_of_day(run.since).date(), timezone.localtime(run.until).date()
    found = []
    for entry in os.scandir(folder):
        name = f"memory/{entry.name}"
        day = daily_log_date(name)
        if day is not None and entry.name == f"{day.isoformat()}.md" and first <= day <= last:
            if entry.is_file(follow_symlinks=False):
                found.append((name, day))
    return sorted(found, key=lambda item: item[1])


def _retained_keys(text: str) -> set[str]:
    """The facts a log's ``## Retain`` sections hold already, by normalised text."""
    from guardian_app.write.heuristic_guardian import fingerprint

    keys: set[str] = set()
    inside = False
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            inside = is_retain_heading(line.strip())
            continue
        fact = parse_retain_bullet(line) if inside else None
        if fact is not None:
            keys.add(fingerprint(fact.content))
    return keys


def _rolled_back_bullets(name: str) -> set[str]:
    """Bullets reflect added to a log in writes a person rolled back, by normalised text."""
    from guardian_app.write.heuristic_guardian import fingerprint

    keys: set[str] = set()
    diffs = WriteGuardianAudit.objects.filter(
        source=WriteGuardianAudit.Source.REFLECT, target_file=name, status=WriteGuardianAudit.Status.ROLLED_BACK
    ).values_list("diff", flat=True)
    for diff in diffs:
        for line in (diff or "").splitlines():
            fact = parse_retain_bullet(line[1:]) if line.startswith("+") and not line.startswith("+++") else None
            if fact is not None:
                keys.add(fingerprint(fact.content))
    return keys


def infer_retain(text: str, day: dt.date, *, known: list[str], rejected: set[str]) -> list[str]:
    """The ``## Retain`` bullets to add to a log: one per untyped line whose fact the log does not hold yet.

    A line's entities are its ``@tags`` and the ``known`` names it mentions as words (the index's entities and
    the names the period's logs name often enough); lines with secrets, personal data or instructions are left
    alone.
    """
    from guardian_app.reflect.facts import entities_in_text
    from guardian_app.write.heuristic_guardian import fingerprint

    have = _retained_keys(text) | rejected
    out: list[str] = []
    for _number, line in untyped_lines(text):
        if exclusion_reason(line) is not None or fingerprint(line) in have:
            continue
        bullet = infer_bullet(line, day, names=entities_in_text(line, known))
        fact = parse_retain_bullet(bullet)
        if fact is None or fingerprint(fact.content) in have:
            continue
        have.add(fingerprint(fact.content))
        out.append(bullet)
    return out


def _infer_stage(run: ReflectRun, *, write: bool = True) -> list[dict[str, Any]]:
    """Stage 0: infer each daily log's Retain bullets and add them by a guarded write (``write=False``: only
    report them). Idempotent: a log whose bullets are all there is not written, a resumed run finds its audit."""
    from guardian_app.reflect.facts import known_entity_names, names_in_text
    from guardian_app.write.guardian import guard_write

    logs = [(name, day, workspace.read_file(name) or "") for name, day in _log_days(run)]
    # A name guessed from capitals (inside a sentence) is an entity once REFLECT_NEW_ENTITY_MIN_EVIDENCE lines of
    # the period's logs name it, at a sentence's start too, as reflect's facts do (guardian_app.reflect.facts).
    lines = [line for _name, _day, text in logs for _number, line in untyped_lines(text)]
    guesses = {entity_key(n): n for line in lines for n in names_in_text(line)}
    known = known_entity_names(_known_pages())
    for name in guesses.values():
        words = re.compile(rf"(?<![\w@]){re.escape(name)}(?!\w)")
        if sum(1 for line in lines if words.search(line)) >= int(settings.REFLECT_NEW_ENTITY_MIN_EVIDENCE):
            known.append(name)
    records: list[dict[str, Any]] = []
    for name, day, text in logs:
        ref = source_ref(run.id, name)
        existing = _existing_audit(ref) if write else None
        if existing is not None:
            records.append({"type": "retain", "page": name, "status": existing.status, "audit_id": existing.id})
            continue
        rejected = _rolled_back_bullets(name)
        bullets = infer_retain(text, day, known=known, rejected=rejected)
        if not bullets:
            continue
        if not write:
            records.append({"type": "retain", "page": name, "status": "would_write", "bullets": bullets[:50]})
            continue

        def compose(content: str | None, day: dt.date = day, rejected: set[str] = rejected) -> dict[str, Any]:
            new = infer_retain(content or "", day, known=known, rejected=rejected)
            if not new:
                return {"action": "refuse", "reason": "every inferred bullet is in the log already", "edits": []}
            return {
                "action": "write",
                "reason": f"reflect {run.id} inferred {len(new)} Retain bullet(s) from the untyped lines",
                "edits": [{"op": "replace", "find": content, "text": compose_retain(content or "", new)}],
                "model": "reflect-infer-v1",
            }

        fact = "\n".join([f"Reflect {run.id}, {name}: {len(bullets)} inferred Retain bullet(s)", *bullets])
        limit = max(200, settings.GUARDIAN_MAX_FACT_CHARS - 100)
        audit = guard_write(
            target_file=name,
            candidate_fact=fact if len(fact) <= limit else fact[: limit - 1] + "…",
            source=WriteGuardianAudit.Source.REFLECT,
            source_ref=ref,
            requested_by=run.requested_by,
            compose=compose,
        )
        records.append({"type": "retain", "page": name, "status": audit.status, "audit_id": audit.id})
    return records


def kind_items(facts: list[Fact]) -> list[dict[str, Any]]:
    """One item per kind page with facts of its kind in the run: ``bank/world.md`` (W), ``bank/experience.md`` (B)."""
    items = []
    for kind, (page, _title) in KIND_PAGES.items():
        ids = [f.id for f in facts if f.kind == kind]
        if ids:
            items.append({"type": "kind", "page": page, "kind": kind, "facts": ids})
    return items


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
    from guardian_app.write.guardian import guard_write

    text = item["fact"]
    ref = f"{run.id}:m:{hashlib.sha256(text.encode()).hexdigest()[:24]}"
    existing = _existing_audit(ref)
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


def _process_item(run: ReflectRun, item: dict[str, Any], facts_by_id: dict[str, Fact], state: dict[str, Any]) -> None:
    if item["type"] == "entity":
        _write_entity_page(run, item, [facts_by_id[i] for i in item["facts"] if i in facts_by_id], state)
    elif item["type"] == "opinions":
        _write_opinions_page(run, item, state)
    elif item["type"] == "kind":
        _write_kind_page(run, item, [facts_by_id[i] for i in item["facts"] if i in facts_by_id], state)
    elif item["type"] == "memory":
        _propose_memory(run, item, state)


def _finish(run: ReflectRun, state: dict[str, Any], facts: int) -> ReflectRun:
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


def _known_pages() -> list[str]:
    return sorted(set(existing_entity_pages().values()))


# --- Running ------------------------------------------------------------------------------------------
def execute_run(run: ReflectRun, *, progress: Progress | None = None) -> ReflectRun:
    """Run (or resume) ``run`` to the end; see the module docstring. A finished run is returned as it is.

    Raises CheckpointBusy when another live process is running it, LeaseLost when another took it over;
    any other error leaves the checkpoint for the next start (the run shows the error) and is raised.
    """
    if run.dry_run:
        return _dry_run(run, progress=progress)
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
    now = run.until
    if checkpoint.stage in ("", "collect"):
        ReflectRun.objects.filter(id=run.id).update(stage="collect")
        from guardian_app.recall.index import index_workspace

        inferred = _infer_stage(run)  # before the index: the new bullets are this run's typed facts
        index_workspace()
        collected = collect_facts(run.since, run.until, known_pages=_known_pages())
        state = _new_state()
        state["excluded"] = collected.excluded[:200]
        state["retain"] = inferred
        checkpoints.save(
            checkpoint,
            stage="opinions",
            candidates=[f.as_dict() for f in collected.facts],
            processed_index=0,
            state=state,
        )
    facts = [Fact.from_dict(d) for d in checkpoint.candidates]
    state = checkpoint.state

    if checkpoint.stage == "opinions":
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
                        record_fact(fact, run=run, now=now)
            checkpoints.save(checkpoint, processed_index=start + len(batch))
            if progress:
                progress(start + len(batch), len(facts), f"opinions: {batch[-1].source}")
        _opinions_of_run(run, state)
        items = group_by_page(facts, existing_entity_pages())
        state["entities"] = len(items)
        if Opinion.objects.exists():
            items.append({"type": "opinions", "page": OPINIONS_PAGE})
        items += kind_items(facts)
        touched = set(state["touched"])
        items += memory_proposals([s for s in load_states() if s.id in touched])
        state["items"] = items
        checkpoints.save(checkpoint, stage="pages", processed_index=0, state=state)

    if checkpoint.stage == "pages":
        ReflectRun.objects.filter(id=run.id).update(stage="pages")
        facts_by_id = {f.id: f for f in facts}
        index = checkpoint.processed_index
        while index < len(state["items"]):  # An LLM's MEMORY.md proposals join the list as it goes.
            item = state["items"][index]
            _process_item(run, item, facts_by_id, state)
            index += 1
            checkpoints.save(checkpoint, processed_index=index, state=state)
            if progress:
                progress(index, len(state["items"]), f"pages: {item.get('page') or item.get('fact', '')[:40]}")
        checkpoints.save(checkpoint, stage="skills", processed_index=0, state=state)

    if checkpoint.stage == "skills":
        ReflectRun.objects.filter(id=run.id).update(stage="skills")
        from guardian_app.reflect.skills import propose_drafts

        state["counts"]["skill_drafts"] = len(propose_drafts(run=run))
        checkpoints.save(checkpoint, stage="finishing", state=state)

    run = _finish(run, state, len(facts))
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


def _dry_run(run: ReflectRun, *, progress: Progress | None = None) -> ReflectRun:
    """What a run would change, computed in memory with the offline summariser; nothing is written."""
    from guardian_app.recall.index import index_workspace
    from guardian_app.reflect.skills import find_candidates

    ReflectRun.objects.filter(id=run.id).update(status=Status.RUNNING, started_at=timezone.now(), stage="collect")
    inferred = _infer_stage(run, write=False)
    index_workspace()
    collected = collect_facts(run.since, run.until, known_pages=_known_pages())
    facts = collected.facts
    state = _new_state()
    state["retain"] = inferred
    state["excluded"] = collected.excluded[:200]
    states = load_states()
    moved: dict[int, OpinionState] = {}
    for index, fact in enumerate(facts):
        changes = apply_fact(states, fact, now=run.until)
        _note_changes(state, changes)
        moved.update((id(change.state), change.state) for change in changes)
        if progress:
            progress(index + 1, len(facts), f"opinions: {fact.source}")
    items = group_by_page(facts, existing_entity_pages())
    state["entities"] = len(items)
    updated = timezone.localtime(run.until).date()
    facts_by_id = {f.id: f for f in facts}
    previews = []
    planned: list[tuple[dict[str, Any], str | None, str]] = []
    for item in items:
        current = workspace.read_file(item["page"])
        rejected = rolled_back_facts(item["page"])
        new = compose_entity_page(
            current,
            entity=item["entity"],
            new_facts=[facts_by_id[i] for i in item["facts"] if PageFact.of(facts_by_id[i]).key not in rejected],
            summary=None,
            opinions=_views(states, entity=item["entity"]),
            updated=updated,
            limit=settings.REFLECT_PAGE_MAX_FACTS,
        )
        planned.append((item, current, new))
    if states:
        current = workspace.read_file(OPINIONS_PAGE)
        planned.append(
            (
                {"type": "opinions", "page": OPINIONS_PAGE},
                current,
                compose_opinions_page(current, _views(states), updated=updated),
            )
        )
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
    for item, current, new in planned:
        stats = diff_stats(current, new)
        changed = new != current
        previews.append(
            {
                "type": item["type"],
                "page": item["page"],
                "status": "would_write" if changed else "unchanged",
                "lines_added": stats.added,
                "lines_removed": stats.removed + stats.modified,
                "diff": unified_diff(current, new, item["page"])[:20000] if changed else "",
            }
        )
        state["counts"]["pages_written" if changed else "pages_unchanged"] += 1
    for proposal in memory_proposals(list(moved.values())):
        previews.append({"type": "memory", "page": MEMORY_FILE, "status": "would_propose", "fact": proposal["fact"]})
        state["counts"]["memory_proposals"] += 1
    state["pages"] = previews
    state["counts"]["skill_drafts"] = len(find_candidates())
    return _finish(run, state, len(facts))


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
    from guardian_app.tasks import run_reflect

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
            run_reflect.delay(run_id)
        except Exception as exc:  # noqa: BLE001 - a dead broker: the next sweep tries again.
            logger.warning("reflect sweep: could not enqueue %s: %s", run_id, exc)
            break
        sent += 1
    return sent


def mark_failed(run_id: str, error: str) -> None:
    ReflectRun.objects.filter(id=run_id).exclude(status=Status.DONE).update(
        status=Status.FAILED, error=error[:4000], finished_at=timezone.now()
    )


def run_audits(run: ReflectRun) -> list[WriteGuardianAudit]:
    """The audits of a run's writes (its pages and MEMORY.md proposals), oldest first."""
    return list(
        WriteGuardianAudit.objects.filter(
            source=WriteGuardianAudit.Source.REFLECT, source_ref__startswith=f"{run.id}:"
        ).order_by("created_at", "id")
    )


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
