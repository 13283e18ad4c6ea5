"""Consolidation (seed 000 ``consolidation.enabled`` / ``schedule``): a memory file made clean again.

What it means here: the lines of a memory file that repeat another line's fact (a paraphrase, as the guardian's
near-duplicate checks see it: ``similarity.is_paraphrase``, ``supersede.restated_line``) or state a value that a later line of the same
attribute has replaced (``supersede.superseded_lines``: "Lives in Berlin." above "Moved to Lisbon.") are
removed, in one audited write per file, so a person can read the diff and roll it back like any other write.
A line lower in the file counts as the newer one: the guardian appends under a section, and a replaced line
takes the place of the one it replaces. Nothing is rewritten or merged into new wording: consolidation only
deletes lines whose fact another line still states. Headings, blank lines and prose that is not a bullet are
left alone, and so is AGENTS.md (the agent's own instructions).

The write goes through ``guardian.guard_write`` (``compose``), with every check of a write: the file as it is on
disk under its lock, the removed-lines limit (``CONSOLIDATION_MAX_REMOVED_LINES`` instead of the guardian's
5), snapshots, write-ahead audit, history, rollback. Its audit has source ``reflect`` (the housekeeping jobs'
source), ``requested_by`` ``consolidation`` and a ``source_ref`` of the file's content hash, so running it twice
on the same state of a file writes once. Off by default (``CONSOLIDATION_ENABLED``); the beat runs it at
``CONSOLIDATION_SCHEDULE`` when enabled; ``python manage.py guardian consolidate [--dry-run]`` runs it by hand.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from guardian_app.write import paths, similarity, supersede, workspace
from reflection_site import memory_files

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?P<text>\S.*)$")
SKIPPED_FILES = frozenset({"AGENTS.md"})


@dataclass(frozen=True)
class Removal:
    number: int  # its line number (1-based) in the content planned on
    line: str  # the exact line removed
    why: str  # "repeats" or "superseded"
    by: str  # the line that still states its fact


@dataclass
class Consolidation:
    file_name: str
    removals: list[Removal] = field(default_factory=list)
    audit_id: str | None = None
    status: str = "unchanged"  # unchanged | planned | written | refused | failed | skipped
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file_name,
            "status": self.status,
            "reason": self.reason,
            "audit_id": self.audit_id,
            "removed": [{"line_number": r.number, "line": r.line, "why": r.why, "by": r.by} for r in self.removals],
        }


def plan(content: str | None) -> list[Removal]:
    """The lines of ``content`` that consolidation removes, top to bottom, each with the line that keeps its fact."""
    kept: list[tuple[int, str, str]] = []  # (number, line, its text)
    removals: list[Removal] = []
    for number, line in enumerate((content or "").splitlines(), start=1):
        match = _BULLET.match(line)
        if match is None:
            continue
        text = match.group("text").strip()
        restated = supersede.restated_line(text, "\n".join(k[1] for k in kept))
        twin = next((k for k in kept if k[1] == restated or k[2] == text or similarity.is_paraphrase(text, k[2])), None)
        if twin is not None:
            removals.append(Removal(number, line, "repeats", twin[1]))
            continue
        stale = set(supersede.superseded_lines(text, "\n".join(k[1] for k in kept)))
        for old in [k for k in kept if k[1] in stale]:
            kept.remove(old)
            removals.append(Removal(old[0], old[1], "superseded", line))
        kept.append((number, line, text))
    return sorted(removals, key=lambda r: r.number)


def without(content: str, removals: list[Removal]) -> str:
    """``content`` less the planned lines (by number: a line that stands twice loses the right copy)."""
    gone = {r.number for r in removals}
    lines = content.splitlines(keepends=True)
    return "".join(line for number, line in enumerate(lines, start=1) if number not in gone)


def consolidate_file(name: str, *, dry_run: bool = False) -> Consolidation:
    """Plan (``dry_run``) or write the consolidation of one memory file."""
    from guardian_app.models import FileVersion, WriteGuardianAudit
    from guardian_app.write.guardian import guard_write

    name = paths.canonical_name(name)
    result = Consolidation(name)
    content = workspace.read_file(name)
    result.removals = plan(content)
    if not result.removals:
        return result
    if dry_run:
        result.status = "planned"
        return result
    count = len(result.removals)

    def compose(current: str | None) -> dict[str, Any]:
        removals = plan(current)  # the file as it is under the lock, not as it was when we looked
        result.removals = removals
        if not removals:
            return {"action": "refuse", "reason": "nothing to consolidate any more", "edits": []}
        return {
            "action": "write",
            "reason": f"consolidation: {len(removals)} line(s) whose fact another line states",
            "edits": [{"op": "replace", "find": current, "text": without(current or "", removals)}],
            "max_removed_lines": int(settings.CONSOLIDATION_MAX_REMOVED_LINES),
            "model": "consolidation",
        }

    audit = guard_write(
        target_file=name,
        candidate_fact=f"Consolidate {name}: remove {count} repeated or superseded line(s).",
        source=WriteGuardianAudit.Source.REFLECT,
        # Once per state of the file: its content and how many versions it has had (a state restored by hand or
        # by a rollback is a new state, consolidated again).
        source_ref=f"consolidate:{name}:{FileVersion.objects.filter(file_name=name).count()}:"
        f"{hashlib.sha256((content or '').encode()).hexdigest()[:16]}",
        requested_by="consolidation",
        compose=compose,
    )
    result.audit_id, result.status, result.reason = audit.id, audit.status, audit.reason or ""
    return result


def consolidate(*, dry_run: bool = False, files: list[str] | None = None) -> list[Consolidation]:
    """Every memory file of the workspace profile (AGENTS.md excepted), or ``files``."""
    names = files or [n for n in memory_files.active().files if n not in SKIPPED_FILES]
    return [consolidate_file(name, dry_run=dry_run) for name in names]
