"""Opinions with confidence that moves with the evidence (seed 001), and ``bank/opinions.md``.

An opinion is a statement about an entity (``O(c=0.95) @Peter: prefers short replies``) with a
confidence in [0, 1], when it was last updated, and its evidence: the facts that supported or
contradicted it. ``update_confidence`` is the one rule by which confidence moves.

When reflect reads a fact (``apply_fact``):

1. The candidate opinions are those of the fact's entities (or those about no entity, for a fact
   that names none). A fact already counted for one of them changes nothing (resumed and repeated
   runs count each fact once; ``OpinionEvidence`` is unique per opinion and fact).
2. The best match is the candidate whose statement shares the most content words with the fact
   (Jaccard similarity of the words, negations and like/dislike words aside) if it reaches
   ``MATCH_THRESHOLD``. The fact supports it when both say the same thing, and contradicts it when one
   of them is negated ("does not", "never", "no longer", "dislikes", 不 …) and the other is not.
3. No match, and the fact is itself an opinion (``O``): it becomes a new opinion, at its own ``c``
   (``DEFAULT_CONFIDENCE`` without one), with itself as its first supporting evidence.

Evidence strength: an opinion bullet's own ``c`` (``DEFAULT_CONFIDENCE`` without one), 0.6 for a world
or experience fact, 0.4 for an observation, 0.3 for an untyped passage or a fact from a memory file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from guardian_app.models import Opinion, OpinionEvidence, ReflectRun
from guardian_app.recall.retain import entity_key
from guardian_app.reflect.facts import Fact
from guardian_app.write.heuristic_guardian import fingerprint, tokens
from reflection_site.text import fold

# --- The update rule -----------------------------------------------------------------------------
STEP = 0.1  # Share of the remaining distance one piece of full-strength evidence moves the confidence.
MAX_STEP = 0.15  # No single ordinary piece of evidence moves the confidence further than this.
STRONG = 0.8  # Evidence at least this strong counts towards a large jump.
REPEATED = 3  # Strong contradictions in a row (no support between) before the large jump.
JUMP = 0.5  # The large jump: the confidence loses this share of itself.
MATCH_THRESHOLD = 0.5
DEFAULT_CONFIDENCE = 0.6


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def update_confidence(confidence: float, *, supports: bool, strength: float, strong_streak: int = 0) -> float:
    """The opinion update rule: small steps, and a large jump only after strong, repeated contradiction.

    - Support moves the confidence towards 1 by ``STEP × strength × (1 − c)``: a small step that shrinks
      as the opinion gets surer, so no amount of agreement makes it certain.
    - Contradiction moves it towards 0 by ``STEP × strength × c``.
    - Either step is at most ``MAX_STEP``.
    - The large jump: a strong contradiction (``strength ≥ STRONG``) that is the ``REPEATED``-th strong
      one in a row (``strong_streak`` counts this one; a support resets it) halves the confidence
      (``c × (1 − JUMP)``). One strong contradiction, or many weak ones, only ever take small steps.

    ``confidence`` and ``strength`` are clamped to [0, 1]; the result is in [0, 1], rounded to 4 places.
    """
    c = _clamp(confidence)
    s = _clamp(strength)
    if supports:
        return round(_clamp(c + min(MAX_STEP, STEP * s * (1 - c))), 4)
    if s >= STRONG and strong_streak >= REPEATED:
        return round(_clamp(c * (1 - JUMP)), 4)
    return round(_clamp(c - min(MAX_STEP, STEP * s * c)), 4)


# --- Matching a fact to an opinion ---------------------------------------------------------------
_NEGATIONS = frozenset(
    "not no never none nobody nothing neither nor cannot without stopped quit longer".split()
)  # "no longer": "no" counts once; "longer" is dropped from the words compared.
_NEGATIVE_VERBS = ("dislike", "hate", "avoid", "detest", "refuse")
_SENTIMENT_STEMS = ("like", "love", "prefer", "enjoy", "want", "dislik", "hat", "avoid", "detest", "refus")
_CJK_NEGATIONS = ("不", "没", "别", "从未", "讨厌")
_WORD = re.compile(r"[^\W_]+(?:'[a-z]+)?", re.UNICODE)
# What tokens() leaves of "doesn't", "can't" …: not content words.
_CONTRACTION_STEMS = frozenset(
    "don doesn didn isn wasn aren weren won can couldn shouldn wouldn hasn haven hadn t".split()
)


def is_negative(text: str) -> bool:
    """Whether the statement is negated: an odd number of negations and negative verbs."""
    count = 0
    for word in _WORD.findall(fold(text)):
        if word in _NEGATIONS - {"longer"} or word.endswith("n't"):
            count += 1
        elif word.startswith(_NEGATIVE_VERBS):
            count += 1
    folded = fold(text)
    count += sum(folded.count(mark) for mark in _CJK_NEGATIONS)
    return count % 2 == 1


def content_words(text: str) -> frozenset[str]:
    """The words compared between a fact and an opinion: content words without negations or like/dislike."""
    words = set()
    for token in tokens(text):
        if token in _NEGATIONS or token in _CONTRACTION_STEMS or token.startswith(_SENTIMENT_STEMS):
            continue
        if token.startswith("dis") and len(token) > 6:  # "disagree" compares as "agree"
            token = token[3:]
        words.add(token)
    for mark in ("不", "没", "别"):
        words = {w.replace(mark, "") for w in words}
    return frozenset(w for w in words if w)


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the content words of two statements, in [0, 1]."""
    left, right = content_words(a), content_words(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def evidence_strength(fact: Fact) -> float:
    if fact.kind == "opinion":
        return _clamp(fact.confidence if fact.confidence is not None else DEFAULT_CONFIDENCE)
    return {"world": 0.6, "experience": 0.6, "observation": 0.4}.get(fact.kind or "", 0.3)


def statement_fingerprint(statement: str) -> str:
    return hashlib.sha256(fingerprint(statement).encode()).hexdigest()


# --- Applying facts to opinions (pure: states in memory) -----------------------------------------
@dataclass
class OpinionState:
    entity: str
    entity_key: str
    statement: str
    confidence: float
    id: str | None = None
    supporting: int = 0
    contradicting: int = 0
    strong_streak: int = 0
    source: str = ""
    last_updated: dt.datetime | None = None
    fact_ids: set[str] = field(default_factory=set)

    @property
    def fingerprint(self) -> str:
        return statement_fingerprint(self.statement)


@dataclass
class OpinionChange:
    state: OpinionState
    fact: Fact
    stance: str  # supports | contradicts
    strength: float
    before: float
    after: float
    created: bool = False

    @property
    def delta(self) -> float:
        return round(self.after - self.before, 4)


def apply_fact(states: list[OpinionState], fact: Fact, *, now: dt.datetime) -> list[OpinionChange]:
    """Apply one fact to the opinions (steps in the module docstring); new opinions are appended to ``states``."""
    keys = fact.entity_keys or ("",)
    candidates = [s for s in states if s.entity_key in keys]
    if any(fact.id in s.fact_ids for s in candidates):
        return []
    best: tuple[float, OpinionState] | None = None
    for state in candidates:
        score = similarity(fact.content, state.statement)
        if score >= MATCH_THRESHOLD and (best is None or score > best[0]):
            best = (score, state)
    strength = evidence_strength(fact)
    if best is not None:
        state = best[1]
        supports = is_negative(fact.content) == is_negative(state.statement)
        before = state.confidence
        if supports:
            state.supporting += 1
            state.strong_streak = 0
        else:
            state.contradicting += 1
            if strength >= STRONG:
                state.strong_streak += 1
        state.confidence = update_confidence(
            before, supports=supports, strength=strength, strong_streak=state.strong_streak
        )
        state.last_updated = now
        state.fact_ids.add(fact.id)
        stance = OpinionEvidence.Stance.SUPPORTS if supports else OpinionEvidence.Stance.CONTRADICTS
        return [OpinionChange(state, fact, stance, strength, before, state.confidence)]
    if fact.kind != "opinion":
        return []
    entity = fact.entities[0] if fact.entities else ""
    initial = round(strength, 4)
    state = OpinionState(
        entity=entity,
        entity_key=entity_key(entity) if entity else "",
        statement=fact.content,
        confidence=initial,
        supporting=1,
        source=fact.source,
        last_updated=now,
        fact_ids={fact.id},
    )
    states.append(state)
    return [OpinionChange(state, fact, OpinionEvidence.Stance.SUPPORTS, strength, initial, initial, created=True)]


# --- The database ----------------------------------------------------------------------------------
def state_of(row: Opinion, fact_ids: set[str] | None = None) -> OpinionState:
    return OpinionState(
        id=row.id,
        entity=row.entity,
        entity_key=row.entity_key,
        statement=row.statement,
        confidence=row.confidence,
        supporting=row.supporting_count,
        contradicting=row.contradicting_count,
        strong_streak=row.contradiction_streak,
        source=row.source,
        last_updated=row.last_updated,
        fact_ids=set(fact_ids or ()),
    )


def load_states(entity_keys: list[str] | None = None, *, for_update: bool = False) -> list[OpinionState]:
    """Opinions as states (all, or those of the entities), oldest first, with the facts already counted."""
    rows = Opinion.objects.all()
    if for_update:
        rows = rows.select_for_update()
    if entity_keys is not None:
        rows = rows.filter(entity_key__in=entity_keys)
    opinions = list(rows.order_by("created_at", "id"))
    counted: dict[str, set[str]] = {}
    for opinion_id, fid in OpinionEvidence.objects.filter(opinion__in=[o.id for o in opinions]).values_list(
        "opinion_id", "fact_id"
    ):
        counted.setdefault(opinion_id, set()).add(fid)
    return [state_of(o, counted.get(o.id)) for o in opinions]


def _save_change(change: OpinionChange, run: ReflectRun | None) -> None:
    state = change.state
    fields = {
        "confidence": state.confidence,
        "supporting_count": state.supporting,
        "contradicting_count": state.contradicting,
        "contradiction_streak": state.strong_streak,
        "last_updated": state.last_updated or timezone.now(),
    }
    if change.created:
        opinion = Opinion.objects.create(
            entity=state.entity,
            entity_key=state.entity_key,
            statement=state.statement,
            fingerprint=state.fingerprint,
            source=state.source,
            created_by_run=run,
            created_at=state.last_updated or timezone.now(),
            **fields,
        )
        state.id = opinion.id
    else:
        Opinion.objects.filter(id=state.id).update(**fields)
    fact = change.fact
    OpinionEvidence.objects.create(
        opinion_id=state.id,
        fact_id=fact.id,
        stance=change.stance,
        strength=round(change.strength, 4),
        confidence_before=change.before,
        confidence_after=change.after,
        source=fact.source[:512],
        content=fact.content,
        fact_kind=fact.kind,
        fact_date=timezone.make_aware(dt.datetime.combine(fact.date, dt.time())),
        run=run,
    )


def record_fact(fact: Fact, *, run: ReflectRun | None, now: dt.datetime) -> list[OpinionChange]:
    """Apply one fact to the stored opinions in one transaction; counting a fact twice changes nothing."""
    keys = list(fact.entity_keys or ("",))
    for attempt in range(2):
        try:
            with transaction.atomic():
                states = load_states(keys, for_update=True)
                changes = apply_fact(states, fact, now=now)
                for change in changes:
                    _save_change(change, run)
                return changes
        except IntegrityError:
            # Another run counted this fact or created this opinion at the same moment: read again.
            if attempt:
                raise
    return []


def opinion_view(state: OpinionState, evidence: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """What a page shows of an opinion: statement, confidence, counts, last update, evidence sources."""
    return {
        "entity": state.entity,
        "statement": state.statement,
        "confidence": state.confidence,
        "supporting": state.supporting,
        "contradicting": state.contradicting,
        "updated": state.last_updated.date().isoformat() if state.last_updated else "",
        "evidence": evidence or [],
    }


def evidence_sources(opinion_ids: list[str], *, per_opinion: int = 3) -> dict[str, list[tuple[str, str]]]:
    """The newest evidence sources of each opinion: ``{id: [(source, "+"|"−"), …]}``."""
    out: dict[str, list[tuple[str, str]]] = {}
    rows = (
        OpinionEvidence.objects.filter(opinion_id__in=opinion_ids)
        .order_by("opinion_id", "-fact_date", "source")
        .values_list("opinion_id", "source", "stance")
    )
    for opinion_id, source, stance in rows:
        items = out.setdefault(opinion_id, [])
        if len(items) < per_opinion:
            items.append((source, "+" if stance == OpinionEvidence.Stance.SUPPORTS else "−"))
    return out
