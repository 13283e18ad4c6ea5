"""The write guardian: the one guarded path by which anything is written to a memory file.

``guard_write`` (and ``write_fact`` for a gate decision, ``retry_write`` for an operator's retry):

1. Look for the audit of this decision (or ``(source, source_ref)``): a redelivered task returns it.
2. Deterministic checks that need no model: an empty or over-long fact is refused, a fact carrying a
   secret is refused (and never sent to an LLM), an instruction-like fact ("ignore previous
   instructions…", role or tool-call syntax, "write this to settings.py") is held for review
   (status ``skipped``, ``held_for_review``) — memory poisoning is a published attack on agent memory.
3. Ask the guardian: the LLM (prompt ``prompts/guardian-v1.*``, with the fact, the file as it is on disk
   now and the operators' corrections), with no lock and no transaction open; or, with no LLM configured,
   the offline guardian (``heuristic_guardian``) under the lock.
4. Under the file lock: reconcile (record a hand edit, finish an interrupted write), re-read the file;
   if it changed while the LLM was thinking, ask again (``GUARDIAN_MAX_LLM_STEPS``).
5. Apply the edits deterministically (a ``find`` must match exactly once) and refuse a result that
   removes more than ``GUARDIAN_MAX_REMOVED_LINES`` lines, empties the file, or adds a secret, an
   instruction or invisible control/bidi characters (the fact itself loses those before step 2).
6. Write-ahead: commit the audit as ``failed`` ("interrupted before the write was recorded") with its
   after-snapshot and mark it pending on the file; replace the file atomically; then mark the audit
   ``written`` and record the file version. A crash in between is finished by the next run or drift check.

Statuses: ``written``, ``refused``, ``failed``, ``skipped`` (and ``rolled_back`` later). ``agent_steps``
counts the LLM calls (attempts included); the offline guardian makes none.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from guardian_app.errors import GuardianError, InvalidEdits, NotRetryable, UnsafeFile
from guardian_app.models import BehaviorCorrection, WorkspaceFile, WriteGuardianAudit
from guardian_app.write import attribution, heuristic_guardian, workspace
from guardian_app.write.diffs import diff_and_stats, diff_stats, unified_diff
from guardian_app.write.heuristic_guardian import GuardianCorrection, instruction_like, one_line
from reflection_site import memory_files
from sessions_app.models import Decision, MemoryGateDecision

logger = logging.getLogger(__name__)

PROMPT_VERSION = "guardian-v1"
PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
MAX_EDITS = 20
Status = WriteGuardianAudit.Status


# --- Prompt --------------------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _templates(version: str) -> tuple[string.Template, string.Template]:
    system = (PROMPT_DIR / f"{version}.system.txt").read_text(encoding="utf-8")
    user = (PROMPT_DIR / f"{version}.user.txt").read_text(encoding="utf-8")
    return string.Template(system), string.Template(user)


def active_corrections(limit: int = 50) -> list[GuardianCorrection]:
    """The operators' corrections marked ``apply_to_future`` that carry a pattern, newest first."""
    rows = (
        BehaviorCorrection.objects.for_prompt().exclude(correction_pattern__isnull=True).exclude(correction_pattern="")
    )
    return [
        GuardianCorrection(
            pattern=row.correction_pattern or "",
            corrected_status=row.corrected_status,
            reason=row.correction_reason,
            correction_id=row.id,
            corrected_target_file=row.corrected_target_file,
        )
        for row in rows[:limit]
    ]


def build_messages(
    fact: str,
    content: str | None,
    *,
    target_file: str,
    corrections: list[GuardianCorrection],
    version: str = PROMPT_VERSION,
) -> list[dict[str, str]]:
    """The chat messages for the guardian prompt ``version`` (a template pair in ``prompts/``)."""
    system, user = _templates(version)
    correction_lines = "\n".join(
        json.dumps(
            {
                "id": c.correction_id,
                "pattern": c.pattern,
                "corrected_status": c.corrected_status,
                "corrected_target_file": c.corrected_target_file,
                "reason": c.reason,
            },
            ensure_ascii=False,
        )
        for c in corrections
    )
    return [
        {
            "role": "system",
            "content": system.substitute(
                max_removed=settings.GUARDIAN_MAX_REMOVED_LINES, corrections=correction_lines or "(none)"
            ),
        },
        {"role": "user", "content": user.substitute(file_name=target_file, content=content or "", fact=fact)},
    ]


