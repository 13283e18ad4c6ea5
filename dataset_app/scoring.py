"""The quality score of a dataset sample: three deterministic factors in [0, 1] and their weighted sum.

The seed names the factors and their default weights (``datasetCollection.qualityScoring.weights``):

* ``conversationClarity`` (0.4): is the user's message something a model can learn from? It is the
  product of four parts, each in [0, 1]:
  - length: 0 for an empty message, rising linearly to 1 at 4 words (a CJK character counts as half a
    word), 1 up to 300 words, then falling linearly to 0.5 at 1,500 words (a wall of text teaches little);
  - signal: the share of letters (Latin or CJK) among the non-space characters, divided by 0.7 and capped
    at 1 (prose is about 80 % letters; pasted code, URLs and base64 are far less);
  - variety: for 8 words or more, distinct words / words, divided by 0.5 and capped at 1 (spam repeats);
  - reply: 1 if the agent replied, 0.85 if the reply is empty.
* ``decisionConfidence`` (0.35): how sure we are of the sample's label, from who agreed with it:
  a person's correction 1.0, a person's rollback 0.9, a write that stood ``notRolledBackWithinDays``
  0.8, the guardian's refusal 0.65, feedback alone 0.6, nothing else 0.5. If the label agrees with the
  gate and the gate reported its own confidence, 0.8 × that + 0.2 × the gate's confidence. Then the
  user's feedback: a thumbs-up that agrees with the label adds 0.1, an objection (thumbs-down) subtracts
  0.25 from a label that agrees with the gate and adds 0.1 to one that does not. Clamped to [0, 1].
* ``factVerifiability`` (0.25): how much of the fact is grounded in what was said. The fact's content
  words (lower-cased, light suffix stemming, stop words removed; CJK text as character bigrams) are
  looked up in the user's message and in the whole conversation: grounding = 0.75 × share found in
  the user's words + 0.25 × share found anywhere. Multiplied by a specificity factor: 0.5 for a fact of
  one content word, 1 from 2 to 40, falling linearly to 0.6 at 100. A label without a fact (NO_WRITE,
  refused) is as verifiable as its explanation: 1.0 with a person's reason of 10+ characters, 0.8 with a
  shorter one, 0.6 with a model's reason of 10+ characters, 0.4 otherwise.

The score is ``Σ weight × factor / Σ weight``, rounded to 4 places, so it stays in [0, 1] whatever
weights are configured.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings

from reflection_site.text import content_words, count_cjk, is_cjk, words

FACTORS: tuple[str, ...] = ("conversationClarity", "decisionConfidence", "factVerifiability")


class Evidence:
    """Who confirmed a sample's label, strongest first."""

    CORRECTION = "correction"
    ROLLBACK = "rollback"
    STOOD = "stood"
    REFUSAL = "refusal"
    FEEDBACK = "feedback"
    NONE = "none"


EVIDENCE_STRENGTH: dict[str, float] = {
    Evidence.CORRECTION: 1.0,
    Evidence.ROLLBACK: 0.9,
    Evidence.STOOD: 0.8,
    Evidence.REFUSAL: 0.65,
    Evidence.FEEDBACK: 0.6,
    Evidence.NONE: 0.5,
}


@dataclass(frozen=True)
class QualityWeights:
    conversation_clarity: float = 0.4
    decision_confidence: float = 0.35
    fact_verifiability: float = 0.25

    @classmethod
    def from_settings(cls) -> QualityWeights:
        return cls(
            conversation_clarity=settings.DATASET_WEIGHT_CONVERSATION_CLARITY,
            decision_confidence=settings.DATASET_WEIGHT_DECISION_CONFIDENCE,
            fact_verifiability=settings.DATASET_WEIGHT_FACT_VERIFIABILITY,
        )


@dataclass(frozen=True)
class ScoringInput:
    """What the collector knows about a sample when it scores it."""

    user_message: str
    agent_reply: str = ""
    context: Sequence[str] = ()
    fact: str | None = None  # the fact the label asserts; None for NO_WRITE / refused labels
    reason: str = ""  # why the label is what it is
    reason_by_person: bool = False
    evidence: str = Evidence.NONE
    agrees_with_gate: bool = True  # the label is what the model under training said
    gate_confidence: float | None = None
    feedback: str | None = None  # "up", "down" (any objection), or None


@dataclass(frozen=True)
class QualityScore:
    score: float
    factors: dict[str, float] = field(default_factory=dict)


# --- tokens ---------------------------------------------------------------------------------------
# Words, stems and stop words are reflection_site.text's, as every app reads them (issue 20).

