"""The feedback door: one thumbs-up/down on a turn in, a guarded decision out.

``apply_feedback(turn, user_id=…, feedback=…, reason=…)``
  1. ``LEARNING_GUARDRAILS_ENABLED=false`` (the kill switch): the feedback is deduplicated by its key (step 2),
     stored on the turn and recorded as a ``mem_reject``/``rule_reject`` event with the reason
     ``guardrails_disabled``; nothing is learned (step 3 does not run).
  2. In one transaction (one commit): claim the idempotency key ``sha256(trace_id + user_id + feedback)``
     (the primary key of ``feedback_idempotency``, so a repeat, even a concurrent one, is deduplicated and
     writes nothing), append the feedback to ``turn.feedback_json``, and run step 3's database part in a
     savepoint. Step 3's text work (the candidate, its score, the rule draft) is done before the
     transaction opens (``prepare_feedback``), so SQLite's single write lock is held only to write.
  3. Positive feedback goes through the memory guard, negative feedback through the rule guard. Every
     decision is a ``LearningEvent`` with its reason and source. In shadow mode (``LEARNING_SHADOW_MODE``)
     the decision is recorded with ``shadow=True`` and nothing is applied.
  4. Fail open: an error inside 3 (or a database error while claiming the key) is logged, counted
     (``guardrail_error_count()``) and recorded as a ``guardrail_error`` event when the database lets us;
     the feedback is acknowledged all the same. Ingest never calls into this module.

The memory guard's conditions are in ``memory``, the rule guard's in ``rules``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from guardian_app.learning import DEFAULT_PROJECT, ratelimit
from guardian_app.learning.failures import record_failure
from guardian_app.learning.memory import (
    MemoryCheck,
    check_memory_in_database,
    hand_to_guardian,
    memory_candidate,
    screen_memory_candidate,
)
from guardian_app.learning.ratelimit import RateLimitResult
from guardian_app.learning.rules import MIN_RULE_REASON_CHARS, RuleDraft, draft_rule, find_conflicts, outranks
from guardian_app.learning.text import collapse
from guardian_app.models import FeedbackIdempotency, LearningEvent, LearningEventType, LearningSource, MemoryItem, Rule
from sessions_app.models import ConversationTurn

logger = logging.getLogger(__name__)

E = LearningEventType


@dataclass(frozen=True)
class FeedbackOutcome:
    deduplicated: bool = False
    accepted: bool = False
    reason: str | None = None
    shadow_mode: bool = False
    event_id: str | None = None
    item_id: str | None = None

    def guardrails(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Feedback:
    trace_id: str
    user_id: str
    feedback: str  # "up" | "down"
    reason: str | None
    project_id: str
    source: str
    shadow: bool
    now: dt.datetime


def idempotency_key(trace_id: str, user_id: str, feedback: str) -> str:
    """The seed's ``sha256(trace_id + user_id + feedback)``."""
    return hashlib.sha256(f"{trace_id}{user_id}{feedback}".encode()).hexdigest()


def _store_on_turn(fb: _Feedback) -> None:
    """Append the event to ``feedback_json`` under a row lock (two users' feedback never overwrite each other)."""
    current = (
        ConversationTurn.objects.select_for_update()
        .filter(id=fb.trace_id)
        .values_list("feedback_json", flat=True)
        .first()
    )
    data = dict(current) if isinstance(current, dict) else {}
    events = list(data.get("events") or [])
    events.append({"user_id": fb.user_id, "feedback": fb.feedback, "reason": fb.reason, "at": fb.now.isoformat()})
    data.update(events=events, last=fb.feedback)
    ConversationTurn.objects.filter(id=fb.trace_id).update(feedback_json=data)


@dataclass(frozen=True)
class PreparedFeedback:
    """What the guards computed before any transaction opens (so the write lock is held only to write)."""

    fb: _Feedback
    fact: str | None = None
    origin: str = ""
    screened: MemoryCheck | None = None
    draft: RuleDraft | None = None
    error: Exception | None = None