def validate_reply(data: dict[str, Any]) -> dict[str, Any]:
    """The LLM's reply checked for shape; ValueError (an unparseable reply, retried) when it is not."""
    action = str(data.get("action", "")).strip().lower()
    if action not in {"write", "refuse"}:
        raise ValueError("action must be 'write' or 'refuse'")
    edits = data.get("edits") or []
    if not isinstance(edits, list) or len(edits) > MAX_EDITS:
        raise ValueError(f"edits must be a list of at most {MAX_EDITS}")
    for edit in edits:
        if not isinstance(edit, dict) or edit.get("op") not in {"append", "replace", "delete"}:
            raise ValueError("each edit needs op append, replace or delete")
        for key in ("section", "text", "find"):
            if key in edit and edit[key] is not None and not isinstance(edit[key], str):
                raise ValueError(f"edit {key} must be text")
    if action == "write" and not edits:
        raise ValueError("a write needs at least one edit")
    return {"action": action, "reason": str(data.get("reason") or "").strip(), "edits": edits}


# --- Edits ---------------------------------------------------------------------------------------
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _section_bounds(lines: list[str], section: str) -> tuple[int, int, int] | None:
    """(heading index, level, end index) of the first heading whose text is ``section`` (case-insensitive)."""
    wanted = section.strip().lstrip("#").strip().casefold()
    for i, line in enumerate(lines):
        match = _HEADING_RE.match(line.rstrip("\r\n"))
        if match and match.group(2).strip().casefold() == wanted:
            level = len(match.group(1))
            end = len(lines)
            for j in range(i + 1, len(lines)):
                other = _HEADING_RE.match(lines[j].rstrip("\r\n"))
                if other and len(other.group(1)) <= level:
                    end = j
                    break
            return i, level, end
    return None


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _append(content: str, section: str | None, text: str) -> str:
    block = _with_newline(text.strip("\n"))
    if not content.strip():
        if section:
            return f"## {section.strip().lstrip('#').strip()}\n\n{block}"
        return block
    lines = content.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    if not section:
        return "".join(lines) + block
    bounds = _section_bounds(lines, section)
    if bounds is None:
        tail = "" if lines[-1].strip() == "" else "\n"
        return "".join(lines) + f"{tail}## {section.strip().lstrip('#').strip()}\n\n{block}"
    start, _, end = bounds
    insert_at = end
    while insert_at > start + 1 and lines[insert_at - 1].strip() == "":
        insert_at -= 1
    if insert_at == start + 1:  # An empty section: keep one blank line after the heading.
        lines[insert_at:insert_at] = ["\n", block]
    else:
        lines[insert_at:insert_at] = [block]
    return "".join(lines)


def _find_once(content: str, find: str) -> int:
    if not find:
        raise InvalidEdits("an edit's 'find' is empty")
    count = content.count(find)
    if count != 1:
        raise InvalidEdits(f"'find' must match exactly once, matched {count} times: {find[:80]!r}")
    return content.index(find)


def apply_edits(content: str | None, edits: list[dict[str, Any]]) -> str:
    """Apply the guardian's edits in order; InvalidEdits when one cannot be applied as asked."""
    text = content or ""
    for edit in edits:
        op = edit.get("op")
        if op == "append":
            addition = edit.get("text") or ""
            if not addition.strip():
                raise InvalidEdits("an append edit has no text")
            text = _append(text, edit.get("section"), addition)
        elif op == "replace":
            at = _find_once(text, edit.get("find") or "")
            find = edit["find"]
            text = text[:at] + (edit.get("text") or "") + text[at + len(find) :]
        elif op == "delete":
            find = edit.get("find") or ""
            at = _find_once(text, find)
            end = at + len(find)
            # Deleting whole lines takes their line break with them.
            if (at == 0 or text[at - 1] == "\n") and text[end : end + 1] == "\n":
                end += 1
            text = text[:at] + text[end:]
        else:
            raise InvalidEdits(f"unknown edit op {op!r}")
    return text


