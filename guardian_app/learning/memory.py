"""The memory guard's candidate and conditions (positive feedback), and the hand-off of an accepted fact.

The candidate is the gate's candidate fact for the turn when its latest gate run proposed one, otherwise a
fact distilled from the turn (the offline gate's reading of the user's message, else the user's statement,
or the question with the approved answer). It is accepted only if, in this order (the first failure is the
reason):

  ``too_short``    fewer than 40 characters (whitespace collapsed);
  ``boilerplate``  half or more of its letters are blacklisted phrases (thanks, ok, hope this helps,
                   谢谢, 好的, 希望对你有帮助 … plus ``LEARNING_BOILERPLATE_PHRASES``);
  ``low_score``    ``score_memory_candidate`` below ``LEARNING_MIN_MEM_SCORE`` (0.60);
  ``duplicate``    a memory item of the project has the same fingerprint (SHA-256 of the NFKC,
                   case-folded text without punctuation or spacing), whatever its status;
  ``project_cap``  the project already has ``LEARNING_MEM_MAX_PER_PROJECT`` active items.

Accepted (and not in shadow mode): an active ``MemoryItem``, and after commit the fact goes to the write
guardian for MEMORY.md (``run_guard_write("MEMORY.md", fact, "learning", item.id)``, idempotent per item).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from django.conf import settings

from guardian_app.learning import DEFAULT_PROJECT
from guardian_app.learning.text import QualityScore, collapse, is_boilerplate, score_memory_candidate
from guardian_app.models import MemoryItem
from reflection_site.celery import enqueue_on_commit, send
from reflection_site.text import fingerprint
from sessions_app.heuristic_gate import classify_turn
from sessions_app.models import ConversationTurn, MemoryGateDecision

logger = logging.getLogger(__name__)

MIN_MEMORY_CHARS = 40


@dataclass(frozen=True)
class MemoryCheck:
    accepted: bool
    reason: str  # "accepted" or the first condition that failed
    fingerprint: str
    quality: QualityScore
    duplicate_of: str | None = None


def screen_memory_candidate(text: str) -> MemoryCheck:
    """Conditions 1-3 (length, boilerplate, score): text only, no database; ``reason`` "screened" if they pass."""
    fact = collapse(text)
    fp = fingerprint(fact)
    quality = score_memory_candidate(fact)
    if len(fact) < MIN_MEMORY_CHARS:
        return MemoryCheck(False, "too_short", fp, quality)
    if is_boilerplate(fact):
        return MemoryCheck(False, "boilerplate", fp, quality)
    if quality.score < settings.LEARNING_MIN_MEM_SCORE:
        return MemoryCheck(False, "low_score", fp, quality)
    return MemoryCheck(False, "screened", fp, quality)


def check_memory_in_database(screened: MemoryCheck, *, project_id: str) -> MemoryCheck:
    """Conditions 4-5 (fingerprint not seen, project under its cap) for a candidate that passed 1-3."""
    existing = (
        MemoryItem.objects.filter(project_id=project_id, fingerprint=screened.fingerprint)
        .values_list("id", flat=True)
        .first()
    )
    if existing:
        return MemoryCheck(False, "duplicate", screened.fingerprint, screened.quality, existing)
    active = MemoryItem.objects.filter(project_id=project_id, status=MemoryItem.Status.ACTIVE).count()
    if active >= settings.LEARNING_MEM_MAX_PER_PROJECT:
        return MemoryCheck(False, "project_cap", screened.fingerprint, screened.quality)
    return MemoryCheck(True, "accepted", screened.fingerprint, screened.quality)


def check_memory_candidate(text: str, *, project_id: str = DEFAULT_PROJECT) -> MemoryCheck:
    """The seed's five conditions, in order; the first that fails is the reason."""
    screened = screen_memory_candidate(text)
    if screened.reason != "screened":
        return screened
    return check_memory_in_database(screened, project_id=project_id)


# --- The candidate fact of a turn ----------------------------------------------------------------
_QUESTION_START = re.compile(
    r"^(?:how|what|why|when|where|which|who|whom|whose|can|could|would|should|is|are|do|does|did|will)\b", re.I
)


def _clip(text: str, limit: int) -> str:
    text = collapse(text)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    # End on a sentence or word boundary when there is one in the last third.
    for sep in (". ", "。", "! ", "? ", "; ", ", ", " "):
        at = cut.rfind(sep)
        if at > limit * 2 // 3:
            return cut[: at + len(sep)].rstrip() + "…"
    return cut + "…"


def distill_fact(turn: ConversationTurn) -> str:
    """A fact from the turn itself: the offline gate's reading, else the statement or the approved answer."""
    user = collapse(turn.user_message_content or "")
    agent = collapse(turn.agent_message_content or "")
    try:
        verdict = classify_turn(user, agent)
        if verdict.candidate_fact:
            return _clip(verdict.candidate_fact, 1000)
    except Exception:  # The offline gate is a helper here; the fallback below still distils.
        logger.debug("offline gate unavailable for distillation", exc_info=True)
    is_question = user.endswith(("?", "？")) or bool(_QUESTION_START.match(user))
    if is_question and agent:
        return _clip(f"Asked “{_clip(user, 200)}”, the approved answer was: {_clip(agent, 600)}", 900)
    return _clip(user or agent, 600)


def memory_candidate(turn: ConversationTurn) -> tuple[str | None, str]:
    """``(fact, origin)``: the latest gate run's candidate fact if it proposed one, else a distilled fact."""
    candidate = (
        MemoryGateDecision.objects.filter(turn_id=turn.id)
        .order_by("-run_number", "-created_at")
        .values_list("candidate_fact", flat=True)
        .first()
    )
    if candidate and candidate.strip():
        return collapse(candidate), MemoryItem.Origin.GATE
    fact = distill_fact(turn)
    return (fact or None), MemoryItem.Origin.DISTILLED


GUARD_WRITE_TASK = "guardian_app.tasks.run_guard_write"


def hand_to_guardian(item_id: str, fact: str, *, now: bool = False) -> None:
    """Give an accepted fact to the write guardian for MEMORY.md (idempotent per item on its side): once the
    transaction commits, or at once with ``now`` (the decay job's re-send, where a broker error propagates)."""
    if now:
        send(GUARD_WRITE_TASK, "MEMORY.md", fact, "learning", item_id)
    else:
        enqueue_on_commit(GUARD_WRITE_TASK, "MEMORY.md", fact, "learning", item_id)