def prepare_feedback(
    turn: ConversationTurn,
    *,
    user_id: str,
    feedback: str,
    reason: str | None = None,
    project_id: str = DEFAULT_PROJECT,
    source: str = LearningSource.API_FEEDBACK,
    now: dt.datetime | None = None,
) -> PreparedFeedback:
    """Step 3's text work with no transaction open: the candidate fact and its screening, or the rule draft.

    An error here is kept (``error``) and handled as a guard failure by ``commit_feedback``: fail open.
    """
    if feedback not in ("up", "down"):
        raise ValueError(f"feedback must be 'up' or 'down', not {feedback!r}")
    reason = collapse(reason) if reason and reason.strip() else None
    fb = _Feedback(
        trace_id=turn.id,
        user_id=user_id,
        feedback=feedback,
        reason=reason,
        project_id=project_id or DEFAULT_PROJECT,
        source=source,
        shadow=settings.LEARNING_SHADOW_MODE,
        now=now or timezone.now(),
    )
    if not settings.LEARNING_GUARDRAILS_ENABLED:
        return PreparedFeedback(fb)
    try:
        if feedback == "up":
            fact, origin = memory_candidate(turn)
            return PreparedFeedback(fb, fact, origin, screen_memory_candidate(fact) if fact else None)
        if reason and len(reason) >= MIN_RULE_REASON_CHARS:
            return PreparedFeedback(fb, draft=draft_rule(reason))
        return PreparedFeedback(fb)
    except Exception as exc:  # Fail open, at commit: the feedback is still stored.
        logger.exception("learning guardrails failed preparing feedback on turn %s", turn.id)
        return PreparedFeedback(fb, error=exc)


def commit_feedback(prepared: PreparedFeedback) -> FeedbackOutcome:
    """Steps 1, 2 and the guards' database work, in one transaction (one commit, one fsync on SQLite).

    The key and the guard run in savepoints: a repeat or a failing guard leaves the rest intact. May run
    inside a caller's transaction (the API counts the rate limit in the same one). Raises only when the
    feedback itself cannot be stored on the turn (the database is down), which the API answers with a 503.
    """
    fb = prepared.fb
    # No savepoint of its own: only a dead database gets out of this block, and that ends the request anyway.
    with transaction.atomic(savepoint=False):
        try:
            with transaction.atomic():
                FeedbackIdempotency.objects.create(
                    idem_key=idempotency_key(fb.trace_id, fb.user_id, fb.feedback),
                    trace_id=fb.trace_id,
                    user_id=fb.user_id,
                    feedback=fb.feedback,
                    created_at=fb.now,
                )
        except IntegrityError:
            return FeedbackOutcome(deduplicated=True, reason="duplicate_feedback", shadow_mode=fb.shadow)
        except DatabaseError as exc:
            # The key could not be claimed: keep the feedback (fail open) and learn nothing from it.
            _store_on_turn(fb)
            record_failure("idempotency", exc, **_context(fb))
            return FeedbackOutcome(reason="guardrails_error", shadow_mode=fb.shadow)
        _store_on_turn(fb)
        if not settings.LEARNING_GUARDRAILS_ENABLED:
            # The kill switch falls back to the logic before the guardrails (seed 002 §8): the feedback is
            # stored once and nothing is learned from it; the key and an event still record it.
            event = _event(fb, E.MEM_REJECT if fb.feedback == "up" else E.RULE_REJECT, "guardrails_disabled")
            return FeedbackOutcome(reason="guardrails_disabled", shadow_mode=fb.shadow, event_id=event.id)
        component = "memory_guard" if fb.feedback == "up" else "rule_guard"
        if prepared.error is not None:
            record_failure(component, prepared.error, **_context(fb))
            return FeedbackOutcome(reason="guardrails_error", shadow_mode=fb.shadow)
        try:
            with transaction.atomic():
                return _memory_guard(prepared) if fb.feedback == "up" else _rule_guard(prepared)
        except IntegrityError:
            # A concurrent request stored the same fingerprint first; the guard's savepoint is undone.
            return _lost_race(prepared)
        except Exception as exc:  # Fail open: the feedback is stored and acknowledged, nothing is learned.
            logger.exception("learning guardrails failed on turn %s", fb.trace_id)
            record_failure(component, exc, **_context(fb))
            return FeedbackOutcome(reason="guardrails_error", shadow_mode=fb.shadow)


def _lost_race(prepared: PreparedFeedback) -> FeedbackOutcome:
    """The memory item or rule was created by a concurrent request between our check and our insert."""
    fb = prepared.fb
    if fb.feedback == "up" and prepared.screened is not None:
        model, fp, event_type = MemoryItem, prepared.screened.fingerprint, E.MEM_REJECT
    else:
        model, fp, event_type = Rule, prepared.draft.fingerprint if prepared.draft else "", E.RULE_REJECT
    winner = model.objects.filter(project_id=fb.project_id, fingerprint=fp).values_list("id", flat=True).first()
    event = _event(
        fb, event_type, "duplicate", ref_id=winner or "", candidate=(prepared.fact or fb.reason or "")[:2000]
    )
    return FeedbackOutcome(reason="duplicate", shadow_mode=fb.shadow, event_id=event.id)