def check_result(
    before: str | None, after: str, *, max_removed_lines: int | None = None, allow_instructions: bool = False
) -> str | None:
    """Why the edited file must not be written, or None: too many lines removed, emptied, a secret, an
    instruction (unless ``allow_instructions``: an operator's retry of a held fact) or hidden characters added.

    ``max_removed_lines`` replaces GUARDIAN_MAX_REMOVED_LINES for a caller that owns part of the file
    (reflect may rewrite the block it generated on its pages).
    """
    from reflection_site.privacy import contains_secret

    stats = diff_stats(before, after)
    limit = settings.GUARDIAN_MAX_REMOVED_LINES if max_removed_lines is None else max_removed_lines
    if stats.removed_total > limit:
        return f"the edits would remove or rewrite {stats.removed_total} lines (more than GUARDIAN_MAX_REMOVED_LINES={limit})"
    if (before or "").strip() and not after.strip():
        return "the edits would empty the file"
    added = "".join(
        line[1:]
        for line in unified_diff(before, after, "x", context=0).splitlines(keepends=True)
        if line.startswith("+") and not line.startswith("+++")
    )
    if added and contains_secret(added):
        return "the result would contain a secret (a key, token or password); secrets are never written"
    if HIDDEN_CHARACTERS.search(added):
        return "the edits would add invisible control or bidi characters, which can hide what a line says"
    # The fact passed this check before the guardian saw it; an instruction now came from the guardian itself.
    why = None if allow_instructions else instruction_like(added)
    if why is not None:
        return f"the edits would add text that reads as an instruction to the agent ({why}), not a fact"
    return None


# Characters a reader does not see that change what a line shows: C0 and C1 controls (but tab, newline and
# carriage return), bidi embeddings, overrides, isolates and marks, zero-width space, line and paragraph
# separators, BOM. In a memory file they can hide or reorder text ("Trojan Source"). A fact loses them (a
# separator becomes a space) before anything else looks at it; an edit that adds them is refused. ZWJ and
# ZWNJ stay (emoji sequences and some scripts need them).
HIDDEN_CHARACTERS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]"
)


def visible(text: str) -> str:
    """``text`` without HIDDEN_CHARACTERS (the spacing ones become a space)."""
    return HIDDEN_CHARACTERS.sub(lambda m: " " if m.group().isspace() else "", text)


# --- The outcome of one guardian run -------------------------------------------------------------
@dataclass
class Outcome:
    status: str
    reason: str
    new_content: str | None = None
    edits: list[dict[str, Any]] | None = None
    llm_model: str | None = None
    llm_latency_ms: int | None = None
    agent_steps: int = 0
    prompt_version: str = ""
    held_for_review: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _outside_section(text: str | None, section: str) -> str:
    """``text`` without the section headed ``section`` (heading and body)."""
    lines = (text or "").splitlines(keepends=True)
    bounds = _section_bounds(lines, section)
    if bounds is not None:
        del lines[bounds[0] : bounds[2]]
    return "".join(lines).rstrip()


def _profile_refusal(name: str, before: str | None, after: str) -> str | None:
    """The workspace profile's rules for ``name``: a file the agent loads may not grow past what it loads
    (OpenClaw cuts USER.md at 4,000 characters, the others at 20,000), and a file Reflection writes only
    under one heading (AGENTS.md: ``## Tools``) may not change anywhere else."""
    profile = memory_files.active()
    section = profile.section_for(name)
    if section is not None and _outside_section(before, section) != _outside_section(after, section):
        return f"the edits would change {name} outside its ## {section} section, the only part Reflection writes"
    return memory_files.over_limit(profile, name, before, after)


def _outcome_from_reply(
    content: str | None,
    reply: dict[str, Any],
    *,
    target_file: str | None = None,
    max_removed_lines: int | None = None,
    allow_instructions: bool = False,
    **meta: Any,
) -> Outcome:
    """Turn ``{action, reason, edits}`` into an outcome against ``content`` (the file under the lock).

    ``target_file`` brings the workspace profile's rules: appends go under the file's one section (tool facts
    under AGENTS.md ``## Tools``), and ``_profile_refusal`` applies."""
    if reply["action"] == "refuse":
        return Outcome(
            Status.REFUSED, reply["reason"] or "refused by the guardian", edits=reply["edits"] or None, **meta
        )
    section = memory_files.active().section_for(target_file) if target_file else None
    if section is not None:
        reply = {
            **reply,
            "edits": [{**e, "section": section} if e.get("op") == "append" else e for e in reply["edits"]],
        }
    try:
        new_content = apply_edits(content, reply["edits"])
    except InvalidEdits as exc:
        return Outcome(
            Status.FAILED, f"the guardian's edits could not be applied: {exc.message}", edits=reply["edits"], **meta
        )
    if new_content == (content or "") and content is not None:
        return Outcome(Status.SKIPPED, "the edits change nothing", edits=reply["edits"], **meta)
    refusal = check_result(
        content, new_content, max_removed_lines=max_removed_lines, allow_instructions=allow_instructions
    )
    if refusal is None and target_file is not None:
        refusal = _profile_refusal(target_file, content, new_content)
    if refusal is not None:
        return Outcome(Status.REFUSED, refusal, edits=reply["edits"], **meta)
    return Outcome(Status.WRITTEN, reply["reason"] or "written", new_content=new_content, edits=reply["edits"], **meta)


