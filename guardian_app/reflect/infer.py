"""Reflect's stage 0, infer (seed 001: "reflect can infer these bullets from the rest of the log"): each daily log
of the run's period gets ``## Retain`` bullets inferred from its untyped lines, added by one guarded write per log
(``source_ref="<run id>:memory/<day>"``). A line whose bullet the log holds already, or that a rolled-back write
added, is not inferred again."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from guardian_app.models import ReflectRun, WriteGuardianAudit
from guardian_app.recall.index import daily_log_date
from guardian_app.recall.retain import entity_key, infer_bullet, is_retain_heading, parse_retain_bullet, untyped_lines
from guardian_app.reflect.facts import (
    entities_in_text,
    exclusion_reason,
    known_entity_names,
    names_in_text,
    start_of_day,
)
from guardian_app.reflect.page_writes import clip_fact, existing_audit, source_ref
from guardian_app.reflect.pages import compose_retain
from guardian_app.reflect.plan import known_pages
from guardian_app.write import workspace
from guardian_app.write.guardian import guard_write
from guardian_app.write.heuristic_guardian import fingerprint


def _log_days(run: ReflectRun) -> list[tuple[str, dt.date]]:
    """The daily logs (``memory/YYYY-MM-DD.md``) of the run's period, oldest first."""
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


def infer_stage(run: ReflectRun, *, write: bool = True) -> list[dict[str, Any]]:
    """Stage 0: infer each daily log's Retain bullets and add them by a guarded write (``write=False``: only
    report them). Idempotent: a log whose bullets are all there is not written, a resumed run finds its audit."""
    logs = [(name, day, workspace.read_file(name) or "") for name, day in _log_days(run)]
    known = _known_names(logs)
    records: list[dict[str, Any]] = []
    for name, day, text in logs:
        ref = source_ref(run.id, name)
        existing = existing_audit(ref) if write else None
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
        audit = _write_bullets(run, name, day, ref, bullets, known=known, rejected=rejected)
        records.append({"type": "retain", "page": name, "status": audit.status, "audit_id": audit.id})
    return records


def _known_names(logs: list[tuple[str, dt.date, str]]) -> list[str]:
    """The entity names a line may mention as words: the index's entities, and the names guessed from capitals."""
    # A name guessed from capitals (inside a sentence) is an entity once REFLECT_NEW_ENTITY_MIN_EVIDENCE lines of
    # the period's logs name it, at a sentence's start too, as reflect's facts do (guardian_app.reflect.facts).
    lines = [line for _name, _day, text in logs for _number, line in untyped_lines(text)]
    guesses = {entity_key(n): n for line in lines for n in names_in_text(line)}
    known = known_entity_names(known_pages())
    for name in guesses.values():
        words = re.compile(rf"(?<![\w@]){re.escape(name)}(?!\w)")
        if sum(1 for line in lines if words.search(line)) >= int(settings.REFLECT_NEW_ENTITY_MIN_EVIDENCE):
            known.append(name)
    return known


def _write_bullets(
    run: ReflectRun, name: str, day: dt.date, ref: str, bullets: list[str], *, known: list[str], rejected: set[str]
) -> WriteGuardianAudit:
    """The log's inferred bullets through the write guardian, computed again from the log as it is under the lock."""

    def compose(content: str | None) -> dict[str, Any]:
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
    return guard_write(
        target_file=name,
        candidate_fact=clip_fact(fact),
        source=WriteGuardianAudit.Source.REFLECT,
        source_ref=ref,
        requested_by=run.requested_by,
        compose=compose,
    )
