"""The write guardian: the one guarded path by which anything is written to a memory file.

``guard_write`` (and ``write_fact`` for a gate decision, ``retry_write`` for an operator's retry):

1. Look for the audit of this decision (or ``(source, source_ref)``): a redelivered task returns it (before
   asking the LLM; a decision made here is looked for only under the lock, in step 4).
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
   Steps 2 to 5 are ``decide``: pure, and what ``dataset_app.evaluate`` scores.
6. Write-ahead (``history.write_ahead``): commit the audit as ``failed`` ("interrupted before the write was
   recorded") with its after-snapshot and mark it pending on the file; replace the file atomically; then
   mark the audit ``written`` and record the file version. A crash in between is finished by the next run
   or drift check (``history.sync``).

Statuses: ``written``, ``refused``, ``failed``, ``skipped`` (and ``rolled_back`` later). ``agent_steps``
counts the LLM calls (attempts included); the offline guardian makes none. The edits and their checks are
in ``edits``, the prompt in ``guardian_prompt``, what happens when a write never ran in ``recovery``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from guardian_app.errors import GuardianError, InvalidEdits, NotRetryable, UnsafeFile
from guardian_app.models import WriteGuardianAudit
from guardian_app.write import attribution, heuristic_guardian, history, locks, paths, workspace
from guardian_app.write.diffs import diff_and_stats
from guardian_app.write.edits import apply_edits, check_result, profile_refusal, visible
from guardian_app.write.guardian_prompt import PROMPT_VERSION, active_corrections, build_messages, validate_reply
from guardian_app.write.heuristic_guardian import GuardianCorrection, instruction_like, one_line
from reflection_site import llm, memory_files
from reflection_site.privacy import contains_secret, is_redacted
from reflection_site.rows import RowReader
from sessions_app.models import MemoryGateDecision

logger = logging.getLogger(__name__)

Status = WriteGuardianAudit.Status


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
        refusal = profile_refusal(target_file, content, new_content)
    if refusal is not None:
        return Outcome(Status.REFUSED, refusal, edits=reply["edits"], **meta)
    return Outcome(Status.WRITTEN, reply["reason"] or "written", new_content=new_content, edits=reply["edits"], **meta)


def precheck(fact: str, *, review_held: bool = False, hold_reason: str | None = None) -> Outcome | None:
    """The checks that need no model (run before the LLM sees the fact). ``hold_reason``: the caller already
    knows the fact must be held (a rule for the agent from someone who is not the workspace's owner)."""
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


def decide(
    fact: str,
    content: str | None,
    *,
    target_file: str,
    reply: dict[str, Any] | None = None,
    corrections: Sequence[GuardianCorrection] = (),
    review_held: bool = False,
    hold_reason: str | None = None,
    max_removed_lines: int | None = None,
    prechecked: bool = False,
    **meta: Any,
) -> Outcome:
    """The guardian's decision for ``fact`` and the text of ``target_file`` (``content``; None: no file).

    Pure: no I/O, no database. First the checks that need no model (``precheck``); then the guardian's
    reply, ``reply`` as the LLM (or reflect's ``compose``) gave it (ValueError when it has not the shape
    ``validate_reply`` wants), or with none the offline guardian's verdict (``heuristic_guardian``, with the
    operators' ``corrections``); then its edits are applied to ``content`` and the result is checked, with the
    workspace profile's rules for ``target_file``. ``guard_write`` records the outcome under the file's lock;
    ``dataset_app.evaluate`` scores it against annotated samples. ``meta`` (model, latency, steps, prompt
    version) is carried into the outcome; ``prechecked``: the caller's ``precheck`` of this fact passed.
    """
    early = None if prechecked else precheck(fact, review_held=review_held, hold_reason=hold_reason)
    if early is not None:
        return early
    if reply is None:
        verdict = heuristic_guardian.review_fact(fact, content, target_file=target_file, corrections=list(corrections))
        reply = verdict.as_reply()
        meta.setdefault("llm_model", heuristic_guardian.MODEL_NAME)
    else:
        reply = validate_reply(reply)
    return _outcome_from_reply(
        content,
        reply,
        target_file=target_file,
        max_removed_lines=max_removed_lines,
        allow_instructions=review_held,
        **meta,
    )


# --- Recording -----------------------------------------------------------------------------------
def find_existing(
    *, decision: MemoryGateDecision | None, source: str, source_ref: str, retry_of: Any
) -> WriteGuardianAudit | None:
    if retry_of is not None:
        return None
    if decision is not None:  # Looked for on every write and almost never there: a written statement.
        clause = "WHERE {decision_id} = %s AND {source_ref} = %s AND {retry_of_id} IS NULL ORDER BY {id} LIMIT 1"
        return RowReader.of(WriteGuardianAudit, clause).first([decision.id, source_ref or ""])
    if source_ref:
        return WriteGuardianAudit.objects.filter(
            source=source, source_ref=source_ref, decision__isnull=True, retry_of__isnull=True
        ).first()
    return None


def new_audit(
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


def _record_locked(state: history.FileState, outcome: Outcome, audit: WriteGuardianAudit) -> WriteGuardianAudit:
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

    def intent() -> None:
        audit.after_snapshot = history.snapshot_of(name, new_content)
        audit.after_snapshot.content = new_content  # Loaded or not, it is this text.
        audit.status, audit.reason = Status.FAILED, history.INTERRUPTED
        audit.save(force_insert=True)

    def record(_: None) -> None:
        # The lock is held throughout: the version before this write is still the last one.
        history.finish_write(name, audit, reason=outcome.reason, previous_content=content, seq=state.seq + 1)

    def abandon(_: None, error: OSError | UnsafeFile) -> None:
        if isinstance(error, UnsafeFile):  # Swapped in since the file was read: nothing was written.
            audit.reason = f"nothing was written: {error.message}"
        else:
            audit.reason = f"the file could not be written: {error}"
        audit.status = Status.FAILED
        audit.save(update_fields=["status", "reason"])

    try:
        history.write_ahead(name, audit, content, new_content, intent=intent, record=record, abandon=abandon)
    except (UnsafeFile, OSError) as exc:
        if isinstance(exc, OSError):
            logger.error("guardian could not write %s: %s", name, exc)
        if audit.reason == history.INTERRUPTED:
            audit.refresh_from_db()  # The new content stayed on disk and was recorded (the write is finished).
    return audit


def _store(
    state: history.FileState, outcome: Outcome, audit: WriteGuardianAudit, existing_lookup: dict[str, Any]
) -> WriteGuardianAudit:
    try:
        return _record_locked(state, outcome, audit)
    except IntegrityError:
        # Another delivery recorded this decision first (possible only without a shared lock).
        existing = find_existing(**existing_lookup)
        if existing is None:
            raise
        return existing


def _llm():
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
    name = paths.canonical_name(target_file)
    if source not in WriteGuardianAudit.Source.values:
        raise GuardianError(f"unknown source {source!r}")
    if compose is None and name not in memory_files.ALL_FILES:
        # A bank page is reflect's: its writes bring their own edits (a retry would append the audit's text).
        raise NotRetryable(f"{name} is written by the reflect job; run reflect again instead.")
    fact = visible(candidate_fact or "").strip()
    lookup = {"decision": decision, "source": source, "source_ref": source_ref, "retry_of": retry_of}
    run = _Run(name, fact, lookup, requested_by, review_held, hold_reason)

    early = precheck(fact, review_held=review_held, hold_reason=hold_reason)
    client = _llm() if early is None and compose is None else None
    unsafe = workspace.refusal_of(name)
    if client is not None or unsafe is not None:  # (Decided here, the audit is looked for under the lock.)
        existing = find_existing(**lookup)
        if existing is not None and not (existing.status == Status.FAILED and existing.reason == history.INTERRUPTED):
            return existing
    if unsafe is not None:  # A link, a FIFO …: nothing is read through it, and the write fails visibly.
        nothing = history.FileState(name, None, None, False, 0, None, None, None)
        with locks.file_lock(name):
            return run.store(nothing, Outcome(Status.FAILED, f"nothing was written: {unsafe.message}"))
    if early is not None or client is None:
        return _decide_here(run, early, compose)
    return _ask_llm(run, client, raise_transient=raise_transient)


@dataclass
class _Run:
    """One call of ``guard_write``: the file, the fact, how its audit is found and what it will record."""

    name: str
    fact: str
    lookup: dict[str, Any]
    requested_by: str
    review_held: bool
    hold_reason: str | None

    def fresh(self) -> WriteGuardianAudit:
        return new_audit(self.name, self.fact, requested_by=self.requested_by, **self.lookup)

    def store(self, state: history.FileState, outcome: Outcome) -> WriteGuardianAudit:
        return _store(state, outcome, self.fresh(), self.lookup)

    def decide(self, content: str | None, **kwargs: Any) -> Outcome:
        return decide(
            self.fact,
            content,
            target_file=self.name,
            review_held=self.review_held,
            hold_reason=self.hold_reason,
            prechecked=True,  # guard_write asks only once its precheck passed.
            **kwargs,
        )


def _decide_here(
    run: _Run, early: Outcome | None, compose: Callable[[str | None], dict[str, Any]] | None
) -> WriteGuardianAudit:
    """Decide under the lock without an LLM: the prechecks' outcome, the caller's ``compose``, or the offline
    guardian."""
    with locks.file_lock(run.name):
        state = history.sync(run.name)
        existing = find_existing(**run.lookup)
        if existing is not None:
            return existing
        outcome = early
        if outcome is None and compose is not None:
            reply = compose(state.content)
            outcome = run.decide(
                state.content,
                reply=reply,
                llm_model=str(reply.get("model") or run.lookup["source"]),
                max_removed_lines=reply.get("max_removed_lines"),
            )
        if outcome is None:
            outcome = run.decide(state.content, corrections=active_corrections())
        return run.store(state, outcome)


def _ask_llm(run: _Run, client: Any, *, raise_transient: bool) -> WriteGuardianAudit:
    """Ask the LLM guardian with no lock held, then decide under the lock; ask again when the file changed
    meanwhile (up to GUARDIAN_MAX_LLM_STEPS)."""
    name = run.name
    corrections = active_corrections()
    steps = 0
    latency = 0
    max_steps = max(1, int(settings.GUARDIAN_MAX_LLM_STEPS))
    for step in range(1, max_steps + 1):
        seen = workspace.read_file(name)
        messages = build_messages(run.fact, seen, target_file=name, corrections=corrections)
        try:
            reply = client.complete_json(messages, validate=validate_reply)
        except client.LLMError as exc:
            transient = isinstance(exc, client.TRANSIENT_ERRORS)
            if transient and raise_transient:
                raise
            what = "gave no usable reply" if transient else "failed"
            outcome = Outcome(
                Status.FAILED,
                f"the LLM guardian {what}: {exc}",
                agent_steps=steps + getattr(exc, "attempts", 1),
                llm_model=settings.LLM_MODEL,
                prompt_version=PROMPT_VERSION,
            )
            with locks.file_lock(name):
                return run.store(history.sync(name), outcome)
        steps += reply.attempts
        latency += reply.latency_ms
        with locks.file_lock(name):
            state = history.sync(name)
            existing = find_existing(**run.lookup)
            if existing is not None:
                return existing
            content = state.content
            if content != seen and step < max_steps:
                logger.info("guardian: %s changed while the LLM was deciding; asking again", name)
                continue
            outcome = run.decide(
                content,
                reply=reply.data,
                llm_model=reply.model,
                llm_latency_ms=latency,
                agent_steps=steps,
                prompt_version=PROMPT_VERSION,
            )
            if content != seen and outcome.status == Status.FAILED:
                outcome.reason = f"{name} kept changing while the guardian decided; {outcome.reason}"
            return run.store(state, outcome)
    raise AssertionError("unreachable")  # pragma: no cover


def write_fact(decision: MemoryGateDecision) -> WriteGuardianAudit:
    """Fold one ``UPDATE_*`` gate decision and its "also" facts into their files (one audit each); the first audit."""
    files = memory_files.active().file_for_decision
    target = files.get(decision.decision)
    if target is None:
        raise GuardianError(f"decision {decision.id} is {decision.decision}: nothing to write", code="nothing_to_write")
    facts = [("", target, decision.candidate_fact or "")]
    facts += [(f"also-{n}", files.get(kind, target), fact) for n, (kind, fact) in enumerate(decision.also_facts(), 1)]
    # Whose fact it is: ``attribution``. An "also" audit is found by source_ref; none beside a held fact.
    audit: WriteGuardianAudit | None = None
    for ref, name, fact in facts:
        routed = attribution.route(decision, name, fact)
        written = guard_write(
            target_file=routed.target_file,
            candidate_fact=routed.fact,
            source="gate",
            source_ref=ref,
            decision=decision,
            hold_reason=routed.hold_reason,
        )
        audit = audit or written
        if audit.held_for_review:
            break
    return audit  # type: ignore[return-value]


def retry_write(
    audit: WriteGuardianAudit, *, candidate_fact: str | None = None, target_file: str | None = None, requested_by: str
) -> WriteGuardianAudit:
    """A new audit for the same decision with an optional new fact and/or file, linked to the one it retries.

    Runs now (not queued), so the operator sees the outcome. A retry of a fact held for review is the
    review: the instruction check is skipped, every other check still applies.
    """
    name = paths.canonical_name(target_file) if target_file else audit.target_file
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