def precheck(fact: str, *, review_held: bool = False, hold_reason: str | None = None) -> Outcome | None:
    """The checks that need no model (run before the LLM sees the fact). ``hold_reason``: the caller already
    knows the fact must be held (a rule for the agent from someone who is not the workspace's owner)."""
    from reflection_site.privacy import contains_secret, is_redacted

    text = one_line(fact)
    if not text:
        return Outcome(Status.REFUSED, "empty fact")
    if len(text) > settings.GUARDIAN_MAX_FACT_CHARS:
        return Outcome(
            Status.REFUSED, f"the fact is longer than GUARDIAN_MAX_FACT_CHARS={settings.GUARDIAN_MAX_FACT_CHARS}"
        )
    if contains_secret(fact):
        return Outcome(
            Status.REFUSED, "the fact carries a secret (a key, token or password); secrets are never written"
        )
    if is_redacted(fact):  # e.g. the retry of a refusal, whose value was redacted (guardian_app/write/refusals.py)
        return Outcome(Status.REFUSED, "the fact holds a redacted value ([EMAIL], [SECRET] …): its text is gone")
    if not review_held:
        if hold_reason is not None:
            return Outcome(Status.SKIPPED, f"held for review: {hold_reason}", held_for_review=True)
        why = instruction_like(fact)
        if why is not None:
            return Outcome(
                Status.SKIPPED,
                f"held for review: the fact reads as an instruction to the agent ({why}), not a fact",
                held_for_review=True,
            )
    return None


# --- Recording -----------------------------------------------------------------------------------
def _find_existing(
    *, decision: MemoryGateDecision | None, source: str, source_ref: str, retry_of: Any
) -> WriteGuardianAudit | None:
    if retry_of is not None:
        return None
    if decision is not None:
        return WriteGuardianAudit.objects.filter(decision=decision, retry_of__isnull=True).first()
    if source_ref:
        return WriteGuardianAudit.objects.filter(
            source=source, source_ref=source_ref, decision__isnull=True, retry_of__isnull=True
        ).first()
    return None


def _new_audit(
    name: str,
    fact: str,
    *,
    decision: MemoryGateDecision | None,
    source: str,
    source_ref: str,
    retry_of: WriteGuardianAudit | None,
    requested_by: str,
) -> WriteGuardianAudit:
    turn_id = session_id = None
    if decision is not None:
        turn_id, session_id = decision.turn_id, decision.session_id
    elif retry_of is not None:
        turn_id, session_id = retry_of.turn_id, retry_of.session_id
    return WriteGuardianAudit(
        decision=decision,
        turn_id=turn_id,
        session_id=session_id,
        source=source,
        source_ref=source_ref or "",
        retry_of=retry_of,
        requested_by=requested_by or "system",
        target_file=name,
        candidate_fact=fact,
    )


