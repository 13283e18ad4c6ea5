"""REQ-002: the memory gate. One decision per stored turn (and per operator re-run), recorded with the
model, latency, tokens and raw reply; UPDATE_* decisions are handed to the write guardian.

The gate asks the configured OpenAI-compatible LLM (``reflection_site.llm``) with the prompt in
``prompts/<PROMPT_VERSION>.*.txt``; with no ``LLM_BASE_URL`` it asks the offline heuristic gate
(``heuristic_gate.classify_turn``, recorded as model ``heuristic-gate-v1``).

Nothing is lost: the LLM is called with no transaction open; the decision insert and the turn's
done-marking share one ``atomic()`` that first claims the turn with a conditional UPDATE, so a
redelivered task records nothing twice; a turn whose retries are spent is marked ``failed`` with the
error and can be run again; and ``sweep_pending_turns`` re-enqueues every turn left pending.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from guardian_app.models import BehaviorCorrection
from reflection_site import llm, memory_files, privacy, safe_files
from reflection_site.celery import enqueue_on_commit
from reflection_site.prompts import load_prompt
from reflection_site.rows import RowReader, RowUpdate
from sessions_app import heuristic_gate, heuristic_rules
from sessions_app.models import (
    ConversationContext,
    ConversationTurn,
    Decision,
    GateStatus,
    MemoryGateDecision,
)

logger = logging.getLogger(__name__)

PROMPT_VERSION = "gate-v1"
# Newest first; older corrections beyond this many stay in the database but out of the prompt.
MAX_PROMPT_CORRECTIONS = 20
# Headings listed per memory file in the prompt.
MAX_HEADINGS_PER_FILE = 40
# Turns the sweep re-enqueues per run (the next run, a minute later, takes the rest).
SWEEP_BATCH = 1000


@dataclass(frozen=True)
class GateOutcome:
    decision: str
    reason: str
    candidate_fact: str | None
    confidence: float | None
    llm_model: str
    llm_latency_ms: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    raw_response: str | None
    prompt_version: str


# --- The prompt -----------------------------------------------------------------------------------
def _json_line(value: Any) -> str:
    # "</" is escaped so that no message can close the prompt's <context>/<turn> blocks early.
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


def memory_file_headings() -> str:
    """One line per memory file: its decision and the Markdown headings it has now."""
    lines = []
    for decision, name in memory_files.active().file_for_decision.items():  # The workspace profile's files.
        try:  # Without following a link or waiting on a FIFO; the drift check records what the path holds.
            text = safe_files.read_text(Path(settings.WORKSPACE_DIR), name)
        except OSError as exc:
            logger.warning("gate: headings of %s not read: %s", name, exc)
            lines.append(f"- {name} ({decision}): (not readable)")
            continue
        if text is None:
            lines.append(f"- {name} ({decision}): (no file yet)")
            continue
        headings = [line.strip() for line in text.splitlines() if memory_files.is_heading(line)]
        shown = "; ".join(headings[:MAX_HEADINGS_PER_FILE]) or "(no headings)"
        lines.append(f"- {name} ({decision}): {shown}")
    return "\n".join(lines)


# Per file: (mtime_ns, size) and the names read from it, so that a worker reads a file again only when it changed.
_PEOPLE_CACHE: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}


# A line's opening that is a time, a pronoun or a place word, not a name ("下周组会…", "我们家…", "每天…").
_NOT_A_NAME = re.compile(r"^(?:用户|我|你|他|她|它|这|那|每|下|上|今|明|昨|前|后|周|礼拜|星期|最近|现在|以前|以后)")
_KIN_OR_THING = re.compile(rf"^(?:{heuristic_rules.ZH_KIN})")
_CHINESE = re.compile(r"[\u4e00-\u9fff]")


def _names_in(text: str) -> frozenset[str]:
    """Names a file holds: who a relation line is about ("诗涵是用户的太太。"), and a name that opens two lines or more
    ("诗涵在一家中餐馆做会计。", "诗涵最近迷上陶艺了。")."""
    bodies = [line.lstrip("-* ").strip() for line in text.splitlines() if line.lstrip().startswith(("-", "*"))]
    related = {m.group(1) for body in bodies if (m := re.match(r"^([\u4e00-\u9fff]{2,3})是用户的", body))}
    # Two or three characters that open two lines or more, the longer kept where both open the same lines.
    opening = Counter(body[:n] for body in bodies for n in (2, 3) if re.fullmatch(r"[\u4e00-\u9fff]+", body[:n]))
    named = related | {
        name
        for name, count in opening.items()
        if count >= 2
        and not (
            len(name) == 2
            and any(opening[longer] == count for longer in opening if longer[:2] == name and len(longer) == 3)
        )
    }
    return frozenset(name for name in named if not _NOT_A_NAME.match(name) and not _KIN_OR_THING.match(name))


def people_named() -> frozenset[str]:
    """The Chinese names that open a line of USER.md or MEMORY.md ("诗涵是用户的太太。", "诗涵在一家中餐馆做会计。"):
    the people the offline gate reads a Chinese sentence about when it opens with their name."""
    names: set[str] = set()
    for name in {memory_files.active().file_for_decision.get(d) for d in ("UPDATE_USER", "UPDATE_MEMORY")} - {None}:
        path = Path(settings.WORKSPACE_DIR) / name
        try:
            stat = path.stat()
        except OSError:
            continue
        key = (stat.st_mtime_ns, stat.st_size)
        cached = _PEOPLE_CACHE.get(str(path))
        if cached is None or cached[0] != key:
            try:
                text = safe_files.read_text(Path(settings.WORKSPACE_DIR), name) or ""
            except OSError:
                continue
            cached = (key, _names_in(text))
            _PEOPLE_CACHE[str(path)] = cached
        names |= cached[1]
    return frozenset(names)


def prompt_corrections() -> list[BehaviorCorrection]:
    """The behaviour corrections marked apply_to_future, newest first."""
    return BehaviorCorrection.objects.prompt_rows(MAX_PROMPT_CORRECTIONS)


def correction_hints(corrections: Sequence[BehaviorCorrection]) -> list[heuristic_gate.CorrectionHint]:
    """The corrections the offline gate can apply: those with a correction pattern."""
    return [
        heuristic_gate.CorrectionHint(
            pattern=c.correction_pattern,
            corrected_status=c.corrected_status,
            corrected_target_file=c.corrected_target_file,
            correction_id=c.id,
        )
        for c in corrections
        if (c.correction_pattern or "").strip()
    ]


def _correction_lines(corrections: Sequence[BehaviorCorrection]) -> str:
    if not corrections:
        return "(none)"
    return "\n".join(
        _json_line(
            {
                "id": c.id,
                "pattern": c.correction_pattern or None,
                "original_status": c.original_status,
                "original_candidate_fact": c.original_candidate_fact,
                "original_target_file": c.original_target_file,
                "corrected_status": c.corrected_status,
                "corrected_candidate_fact": c.corrected_candidate_fact,
                "corrected_target_file": c.corrected_target_file,
                "reason": c.correction_reason,
            }
        )
        for c in corrections
    )


def build_messages(
    window: Sequence[tuple[str, str]],
    user_message: str,
    agent_reply: str,
    *,
    corrections: Sequence[BehaviorCorrection] = (),
    version: str = PROMPT_VERSION,
) -> list[dict[str, str]]:
    """The chat messages of the gate prompt: a system message (the rules, the memory files' headings,
    the corrections) and a user message (the context window and the turn)."""
    context = "\n".join(_json_line({"role": role, "message": message}) for role, message in window) or "(none)"
    return load_prompt("sessions_app", version).messages(
        system={"file_headings": memory_file_headings(), "corrections": _correction_lines(corrections)},
        user={"context": context, "turn": _json_line({"user": user_message, "agent": agent_reply})},
    )


def context_window(turn: ConversationTurn, *, size: int | None = None) -> list[tuple[str, str]]:
    """The last ``MEMORY_GATE_WINDOW_SIZE`` messages before the turn, oldest first, as ``(role, message)``:
    the context the agent sent with the turn, or, when it sent none, the session's previous turns."""
    size = settings.MEMORY_GATE_WINDOW_SIZE if size is None else size
    if size <= 0:
        return []
    # Both read as written statements (reflection_site.rows): the gate asks for every turn.
    clause = "WHERE {turn_id} = %s ORDER BY {sequence_number} DESC LIMIT %s"
    stored = RowReader.of(ConversationContext, clause, ("role", "message")).rows([turn.id, size])
    if stored:
        return [(item.role, item.message) for item in reversed(stored)]
    clause = "WHERE {session_id} = %s AND {turn_number} < %s ORDER BY {turn_number} DESC LIMIT %s"
    reader = RowReader.of(ConversationTurn, clause, ("user_message_content", "agent_message_content"))
    window: list[tuple[str, str]] = []
    for earlier in reversed(reader.rows([turn.session_id, turn.turn_number, size])):
        window.append(("user", earlier.user_message_content))
        if earlier.agent_message_content:
            window.append(("agent", earlier.agent_message_content))
    return window[-size:]