_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)


def content_tokens(text: str) -> set[str]:
    """Content words of ``text`` (``text.content_words``, the role words user/agent dropped too): stemmed Latin
    words minus stop words, and CJK bigrams (a lone character stands for itself)."""
    return set(content_words(text, roles=True))


def _latin_words(text: str) -> list[str]:
    return [word for word in words(text, apostrophes=True) if not is_cjk(word)]


def _word_count(text: str) -> float:
    return len(_latin_words(text)) + count_cjk(text) / 2


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, value))


# --- factors --------------------------------------------------------------------------------------


def conversation_clarity(user_message: str, agent_reply: str = "") -> float:
    """See the module docstring: length × signal × variety × reply."""
    text = user_message.strip()
    words = _word_count(text)
    if words == 0:
        return 0.0
    if words < 4:
        length = words / 4
    elif words <= 300:
        length = 1.0
    else:
        length = max(0.5, 1.0 - 0.5 * (words - 300) / 1200)

    non_space = [c for c in text if not c.isspace()]
    letters = sum(1 for c in non_space if _LETTER.match(c))
    signal = min(1.0, (letters / len(non_space)) / 0.7) if non_space else 0.0

    latin = _latin_words(text)
    variety = min(1.0, (len(set(latin)) / len(latin)) / 0.5) if len(latin) >= 8 else 1.0

    reply = 1.0 if agent_reply.strip() else 0.85
    return round(_clamp(length * signal * variety * reply), 4)


def decision_confidence(
    *, evidence: str, agrees_with_gate: bool = True, gate_confidence: float | None = None, feedback: str | None = None
) -> float:
    """See the module docstring: evidence strength, the gate's own confidence, then the user's feedback."""
    value = EVIDENCE_STRENGTH.get(evidence, EVIDENCE_STRENGTH[Evidence.NONE])
    if agrees_with_gate and gate_confidence is not None:
        value = 0.8 * value + 0.2 * _clamp(gate_confidence)
    if feedback == "up" and agrees_with_gate:
        value += 0.1
    elif feedback == "down":
        value += -0.25 if agrees_with_gate else 0.1
    return round(_clamp(value), 4)


def fact_verifiability(
    fact: str | None,
    *,
    user_message: str,
    conversation: Sequence[str] = (),
    reason: str = "",
    reason_by_person: bool = False,
) -> float:
    """See the module docstring: grounding in the user's words × specificity, or the reason's quality."""
    if not fact or not fact.strip():
        explained = len(reason.strip()) >= 10
        if reason_by_person:
            return 1.0 if explained else 0.8
        return 0.6 if explained else 0.4
    fact_tokens = content_tokens(fact)
    if not fact_tokens:
        return 0.0
    in_user = content_tokens(user_message)
    anywhere = in_user.union(*(content_tokens(text) for text in conversation))
    grounding = 0.75 * len(fact_tokens & in_user) / len(fact_tokens) + 0.25 * len(fact_tokens & anywhere) / len(
        fact_tokens
    )
    size = len(fact_tokens)
    if size < 2:
        specificity = 0.5
    elif size <= 40:
        specificity = 1.0
    else:
        specificity = max(0.6, 1.0 - 0.4 * (size - 40) / 60)
    return round(_clamp(grounding * specificity), 4)


def score_sample(signals: ScoringInput, *, weights: QualityWeights | None = None) -> QualityScore:
    """The three factors and their weighted mean; deterministic for the same input and weights."""
    weights = weights or QualityWeights.from_settings()
    factors = {
        "conversationClarity": conversation_clarity(signals.user_message, signals.agent_reply),
        "decisionConfidence": decision_confidence(
            evidence=signals.evidence,
            agrees_with_gate=signals.agrees_with_gate,
            gate_confidence=signals.gate_confidence,
            feedback=signals.feedback,
        ),
        "factVerifiability": fact_verifiability(
            signals.fact,
            user_message=signals.user_message,
            conversation=[*signals.context, signals.agent_reply],
            reason=signals.reason,
            reason_by_person=signals.reason_by_person,
        ),
    }
    pairs = [
        (weights.conversation_clarity, factors["conversationClarity"]),
        (weights.decision_confidence, factors["decisionConfidence"]),
        (weights.fact_verifiability, factors["factVerifiability"]),
    ]
    total_weight = sum(max(0.0, w) for w, _ in pairs)
    score = sum(max(0.0, w) * f for w, f in pairs) / total_weight if total_weight else 0.0
    return QualityScore(score=round(_clamp(score), 4), factors=factors)