def _record_locked(state: workspace.FileState, outcome: Outcome, audit: WriteGuardianAudit) -> WriteGuardianAudit:
    """Store the outcome (file lock held; ``state`` is the file as the guardian saw it, after ``sync``)."""
    name, content = state.name, state.content
    audit.llm_model = outcome.llm_model
    audit.llm_latency_ms = outcome.llm_latency_ms
    audit.agent_steps = outcome.agent_steps
    audit.prompt_version = outcome.prompt_version
    audit.edits = outcome.edits
    audit.held_for_review = outcome.held_for_review
    # After sync the file holds its current version's content: that version's snapshot is the before.
    audit.before_snapshot_id = state.snapshot_id if content is not None else None
    if outcome.status != Status.WRITTEN:
        audit.status, audit.reason = outcome.status, outcome.reason
        with transaction.atomic():
            audit.save(force_insert=True)
        if outcome.status == Status.REFUSED:
            logger.info("guardian refused %s for %s: %s", audit.id, name, outcome.reason)
        return audit
    new_content = outcome.new_content or ""
    audit.diff, stats = diff_and_stats(content, new_content, name)
    audit.lines_added, audit.lines_removed, audit.lines_modified = stats.added, stats.removed, stats.modified
    with transaction.atomic():
        workspace.lock_row(name)
        audit.after_snapshot = workspace.snapshot_of(name, new_content)
        audit.after_snapshot.content = new_content  # Loaded or not, it is this text.
        # Write-ahead: committed before the file is touched, so a crash leaves a trace to reconcile.
        audit.status, audit.reason = Status.FAILED, workspace.INTERRUPTED
        audit.save(force_insert=True)
        WorkspaceFile.objects.filter(file_name=name).update(pending_audit=audit)
    try:
        workspace.write_file(name, new_content)
    except UnsafeFile as exc:  # Swapped in since the file was read: nothing was written.
        with transaction.atomic():
            audit.status, audit.reason = Status.FAILED, f"nothing was written: {exc.message}"
            audit.save(update_fields=["status", "reason"])
            WorkspaceFile.objects.filter(file_name=name).update(pending_audit=None)
        return audit
    except OSError as exc:
        logger.error("guardian could not write %s: %s", name, exc)
        if not workspace.put_back(name, content):
            # The new content stayed on disk: record what the disk holds (the write-ahead audit is finished).
            workspace.sync(name)
            audit.refresh_from_db()
            return audit
        with transaction.atomic():
            audit.status, audit.reason = Status.FAILED, f"the file could not be written: {exc}"
            audit.save(update_fields=["status", "reason"])
            WorkspaceFile.objects.filter(file_name=name).update(pending_audit=None)
        return audit
    with transaction.atomic():
        workspace.lock_row(name)
        # The lock is held throughout: the version before this write is still the last one.
        workspace.finish_write(name, audit, reason=outcome.reason, previous_content=content, seq=state.seq + 1)
    return audit


def _store(
    state: workspace.FileState, outcome: Outcome, audit: WriteGuardianAudit, existing_lookup: dict[str, Any]
) -> WriteGuardianAudit:
    try:
        return _record_locked(state, outcome, audit)
    except IntegrityError:
        # Another delivery recorded this decision first (possible only without a shared lock).
        existing = _find_existing(**existing_lookup)
        if existing is None:
            raise
        return existing


def _llm():
    try:
        from reflection_site import llm
    except ImportError:  # pragma: no cover - the LLM client is part of the gate issue.
        return None
    return llm if llm.is_configured() else None


