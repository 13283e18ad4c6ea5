"""What a reflect run writes, planned from its facts: one item per entity page (``group_by_page``), the kind
pages (``kind_items``), the MEMORY.md proposals (``memory_proposals``), and the opinions shown on a page."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from django.conf import settings

from guardian_app.recall.retain import entity_key
from guardian_app.reflect.facts import Fact
from guardian_app.reflect.opinions import OpinionState, evidence_sources, opinion_view
from guardian_app.reflect.pages import KIND_PAGES
from guardian_app.write import paths
from reflection_site.errors import ReflectionError


def existing_entity_pages() -> dict[str, str]:
    """``{entity key: page name stem}`` of the pages under ``bank/entities/`` (symlinks are ignored), in the
    workspace profile's bank folder."""
    folder = paths.bank_dir() / "entities"
    found: dict[str, str] = {}
    if not folder.is_dir() or folder.is_symlink():
        return found
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_file(follow_symlinks=False) and entry.name.endswith(".md"):
            stem = entry.name[:-3]
            try:
                if paths.bank_page(stem) == f"bank/entities/{stem}.md":
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
            page = paths.bank_page(title)
            group = groups.setdefault(page, {"type": "entity", "page": page, "entity": title, "facts": []})
            if fact.id not in group["facts"]:
                group["facts"].append(fact.id)
    return [groups[page] for page in sorted(groups)]


def opinion_views(states: list[OpinionState], *, entity: str | None = None) -> list[dict[str, Any]]:
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


def kind_items(facts: list[Fact]) -> list[dict[str, Any]]:
    """One item per kind page with facts of its kind in the run: ``bank/world.md`` (W), ``bank/experience.md`` (B)."""
    items = []
    for kind, (page, _title) in KIND_PAGES.items():
        ids = [f.id for f in facts if f.kind == kind]
        if ids:
            items.append({"type": "kind", "page": page, "kind": kind, "facts": ids})
    return items


def known_pages() -> list[str]:
    return sorted(set(existing_entity_pages().values()))
