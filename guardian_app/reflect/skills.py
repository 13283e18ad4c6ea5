"""Skill drafts (seed 004 P3-001): a pattern the agent keeps recalling becomes a SKILL.md for review.

A *pattern* is a memory that says how to do something: a chunk of TOOLS.md, an experience fact (``B``),
or a passage with a procedure's marks (numbered steps, "first … then …", a command in backticks). Once
the agent has reported using one (``POST /recall/hits``) at least ``SKILL_PROMOTION_THRESHOLD`` times,
``propose_drafts`` turns it into a draft: a name, a description, triggers, steps and a confidence,
from the LLM when one is configured (a draft it rates below ``SKILL_MIN_CONFIDENCE`` is recorded as
rejected, so it is not asked again), else offline from the text itself.

Nothing is promoted without a person: ``approve_draft`` writes ``skills/<name>/SKILL.md`` in the
workspace (never over a different existing skill), ``reject_draft`` records why. Each pattern (by the
hash of its chunk) is drafted once.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from guardian_app.errors import GuardianError
from guardian_app.models import MemoryChunk, ReflectRun, SkillDraft
from guardian_app.reflect.projection import atomic_write
from guardian_app.write.heuristic_guardian import tokens
from reflection_site.prompts import load_prompt

logger = logging.getLogger(__name__)

PROMPT_VERSION = "skill-v1"
OFFLINE_MODEL = "skill-offline-v1"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_STEPS = 10
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s", re.MULTILINE)
_CUES = re.compile(
    r"\b(?:step|steps|first|then|next|finally|afterwards|run|deploy|install|restart|build|how to)\b|"
    r"`[^`\n]+`|->|→|然后|步骤|首先|最后",
    re.IGNORECASE,
)


class SkillError(GuardianError):
    code = "skill_error"
    status = HTTPStatus.CONFLICT


@dataclass
class SkillCandidate:
    name: str
    description: str
    triggers: list[str]
    steps: list[str]
    confidence: float
    model: str = OFFLINE_MODEL
    extra: dict[str, Any] = field(default_factory=dict)


# --- Finding patterns ------------------------------------------------------------------------------
def is_pattern(path: str, kind: str | None, text: str) -> bool:
    """Whether a memory reads as a reusable procedure (see the module docstring)."""
    if kind == "opinion" or path.startswith("bank/"):
        return False
    if path == "TOOLS.md" or kind == "experience":
        return True
    return bool(_NUMBERED.search(text)) or len(_CUES.findall(text)) >= 2


def find_candidates(*, threshold: int | None = None) -> list[MemoryChunk]:
    """Patterns recalled at least ``threshold`` times that have no draft yet, most used first."""
    threshold = settings.SKILL_PROMOTION_THRESHOLD if threshold is None else threshold
    drafted = SkillDraft.objects.values("source_hash")
    rows = (
        MemoryChunk.objects.filter(hits__gte=max(1, threshold))
        .exclude(hash__in=drafted)
        .only("id", "path", "start_line", "end_line", "kind", "text", "content", "heading", "hash", "hits", "entities")
        .order_by("-hits", "path", "start_line")
    )
    return [row for row in rows[:500] if is_pattern(row.path, row.kind, row.content or row.text)]


# --- Drafting -----------------------------------------------------------------------------------------
def slugify(text: str, *, words: int = 5) -> str:
    """``Run `make deploy ENV=staging`…`` -> ``run-make-deploy-env-staging``; "" when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    parts = re.findall(r"[a-z0-9]+", ascii_text)
    return "-".join(parts[:words])[:64].strip("-")