# --- The guarded write ---------------------------------------------------------------------------
def guard_write(
    *,
    target_file: str,
    candidate_fact: str,
    source: str,
    source_ref: str = "",
    decision: MemoryGateDecision | None = None,
    retry_of: WriteGuardianAudit | None = None,
    requested_by: str = "system",
    review_held: bool = False,
    hold_reason: str | None = None,
    raise_transient: bool = True,
    compose: Callable[[str | None], dict[str, Any]] | None = None,
) -> WriteGuardianAudit:
    """The one guarded write path (see the module docstring for the steps).

    ``compose`` (reflect's pages): the caller computes the edits itself from the file as it is under the
    lock, ``compose(content) -> {action, reason, edits, max_removed_lines?, model?}``, instead of asking a
    guardian; every other step (checks, snapshots, write-ahead audit, history, rollback) is the same.

    Idempotent per decision (first audit of it) and per ``(source, source_ref)`` when ``source_ref`` is
    set; a retry (``retry_of``) always makes a new audit. ``review_held`` skips the instruction check
    (an operator's retry of a held fact is the review). Transient LLM errors are raised for the Celery
    task to retry, or, with ``raise_transient=False``, recorded as a ``failed`` audit.
    Raises UnknownFile for a name outside the five files.
    """
    name = workspace.canonical_name(target_file)
    if source not in WriteGuardianAudit.Source.values:
        raise GuardianError(f"unknown source {source!r}")
    if compose is None and name not in memory_files.ALL_FILES:
        # A bank page is reflect's: its writes bring their own edits (a retry would append the audit's text).
        raise NotRetryable(f"{name} is written by the reflect job; run reflect again instead.")
    fact = visible(candidate_fact or "").strip()
    lookup = {"decision": decision, "source": source, "source_ref": source_ref, "retry_of": retry_of}

    def fresh() -> WriteGuardianAudit:
        return _new_audit(
            name,
            fact,
            decision=decision,
            source=source,
            source_ref=source_ref,
            retry_of=retry_of,
            requested_by=requested_by,
        )

    existing = _find_existing(**lookup)
    if existing is not None and not (existing.status == Status.FAILED and existing.reason == workspace.INTERRUPTED):
        return existing
    unsafe = workspace.refusal_of(name)
    if unsafe is not None:  # A link, a FIFO …: nothing is read through it, and the write fails visibly.
        nothing = workspace.FileState(name, None, None, False, 0, None, None, None)
        with workspace.file_lock(name):
            return _store(nothing, Outcome(Status.FAILED, f"nothing was written: {unsafe.message}"), fresh(), lookup)

    early = precheck(fact, review_held=review_held, hold_reason=hold_reason)
    llm = _llm() if early is None and compose is None else None
    if early is not None or llm is None:
        with workspace.file_lock(name):
            state = workspace.sync(name)
            existing = _find_existing(**lookup)
            if existing is not None:
                return existing
            outcome = early
            if outcome is None and compose is not None:
                reply = compose(state.content)
                outcome = _outcome_from_reply(
                    state.content,
                    validate_reply(reply),
                    target_file=name,
                    llm_model=str(reply.get("model") or source),
                    max_removed_lines=reply.get("max_removed_lines"),
                    allow_instructions=review_held,
                )
            if outcome is None:
                verdict = heuristic_guardian.review_fact(
                    fact, state.content, target_file=name, corrections=active_corrections()
                )
                outcome = _outcome_from_reply(
                    state.content,
                    verdict.as_reply(),
                    target_file=name,
                    llm_model=heuristic_guardian.MODEL_NAME,
                    allow_instructions=review_held,
                )
            return _store(state, outcome, fresh(), lookup)

    corrections = active_corrections()
    steps = 0
    latency = 0
    max_steps = max(1, int(settings.GUARDIAN_MAX_LLM_STEPS))
    for step in range(1, max_steps + 1):
        seen = workspace.read_file(name)
        messages = build_messages(fact, seen, target_file=name, corrections=corrections)
        try:
            reply = llm.complete_json(messages, validate=validate_reply)
        except llm.TRANSIENT_ERRORS as exc:
            if raise_transient:
                raise
            outcome = Outcome(
                Status.FAILED,
                f"the LLM guardian gave no usable reply: {exc}",
                agent_steps=steps + getattr(exc, "attempts", 1),
                llm_model=settings.LLM_MODEL,
                prompt_version=PROMPT_VERSION,
            )
            with workspace.file_lock(name):
                return _store(workspace.sync(name), outcome, fresh(), lookup)
        except llm.LLMError as exc:
            outcome = Outcome(
                Status.FAILED,
                f"the LLM guardian failed: {exc}",
                agent_steps=steps + getattr(exc, "attempts", 1),
                llm_model=settings.LLM_MODEL,
                prompt_version=PROMPT_VERSION,
            )
            with workspace.file_lock(name):
                return _store(workspace.sync(name), outcome, fresh(), lookup)
        steps += reply.attempts
        latency += reply.latency_ms
        meta = {
            "llm_model": reply.model,
            "llm_latency_ms": latency,
            "agent_steps": steps,
            "prompt_version": PROMPT_VERSION,
        }
        with workspace.file_lock(name):
            state = workspace.sync(name)
            existing = _find_existing(**lookup)
            if existing is not None:
                return existing
            content = state.content
            if content != seen and step < max_steps:
                logger.info("guardian: %s changed while the LLM was deciding; asking again", name)
                continue
            outcome = _outcome_from_reply(
                content, validate_reply(reply.data), target_file=name, allow_instructions=review_held, **meta
            )
            if content != seen and outcome.status == Status.FAILED:
                outcome.reason = f"{name} kept changing while the guardian decided; {outcome.reason}"
            return _store(state, outcome, fresh(), lookup)
    raise AssertionError("unreachable")  # pragma: no cover