# --- Asking the gate ------------------------------------------------------------------------------
def _validate_reply(data: dict[str, Any]) -> None:
    """Raise ValueError unless the reply names a known decision and, for UPDATE_*, a fact."""
    decision = str(data.get("decision") or "").strip().upper()
    if decision not in Decision.values:
        raise ValueError(f"unknown decision {data.get('decision')!r}")
    if decision != Decision.NO_WRITE and not _fact_of(data):
        raise ValueError(f"{decision} without a candidate_fact")


def _fact_of(data: dict[str, Any]) -> str | None:
    for key in ("candidate_fact", "candidateFact", "fact"):
        value = data.get(key)
        if isinstance(value, str) and value.strip() and value.strip().lower() not in {"null", "none"}:
            return value.strip()
    return None


def _confidence(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if number != number:  # NaN
        return None
    if 1 < number <= 100:  # A percentage.
        number /= 100
    return min(max(number, 0.0), 1.0)


def ask_gate(
    window: Sequence[tuple[str, str]],
    user_message: str,
    agent_reply: str,
    *,
    model: str | None = None,
    offline: bool | None = None,
    corrections: Sequence[BehaviorCorrection] | None = None,
) -> GateOutcome:
    """Decide one turn; writes nothing to the database.

    The LLM when ``LLM_BASE_URL`` is set (or ``model`` is given), else the offline heuristic gate;
    ``offline`` forces either. ``corrections`` defaults to ``BehaviorCorrection.objects.for_prompt()``.
    Raises the LLM client's errors (``llm.TRANSIENT_ERRORS`` for what a retry may cure).
    """
    if corrections is None:
        corrections = prompt_corrections()
    if offline is None:
        offline = model is None and not llm.is_configured()
    if offline:
        started = time.perf_counter()
        verdict = heuristic_gate.classify_turn(
            user_message,
            agent_reply,
            context=list(window),
            corrections=correction_hints(corrections),
            people=people_named() if _CHINESE.search(user_message) else (),  # Only a Chinese sentence opens with one.
        )
        latency_ms = int(round((time.perf_counter() - started) * 1000))
        fact = verdict.candidate_fact if verdict.decision != Decision.NO_WRITE else None
        return GateOutcome(
            decision=verdict.decision,
            reason=verdict.reason,
            candidate_fact=fact,
            confidence=verdict.confidence,
            llm_model=heuristic_gate.MODEL_NAME,
            llm_latency_ms=latency_ms,
            prompt_tokens=None,
            completion_tokens=None,
            raw_response=json.dumps(
                {"decision": verdict.decision, "reason": verdict.reason, "candidate_fact": fact}
                | {"confidence": verdict.confidence}
                | ({"also": [{"decision": d, "candidate_fact": f} for d, f in verdict.also]} if verdict.also else {}),
                ensure_ascii=False,
            ),
            prompt_version="",
        )

    messages = build_messages(window, user_message, agent_reply, corrections=corrections)
    reply = llm.complete_json(messages, model=model, validate=_validate_reply)
    decision = str(reply.data["decision"]).strip().upper()
    return GateOutcome(
        decision=decision,
        reason=str(reply.data.get("reason") or "").strip() or "(no reason given)",
        candidate_fact=_fact_of(reply.data) if decision != Decision.NO_WRITE else None,
        confidence=_confidence(reply.data.get("confidence")),
        llm_model=reply.model,
        llm_latency_ms=reply.latency_ms,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        raw_response=reply.content,
        prompt_version=PROMPT_VERSION,
    )


# --- Deciding a stored turn -----------------------------------------------------------------------
def describe_error(exc: BaseException) -> str:
    """The error text a failed turn keeps: the error, the attempts, and the last raw reply."""
    text = f"{type(exc).__name__}: {exc}"
    attempts = getattr(exc, "attempts", None)
    if attempts:
        text += f" (after {attempts} attempt(s) in this try)"
    raw = getattr(exc, "raw", None)
    if raw:
        text += f"\nLast reply: {raw[:4000]}"
    return text


def _decision_for_run(turn_id: str, run: int) -> MemoryGateDecision | None:
    return MemoryGateDecision.objects.filter(turn_id=turn_id, run_number=run).first()


def decide_turn(turn: ConversationTurn) -> MemoryGateDecision | None:
    """Record the gate's decision on one turn, once per run; returns it (None if the turn is not pending
    and has no decision for its current run, e.g. failed, disabled or superseded by a re-run).

    1. For the LLM, count the attempt on the turn while it is still pending (which also tells the sweep
       that a worker is on it); a turn no longer pending returns the decision already recorded.
    2. Build the context window and ask the gate, with no transaction open.
    3. In one atomic(): claim the turn (pending, same run → done) with a conditional UPDATE and insert
       the decision; after commit, an UPDATE_* decision goes to the write guardian. The offline gate,
       which decides in a millisecond, has its attempt counted by the claim (or by its error): one write
       transaction a turn fewer, and the turn ends as it would have.

    A redelivered or duplicated task fails the claim (or hits the unique (turn, run_number)) and
    returns the recorded decision. LLM errors propagate after being noted on the turn, so that the
    task can retry; ``mark_gate_failed`` records the final failure.
    """
    run = turn.gate_run
    if turn.gate_status != GateStatus.PENDING:
        return _decision_for_run(turn.id, run)
    live = ConversationTurn.objects.filter(id=turn.id, gate_status=GateStatus.PENDING, gate_run=run)
    attempt = {"gate_attempts": F("gate_attempts") + 1, "gate_enqueued_at": timezone.now()}
    offline = not llm.is_configured()
    if not offline and not live.update(**attempt):
        return _decision_for_run(turn.id, run)
    done = {"gate_status": GateStatus.DONE, "gate_last_error": None, **(attempt if offline else {})}

    try:
        outcome = ask_gate(context_window(turn), turn.user_message_content, turn.agent_message_content, offline=offline)
    except Exception as exc:
        noted = {"gate_last_error": describe_error(exc)} if isinstance(exc, llm.LLMError) else {}
        if noted or offline:
            live.update(**noted, **(attempt if offline else {}))
        raise

    finished = timezone.now()
    try:
        with transaction.atomic():
            if not _claim(turn.id, run, finished, counted_at=attempt["gate_enqueued_at"] if offline else None):
                decision = None  # Another delivery, or an operator's re-run, got there first.
            else:
                decision = MemoryGateDecision.objects.create(
                    turn_id=turn.id,
                    session_id=turn.session_id,
                    run_number=run,
                    decision=outcome.decision,
                    # The reason and the raw reply are derived records: a value the turn held (a key, a phone
                    # number) is redacted from them; the fact is the guardian's input, redacted if it refuses it.
                    reason=privacy.redact(outcome.reason) if outcome.reason else outcome.reason,
                    candidate_fact=outcome.candidate_fact,
                    confidence=outcome.confidence,
                    llm_model=outcome.llm_model,
                    llm_latency_ms=outcome.llm_latency_ms,
                    prompt_tokens=outcome.prompt_tokens,
                    completion_tokens=outcome.completion_tokens,
                    raw_response=privacy.redact(outcome.raw_response or "") or None
                    if settings.MEMORY_GATE_STORE_RAW_LLM_RESPONSE
                    else None,
                    prompt_version=outcome.prompt_version,
                    created_at=finished,
                )
                if decision.decision != Decision.NO_WRITE:
                    enqueue_on_commit("guardian_app.tasks.run_guardian", decision.id)
    except IntegrityError:
        # Another delivery recorded this run's decision first; make sure the turn says so too.
        decision = None
        if _decision_for_run(turn.id, run) is not None:
            live.update(gate_finished_at=finished, **done)
    if decision is None:
        return _decision_for_run(turn.id, run)
    turn.gate_status, turn.gate_finished_at, turn.gate_last_error = GateStatus.DONE, finished, None
    logger.info("gate: turn %s run %d -> %s (%s)", turn.id, run, decision.decision, decision.llm_model)
    return decision


def _claim(turn_id: str, run: int, finished: dt.datetime, *, counted_at: dt.datetime | None) -> bool:
    """``decide_turn``'s claim (with ``counted_at``, the offline gate's count) as written SQL: the ORM took 0.5 ms."""
    count = () if counted_at is None else ("gate_enqueued_at",)
    fields, values = ("gate_finished_at", "gate_status", "gate_last_error", *count), [finished, GateStatus.DONE, None]
    where = "WHERE {id} = %s AND {gate_status} = %s AND {gate_run} = %s"
    claim = RowUpdate.of(ConversationTurn, fields, where, plus_one=("gate_attempts",) if count else ())
    return claim.run([*values, *([counted_at] if count else [])], [turn_id, GateStatus.PENDING, run]) > 0


def mark_gate_failed(turn_id: str, *, error: str) -> bool:
    """The retries are spent: the pending turn becomes ``failed`` with the error, visible and re-runnable."""
    failed = ConversationTurn.objects.filter(id=turn_id, gate_status=GateStatus.PENDING).update(
        gate_status=GateStatus.FAILED, gate_last_error=error[:20000], gate_finished_at=timezone.now()
    )
    if failed:
        logger.warning("gate failed for turn %s: %s", turn_id, error.splitlines()[0] if error else "")
    return bool(failed)


def sweep_pending_turns(*, grace_s: int | None = None) -> int:
    """Re-enqueue turns still pending ``GATE_SWEEP_GRACE_S`` seconds after they were enqueued or last tried.

    Closes the gap a dead broker at ingest time, or a worker killed while holding the message, leaves.
    Each requeue refreshes the turn's ``gate_enqueued_at``, so a turn is sent again once per grace
    period at most; a duplicate delivery is harmless (``decide_turn`` claims the turn once). Returns
    the number of turns enqueued; a broker error propagates after the turns already sent.
    """
    from sessions_app.ingest import enqueue_gate

    grace = settings.GATE_SWEEP_GRACE_S if grace_s is None else grace_s
    now = timezone.now()
    cutoff = now - dt.timedelta(seconds=grace)
    stuck = (
        ConversationTurn.objects.filter(gate_status=GateStatus.PENDING)
        .filter(Q(gate_enqueued_at__lt=cutoff) | Q(gate_enqueued_at__isnull=True))
        .order_by("gate_enqueued_at")
        .values_list("id", flat=True)[:SWEEP_BATCH]
    )
    sent = 0
    for turn_id in list(stuck):
        claimed = ConversationTurn.objects.filter(id=turn_id, gate_status=GateStatus.PENDING).filter(
            Q(gate_enqueued_at__lt=cutoff) | Q(gate_enqueued_at__isnull=True)
        )
        if not claimed.update(gate_enqueued_at=now):
            continue  # Decided, or picked up by a worker, since we looked.
        enqueue_gate(turn_id)
        sent += 1
    if sent:
        logger.info("gate sweep: re-enqueued %d pending turn(s)", sent)
    return sent


def rerun_gate(turn: ConversationTurn) -> ConversationTurn:
    """Run the gate on a turn again (an operator's request): a new run, pending, enqueued after commit.

    Earlier decisions stay recorded; the new one gets the next ``run_number``. A task still holding the
    previous run finds the run changed and records nothing.
    """
    from sessions_app.ingest import hand_off_gate

    with transaction.atomic():
        ConversationTurn.objects.filter(id=turn.id).update(
            gate_status=GateStatus.PENDING,
            gate_run=F("gate_run") + 1,
            gate_attempts=0,
            gate_last_error=None,
            gate_enqueued_at=timezone.now(),
            gate_finished_at=None,
        )
        hand_off_gate(turn.id)
    turn.refresh_from_db()
    return turn


__all__ = [
    "GateOutcome",
    "PROMPT_VERSION",
    "ask_gate",
    "build_messages",
    "context_window",
    "decide_turn",
    "describe_error",
    "mark_gate_failed",
    "rerun_gate",
    "sweep_pending_turns",
]