def split_steps(text: str) -> list[str]:
    """The steps of a procedure: its list items, else its sentences and "then" clauses."""
    lines = [line for line in text.splitlines() if line.strip()]
    items = [m.group(1).strip() for line in lines if (m := _LIST_ITEM.match(line))]
    if len(items) >= 2:
        return items[:MAX_STEPS]
    body = " ".join(re.sub(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+", "", line).strip() for line in lines)
    body = re.sub(r"^(?:[WBOS](?:\([^)]*\))?\s+)?(?:@[\w.-]+[\s,]*)*:?\s*", "", body)
    pieces = re.split(r"(?<=[.;!?。；])\s+|\s*(?:->|→)\s*|,?\s+\b(?:then|and then|afterwards)\b\s+|然后", body)
    steps = [p.strip(" .;") for p in pieces if p and p.strip(" .;")]
    return [s[0].upper() + s[1:] if s else s for s in steps][:MAX_STEPS] or [body.strip()]


def analyse_offline(chunk: MemoryChunk) -> SkillCandidate:
    """A draft from the text alone: name from its first words, steps from its sentences, triggers from
    its section and main words. Confidence 0.7, plus 0.05 per step beyond the first (at most 0.2) and
    0.02 per use beyond the threshold (at most 0.1)."""
    text = (chunk.content or chunk.text).strip()
    steps = split_steps(text)
    first = re.split(r"(?<=[.!?。])\s", " ".join(text.split()), maxsplit=1)[0]
    description = first if len(first) <= 200 else first[:199] + "…"
    words = [w for w in dict.fromkeys(tokens(text)) if len(w) > 2][:3]
    triggers = []
    if chunk.heading:
        triggers.append(f"The conversation is about {chunk.heading.split(' › ')[-1]}")
    if words:
        triggers.append(f"The user asks about {', '.join(words)}")
    for entity in (chunk.entities or [])[:2]:
        triggers.append(f"{entity} is mentioned")
    extra_uses = max(0, chunk.hits - settings.SKILL_PROMOTION_THRESHOLD)
    confidence = 0.7 + min(0.2, 0.05 * max(0, len(steps) - 1)) + min(0.1, 0.02 * extra_uses)
    return SkillCandidate(
        name=slugify(first) or f"skill-{chunk.hash[:8]}",
        description=description,
        triggers=triggers or ["The task this memory describes comes up again"],
        steps=steps,
        confidence=round(min(0.95, confidence), 2),
    )


def analyse_with_llm(chunk: MemoryChunk) -> SkillCandidate:
    """The LLM's analysis of the pattern (raises the LLM client's errors; ValueError for a bad reply)."""
    from reflection_site import llm

    messages = load_prompt("guardian_app", PROMPT_VERSION).messages(
        user={"source": chunk.source_ref, "heading": chunk.heading or "", "hits": chunk.hits,
              "text": chunk.content or chunk.text}
    )  # fmt: skip
    reply = llm.complete_json(messages)
    data = reply.data
    steps = [" ".join(str(s).split()) for s in data.get("steps") or [] if str(s).strip()][:MAX_STEPS]
    triggers = [" ".join(str(t).split()) for t in data.get("triggers") or [] if str(t).strip()][:8]
    try:
        confidence = min(1.0, max(0.0, float(data.get("confidence", 0))))
    except (TypeError, ValueError):
        confidence = 0.0
    return SkillCandidate(
        name=slugify(str(data.get("name") or ""), words=8) or slugify(chunk.content or chunk.text),
        description=" ".join(str(data.get("description") or "").split())[:300],
        triggers=triggers,
        steps=steps,
        confidence=round(confidence, 2),
        model=reply.model,
    )


def render_skill(candidate: SkillCandidate, *, source: str, source_hash: str, hits: int) -> str:
    """The SKILL.md draft: front matter (name, description, source pattern), triggers, steps, confidence."""
    metadata = json.dumps(
        {"source": "reflection-skill-draft", "pattern": source, "patternHash": source_hash, "hits": hits},
        ensure_ascii=False,
    )
    triggers = "\n".join(f"- {t}" for t in candidate.triggers) or "- (none given)"
    steps = "\n".join(f"{i}. {s}" for i, s in enumerate(candidate.steps, start=1)) or "1. (none given)"
    return (
        "---\n"
        f"name: {candidate.name}\n"
        f"description: {json.dumps(candidate.description, ensure_ascii=False)}\n"
        f"metadata: {metadata}\n"
        "---\n\n"
        f"# {candidate.name}\n\n"
        f"> Drafted by Reflection from `{source}`, recalled {hits} times\n"
        f"> Confidence: {candidate.confidence * 100:.0f}%\n"
        "> Needs a person's review\n\n"
        "## Triggers\n\n"
        f"{triggers}\n\n"
        "## Steps\n\n"
        f"{steps}\n\n"
        "---\n\n"
        "_This skill was drafted from a memory the agent kept using; review it before use._\n"
    )


def _unique_name(name: str) -> str:
    name = name if NAME_RE.match(name) else (slugify(name) or "skill")
    taken = set(SkillDraft.objects.filter(name__startswith=name[:56]).values_list("name", flat=True))
    skills_dir = Path(settings.WORKSPACE_DIR) / "skills"
    candidate, n = name, 1
    while candidate in taken or (skills_dir / candidate).exists():
        n += 1
        candidate = f"{name[: 64 - len(str(n)) - 1]}-{n}"
    return candidate


def propose_drafts(*, run: ReflectRun | None = None, threshold: int | None = None) -> list[SkillDraft]:
    """A draft for each pattern recalled at least ``threshold`` times without one yet (LLM, else offline)."""
    from reflection_site import llm

    created: list[SkillDraft] = []
    for chunk in find_candidates(threshold=threshold):
        candidate: SkillCandidate | None = None
        if llm.is_configured():
            try:
                candidate = analyse_with_llm(chunk)
            except (llm.LLMError, ValueError) as exc:
                logger.warning("skill draft of %s: the LLM failed (%s); drafting offline", chunk.source_ref, exc)
        if candidate is None:
            candidate = analyse_offline(chunk)
        rejected = candidate.confidence < settings.SKILL_MIN_CONFIDENCE or not candidate.steps
        candidate.name = _unique_name(candidate.name)
        draft = SkillDraft(
            name=candidate.name,
            description=candidate.description or (chunk.content or chunk.text)[:200],
            triggers=candidate.triggers,
            steps=candidate.steps,
            confidence=candidate.confidence,
            source_path=chunk.path,
            source_start_line=chunk.start_line,
            source_end_line=chunk.end_line,
            source_hash=chunk.hash,
            source_text=chunk.content or chunk.text,
            hits=chunk.hits,
            content=render_skill(candidate, source=chunk.source_ref, source_hash=chunk.hash, hits=chunk.hits),
            llm_model="" if candidate.model == OFFLINE_MODEL else candidate.model,
            run=run,
        )
        if rejected:
            draft.status = SkillDraft.Status.REJECTED
            draft.reviewed_by = "reflect"
            draft.reviewed_at = timezone.now()
            draft.review_reason = (
                f"not a skill: confidence {candidate.confidence:.2f} < {settings.SKILL_MIN_CONFIDENCE}"
            )
        try:
            with transaction.atomic():
                draft.save(force_insert=True)
        except IntegrityError:
            continue  # Another run drafted this pattern first.
        if not rejected:
            created.append(draft)
    return created


# --- Review ---------------------------------------------------------------------------------------------
def refresh_content(draft: SkillDraft) -> None:
    """Render the draft's SKILL.md again from its (edited) fields."""
    if not NAME_RE.match(draft.name or ""):
        raise SkillError("A skill name is lower-case letters, digits and hyphens (at most 64).", status=422)
    candidate = SkillCandidate(
        name=draft.name,
        description=draft.description,
        triggers=list(draft.triggers or []),
        steps=list(draft.steps or []),
        confidence=draft.confidence,
    )
    source = f"{draft.source_path}#L{draft.source_start_line}" + (
        f"-L{draft.source_end_line}" if draft.source_end_line != draft.source_start_line else ""
    )
    draft.content = render_skill(candidate, source=source, source_hash=draft.source_hash, hits=draft.hits)


def skill_path(name: str) -> Path:
    """``<workspace>/skills/<name>/SKILL.md`` for a valid name, inside the workspace (no symlink out)."""
    if not NAME_RE.match(name or ""):
        raise SkillError("A skill name is lower-case letters, digits and hyphens (at most 64).", status=422)
    root = Path(settings.WORKSPACE_DIR).resolve()
    path = root / "skills" / name / "SKILL.md"
    for folder in (root / "skills", root / "skills" / name):
        if folder.is_symlink():
            raise SkillError(f"{folder.relative_to(root)} is a symbolic link; refusing to write through it.")
    return path


def _existing_text(path: Path, rel: str) -> str | None:
    """The skill file's text, None when absent; a link or a FIFO in its place is refused (never read through,
    never waited on)."""
    from reflection_site.safe_files import open_regular

    try:
        fd, _ = open_regular(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SkillError(f"{rel} is {exc.strerror}, not a regular file; remove it first.") from exc
    with open(fd, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")


def approve_draft(draft: SkillDraft, *, reviewed_by: str, reason: str = "") -> SkillDraft:
    """Write the draft to ``skills/<name>/SKILL.md`` and mark it approved.

    Raises SkillError when it is not pending, or a different skill of that name exists already.
    """
    if draft.status != SkillDraft.Status.PENDING:
        raise SkillError(f"The draft {draft.name} was already {draft.status}.")
    path = skill_path(draft.name)
    rel = path.relative_to(Path(settings.WORKSPACE_DIR).resolve()).as_posix()
    if _existing_text(path, rel) not in (None, draft.content):
        raise SkillError(f"{rel} exists already with other content; rename the draft or remove that skill first.")
    with transaction.atomic():
        claimed = SkillDraft.objects.filter(id=draft.id, status=SkillDraft.Status.PENDING).update(
            status=SkillDraft.Status.APPROVED,
            reviewed_by=reviewed_by[:255],
            reviewed_at=timezone.now(),
            review_reason=reason,
            written_path=rel,
        )
        if not claimed:
            raise SkillError(f"The draft {draft.name} was reviewed meanwhile.")
        atomic_write(path, draft.content)
    draft.refresh_from_db()
    logger.info("skill %s approved by %s: %s", draft.name, reviewed_by, rel)
    return draft


def reject_draft(draft: SkillDraft, *, reviewed_by: str, reason: str) -> SkillDraft:
    """Mark the draft rejected with the reviewer's reason (required)."""
    reason = (reason or "").strip()
    if not reason:
        raise SkillError("Say why the draft is rejected.", status=422)
    updated = SkillDraft.objects.filter(id=draft.id, status=SkillDraft.Status.PENDING).update(
        status=SkillDraft.Status.REJECTED,
        reviewed_by=reviewed_by[:255],
        reviewed_at=timezone.now(),
        review_reason=reason,
    )
    if not updated:
        raise SkillError(f"The draft {draft.name} was already {draft.status}.")
    draft.refresh_from_db()
    return draft