def write_fact(decision: MemoryGateDecision) -> WriteGuardianAudit:
    """Fold one ``UPDATE_*`` gate decision into its file (idempotent: one audit per decision)."""
    target = memory_files.active().file_for_decision.get(decision.decision)
    if target is None:
        raise GuardianError(f"decision {decision.id} is {decision.decision}: nothing to write", code="nothing_to_write")
    # Whose fact it is: another person's fact is written with them named, their rules for the agent held.
    routed = attribution.route(decision, target, decision.candidate_fact or "")
    return guard_write(
        target_file=routed.target_file,
        candidate_fact=routed.fact,
        source="gate",
        decision=decision,
        hold_reason=routed.hold_reason,
    )


def retry_write(
    audit: WriteGuardianAudit, *, candidate_fact: str | None = None, target_file: str | None = None, requested_by: str
) -> WriteGuardianAudit:
    """A new audit for the same decision with an optional new fact and/or file, linked to the one it retries.

    Runs now (not queued), so the operator sees the outcome. A retry of a fact held for review is the
    review: the instruction check is skipped, every other check still applies.
    """
    name = workspace.canonical_name(target_file) if target_file else audit.target_file
    fact = (candidate_fact or "").strip() or audit.candidate_fact
    if not fact.strip():
        raise NotRetryable("there is no fact to retry with; give candidate_fact")
    return guard_write(
        target_file=name,
        candidate_fact=fact,
        source=WriteGuardianAudit.Source.RETRY,
        decision=audit.decision,
        retry_of=audit,
        requested_by=requested_by,
        review_held=audit.held_for_review,
        raise_transient=False,
    )


def record_failure(
    *,
    decision_id: str | None = None,
    target_file: str | None = None,
    candidate_fact: str | None = None,
    source: str = "gate",
    source_ref: str = "",
    error: str,
) -> WriteGuardianAudit | None:
    """A task whose retries are spent: record a ``failed`` audit (once) so the write stays visible."""
    decision = MemoryGateDecision.objects.filter(id=decision_id).first() if decision_id else None
    if decision is not None:
        target_file = memory_files.active().file_for_decision.get(decision.decision)
        candidate_fact = decision.candidate_fact
    if target_file is None:
        return None
    name = workspace.canonical_name(target_file)
    lookup = {"decision": decision, "source": source, "source_ref": source_ref, "retry_of": None}
    existing = _find_existing(**lookup)
    if existing is not None:
        return existing
    audit = _new_audit(
        name,
        candidate_fact or "",
        decision=decision,
        source=source,
        source_ref=source_ref,
        retry_of=None,
        requested_by="system",
    )
    audit.status, audit.reason = Status.FAILED, f"the guardian gave up after its retries: {error}"[:2000]
    try:
        with transaction.atomic():
            audit.save(force_insert=True)
    except IntegrityError:
        return _find_existing(**lookup)
    return audit


def sweep_pending_decisions(*, grace_s: int | None = None, limit: int = 1000) -> int:
    """Re-enqueue ``UPDATE_*`` decisions that have no audit ``grace_s`` seconds after they were made, and
    finish writes interrupted that long ago (a write-ahead audit whose worker died) without waiting for
    the drift check. Returns the number of decisions re-enqueued."""
    from guardian_app.tasks import run_guardian

    grace = settings.GUARDIAN_SWEEP_GRACE_S if grace_s is None else grace_s
    cutoff = timezone.now() - dt.timedelta(seconds=grace)
    interrupted = list(
        WorkspaceFile.objects.filter(pending_audit__isnull=False, pending_audit__created_at__lte=cutoff).values_list(
            "file_name", flat=True
        )
    )
    if interrupted:
        workspace.check_drift(interrupted)
    audited = WriteGuardianAudit.objects.filter(decision=OuterRef("pk"), retry_of__isnull=True)
    ids = list(
        MemoryGateDecision.objects.exclude(decision=Decision.NO_WRITE)
        .filter(created_at__lte=cutoff)
        .filter(~Exists(audited))
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    sent = 0
    for decision_id in ids:
        try:
            run_guardian.delay(decision_id)
        except Exception as exc:  # noqa: BLE001 - a dead broker: the next sweep tries again.
            logger.warning("guardian sweep: could not enqueue %s: %s", decision_id, exc)
            break
        sent += 1
    if sent:
        logger.info("guardian sweep: re-enqueued %d decision(s)", sent)
    return sent