def apply_feedback(turn: ConversationTurn, **kwargs: Any) -> FeedbackOutcome:
    """Store one thumbs-up/down on a turn and let the guardrails decide what, if anything, is learned.

    ``prepare_feedback`` (no transaction) then ``commit_feedback`` (one transaction); the keyword
    arguments are ``prepare_feedback``'s. Steps and failure modes: the module docstring.
    """
    return commit_feedback(prepare_feedback(turn, **kwargs))


def receive_feedback(turn: ConversationTurn, **kwargs: Any) -> tuple[FeedbackOutcome | None, RateLimitResult | None]:
    """The feedback endpoint's work: the per-user rate limit, then ``apply_feedback``; ``kwargs`` are
    ``prepare_feedback``'s (``user_id``, ``feedback``, ``reason``, ``project_id``, ``source``).

    Returns ``(None, limit)`` when the limit refuses the request (a ``rate_limited`` event is recorded and
    nothing else), else ``(outcome, limit)``; ``limit`` is None with the guardrails off. With Redis the
    limit is one round trip before any work; with the database counter its statement runs inside the
    feedback's transaction, so a feedback costs one commit. A limiter failure fails open and is counted.
    """
    user_id = kwargs["user_id"]
    enabled = settings.LEARNING_GUARDRAILS_ENABLED
    limit = ratelimit.check_feedback(user_id) if enabled and settings.REDIS_URL else None
    prepared = None
    if limit is None or limit.allowed:
        prepared = prepare_feedback(turn, **kwargs)
    context = {
        "trace_id": turn.id,
        "user_id": user_id,
        "project_id": kwargs.get("project_id", DEFAULT_PROJECT),
        "source": kwargs.get("source", LearningSource.API_FEEDBACK),
    }
    with transaction.atomic():
        if enabled and limit is None:
            limit = ratelimit.check_feedback(user_id)
        if limit is not None and limit.failed_open:
            record_failure("ratelimit", limit.error or "failed open", throttle_s=60, **context)
        if limit is not None and not limit.allowed:
            record_rate_limited(**context, limit=limit.limit, retry_after_s=limit.reset_s)
            return None, limit
        assert prepared is not None
        return commit_feedback(prepared), limit


def _context(fb: _Feedback) -> dict[str, Any]:
    return {"project_id": fb.project_id, "source": fb.source, "trace_id": fb.trace_id, "user_id": fb.user_id}


def _event(fb: _Feedback, event_type: str, reason: str, *, ref_id: str = "", **payload: Any) -> LearningEvent:
    return LearningEvent.objects.create(
        event_type=event_type,
        reason=reason,
        ref_id=ref_id or "",
        shadow=fb.shadow,
        created_at=fb.now,
        payload_json={"feedback": fb.feedback, "feedback_reason": fb.reason, **payload},
        **_context(fb),
    )


def _memory_guard(prepared: PreparedFeedback) -> FeedbackOutcome:
    fb, fact, origin = prepared.fb, prepared.fact, prepared.origin
    if not fact or prepared.screened is None:
        event = _event(fb, E.MEM_REJECT, "no_candidate", origin=origin)
        return FeedbackOutcome(reason="no_candidate", shadow_mode=fb.shadow, event_id=event.id)
    check = prepared.screened
    if check.reason == "screened":
        check = check_memory_in_database(check, project_id=fb.project_id)
    details = {"candidate": fact[:2000], "origin": origin, "quality": asdict(check.quality)}
    if not check.accepted:
        event = _event(fb, E.MEM_REJECT, check.reason, ref_id=check.duplicate_of or "", **details)
        return FeedbackOutcome(reason=check.reason, shadow_mode=fb.shadow, event_id=event.id)
    if fb.shadow:
        event = _event(fb, E.MEM_ACCEPT, "accepted", **details)
        return FeedbackOutcome(accepted=True, reason=E.MEM_ACCEPT, shadow_mode=True, event_id=event.id)
    # A concurrent request that learned the same fact first makes this an IntegrityError: see commit_feedback.
    item = MemoryItem.objects.create(
        project_id=fb.project_id,
        content=fact,
        fingerprint=check.fingerprint,
        quality_score=check.quality.score,
        score=check.quality.score,
        origin=origin,
        source=fb.source,
        trace_id=fb.trace_id,
        user_id=fb.user_id,
        expires_at=fb.now + dt.timedelta(days=settings.LEARNING_STALE_DAYS),
        created_at=fb.now,
        updated_at=fb.now,
    )
    event = _event(fb, E.MEM_ACCEPT, "accepted", ref_id=item.id, **details)
    hand_to_guardian(item.id, fact)
    return FeedbackOutcome(accepted=True, reason=E.MEM_ACCEPT, shadow_mode=False, event_id=event.id, item_id=item.id)


def _rule_guard(prepared: PreparedFeedback) -> FeedbackOutcome:
    fb = prepared.fb
    text = fb.reason or ""

    def refuse(event_type: str, reason: str, *, ref_id: str = "", **payload: Any) -> FeedbackOutcome:
        event = _event(fb, event_type, reason, ref_id=ref_id, **payload)
        return FeedbackOutcome(
            reason=E.RULE_CONFLICT if event_type == E.RULE_CONFLICT else reason,
            shadow_mode=fb.shadow,
            event_id=event.id,
        )

    draft = prepared.draft
    if len(text) < MIN_RULE_REASON_CHARS or draft is None:
        return refuse(E.RULE_REJECT, "reason_too_short", length=len(text))
    details = {"rule": asdict(draft), "content": text[:2000]}
    if draft.rule_type is None:
        return refuse(E.RULE_REJECT, "unclassified", **details)
    existing = Rule.objects.filter(project_id=fb.project_id, fingerprint=draft.fingerprint).values_list("id", flat=True)
    if duplicate := existing.first():
        return refuse(E.RULE_REJECT, "duplicate", ref_id=duplicate, **details)
    active = Rule.objects.filter(project_id=fb.project_id, status=Rule.Status.ACTIVE).count()
    if active >= settings.LEARNING_RULE_MAX_PER_PROJECT:
        return refuse(E.RULE_REJECT, "project_cap", **details)
    conflicts = find_conflicts(draft, project_id=fb.project_id)
    conflict_info = [{"id": r.id, "priority": r.priority, "confidence": r.confidence} for r in conflicts]
    if conflicts and not all(outranks(draft, r) for r in conflicts):
        stronger = next(r for r in conflicts if not outranks(draft, r))
        return refuse(E.RULE_CONFLICT, "lower_priority", ref_id=stronger.id, conflict_with=conflict_info, **details)
    if fb.shadow:
        event = _event(
            fb,
            E.RULE_ACCEPT,
            "superseded_conflict" if conflicts else "accepted",
            would_suppress=conflict_info,
            **details,
        )
        return FeedbackOutcome(accepted=True, reason=E.RULE_ACCEPT, shadow_mode=True, event_id=event.id)
    # The same rule arriving concurrently makes this an IntegrityError: see commit_feedback.
    rule = Rule.objects.create(
        project_id=fb.project_id,
        rule_type=draft.rule_type,
        content=text,
        subject=draft.subject[:255],
        stance=draft.stance,
        fingerprint=draft.fingerprint,
        priority=draft.priority,
        confidence=draft.confidence,
        base_confidence=draft.confidence,
        conflict_with=conflicts[0].id if conflicts else None,
        source=fb.source,
        trace_id=fb.trace_id,
        user_id=fb.user_id,
        created_at=fb.now,
        updated_at=fb.now,
    )
    if conflicts:
        Rule.objects.filter(id__in=[r.id for r in conflicts], status=Rule.Status.ACTIVE).update(
            status=Rule.Status.SUPPRESSED, conflict_with=rule.id, updated_at=fb.now
        )
        for old in conflicts:
            _event(
                fb,
                E.RULE_SUPPRESS,
                "conflict",
                ref_id=old.id,
                superseded_by=rule.id,
                old_priority=old.priority,
                new_priority=rule.priority,
            )
    event = _event(
        fb,
        E.RULE_ACCEPT,
        "superseded_conflict" if conflicts else "accepted",
        ref_id=rule.id,
        conflict_with=conflict_info,
        **details,
    )
    return FeedbackOutcome(accepted=True, reason=E.RULE_ACCEPT, shadow_mode=False, event_id=event.id, item_id=rule.id)


def record_rate_limited(
    *,
    user_id: str,
    trace_id: str | None,
    project_id: str = DEFAULT_PROJECT,
    source: str = LearningSource.API_FEEDBACK,
    limit: int,
    retry_after_s: int,
) -> None:
    """The ``rate_limited`` event of a refused request; fails open like the rest."""
    try:
        LearningEvent.objects.create(
            event_type=E.RATE_LIMITED,
            reason="per_user_limit",
            project_id=project_id,
            source=source,
            trace_id=trace_id,
            user_id=user_id[:255],
            payload_json={"limit_per_min": limit, "retry_after_s": retry_after_s},
        )
    except DatabaseError as exc:
        record_failure("rate_limited_event", exc)
