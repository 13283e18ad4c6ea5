"""The learning guardrails (seed 002): thumbs-up/down feedback in, audited learning out.

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

Memory guard (positive feedback): the candidate is the gate's candidate fact for the turn when its
latest gate run proposed one, otherwise a fact distilled from the turn (the offline gate's reading of
the user's message, else the user's statement, or the question with the approved answer). It is
accepted only if, in this order (the first failure is the reason):

  ``too_short``    fewer than 40 characters (whitespace collapsed);
  ``boilerplate``  half or more of its letters are blacklisted phrases (thanks, ok, hope this helps,
                   谢谢, 好的, 希望对你有帮助 … plus ``LEARNING_BOILERPLATE_PHRASES``);
  ``low_score``    ``score_memory_candidate`` below ``LEARNING_MIN_MEM_SCORE`` (0.60);
  ``duplicate``    a memory item of the project has the same fingerprint (SHA-256 of the NFKC,
                   case-folded text without punctuation or spacing), whatever its status;
  ``project_cap``  the project already has ``LEARNING_MEM_MAX_PER_PROJECT`` active items.

Accepted (and not in shadow mode): an active ``MemoryItem``, and after commit the fact goes to the write
guardian for MEMORY.md (``run_guard_write("MEMORY.md", fact, "learning", item.id)``, idempotent per item).

Quality score (``score_memory_candidate``), each part in [0, 1]:
  score = 0.30 · substance + 0.30 · diversity + 0.40 · specificity − penalties, clamped to [0, 1]
  substance    content words (stopwords excluded; 1.5 Chinese characters count as one word) / 12
  diversity    distinct / all content words (Chinese: character bigrams); repetition scores low
  specificity  0.40, +0.25 digits (times, versions, amounts), +0.20 a proper noun (a capitalised word
               inside a sentence, or Latin letters inside Chinese), +0.20 technical tokens (code spans,
               URLs, paths, file names, host-like names), +0.10 quoted terms, +0.15 a fact or preference
               verb (is, uses, prefers, lives, 是, 使用, 喜欢, 住在 …)
  penalties    0.15 per vague word, at most 2 (something, stuff, maybe, 之类, 东西, 大概 …), 0.25 for a
               question, 0.20 when over a quarter of the characters are symbols, 0.10 for shouting,
               and half the boilerplate share

Rule guard (negative feedback): the reason is the rule. It is accepted only if, in this order:
  ``reason_too_short``  the reason has fewer than 10 characters;
  ``unclassified``      no keyword of ``RULE_KEYWORDS`` matches (safety wins whenever one of its
                        keywords is present; otherwise routing or style by the number of keywords
                        matched, a tie going to routing);
  ``duplicate``         a rule of the project has the same fingerprint (type + normalised text);
  ``project_cap``       the project already has ``LEARNING_RULE_MAX_PER_PROJECT`` active rules;
  ``rule_conflict``     an active rule of the same type is about the same subject (at least two thirds
                        of the smaller rule's subject words are shared) with the opposite stance ("don't use emoji" / "use more
                        emoji", "shorter" / "more detailed", "reply in English" / "reply in Chinese")
                        and the newcomer does not outrank it. Outranking is ``(priority, confidence)``
                        strictly greater. A newcomer that outranks every conflicting rule is accepted
                        and suppresses them (``conflict_with`` set both ways, a ``rule_suppress`` event
                        with reason ``conflict`` each); one that does not is refused (``rule_conflict``).
Priority: safety 90, routing 60, style 40; +10 for a strong word (never, always, must, 绝不, 必须 …),
−10 for a soft one (prefer, maybe, if possible, 最好, 尽量 …). Confidence: 0.5, +0.1 per extra keyword
matched (at most +0.2), +0.1 strong, −0.1 soft, +0.05 for a reason of 40 characters or more, within
[0.1, 0.95].

Decay (``decay_learning``, daily at 03:00), seed 004 P1-001:
  value = base × 2^(−age_days / LEARNING_DECAY_HALF_LIFE_DAYS) × (1 + LEARNING_DECAY_ACTIVE_WEIGHT · ln(1 + hits))
clamped to [0, 1], where base is a memory item's ``quality_score`` (→ ``score``) or a rule's
``base_confidence`` (→ ``confidence``) and age runs from creation. Memory items not hit for
``LEARNING_STALE_DAYS`` expire (``expires_at``), rules not hit for as long are archived; a project over
its cap loses its lowest-ranked items first (memory: score, hits, age; rules: priority, confidence,
hits, age). Each change is a learning event; the run is a ``decay_run`` event.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import math
import re
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Count, F, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from guardian_app.learning.ratelimit import RateLimitResult
from guardian_app.models import (
    FeedbackIdempotency,
    LearningEvent,
    LearningEventType,
    LearningSource,
    MemoryItem,
    Rule,
)
from reflection_site.errors import NotFound
from sessions_app.models import ConversationTurn, MemoryGateDecision

logger = logging.getLogger(__name__)

E = LearningEventType
DEFAULT_PROJECT = "default"
MIN_MEMORY_CHARS = 40
MIN_RULE_REASON_CHARS = 10
BOILERPLATE_SHARE = 0.5
CONFLICT_OVERLAP = 2 / 3
# An accepted item's fact is handed to the guardian after commit; one still unwritten after this
# long (a broker outage) is handed over again by the decay job.
REQUEUE_GRACE = dt.timedelta(minutes=10)


# --- Text --------------------------------------------------------------------------------------
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_CHAR = re.compile(f"[{_CJK}]")
# A run of CJK characters, or a run of other letters and digits (apostrophes kept inside words).
_RUN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:'[^\W_{_CJK}]+)*")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")


def _runs(text: str) -> list[str]:
    return _RUN.findall(_fold(text))


def _is_cjk(run: str) -> bool:
    return bool(_CJK_CHAR.match(run))


def normalize_text(text: str) -> str:
    """NFKC, case-folded, punctuation and spacing reduced to single spaces: what duplicates share."""
    return " ".join(_runs(text))


def fingerprint(text: str, *, salt: str = "") -> str:
    return hashlib.sha256((salt + normalize_text(text)).encode()).hexdigest()


def _collapse(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=64)
def _phrase_regex(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for a phrase list over normalised text: Latin phrases as whole words, CJK ones anywhere."""
    latin, cjk = [], []
    for phrase in phrases:
        norm = normalize_text(phrase)
        if norm:
            (cjk if _CJK_CHAR.search(norm) else latin).append(norm)
    parts = []
    if latin:
        alternation = "|".join(re.escape(p) for p in sorted(set(latin), key=len, reverse=True))
        parts.append(f"(?<![^ ])(?:{alternation})(?![^ ])")
    if cjk:
        parts.append("|".join(re.escape(p) for p in sorted(set(cjk), key=len, reverse=True)))
    return re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None


def _find_phrases(norm: str, phrases: Sequence[str]) -> list[str]:
    regex = _phrase_regex(tuple(phrases))
    return [m.group(0) for m in regex.finditer(norm)] if regex else []


# --- Boilerplate and the quality score ---------------------------------------------------------
BOILERPLATE_EN = (
    "thanks", "thank you", "thank you so much", "thanks a lot", "many thanks", "thx", "ty", "ok", "okay", "k",
    "great", "good job", "nice", "awesome", "perfect", "cool", "excellent", "amazing", "wonderful", "got it",
    "sounds good", "makes sense", "you're welcome", "no problem", "no worries", "sure", "yes", "yeah", "yep",
    "how can i help", "how can i help you", "how can i assist you", "is there anything else",
    "let me know if you need anything else", "let me know if you have any questions", "hope this helps",
    "hope that helps", "i hope this helps", "as an ai", "as an ai language model", "i'm sorry", "sorry",
    "i apologize", "happy to help", "glad to help", "glad i could help", "good answer", "great answer",
    "well done", "love it", "lol", "haha", "hello", "hi", "hey", "bye", "good morning", "good night",
    "have a nice day", "that's it", "that is all", "very good", "very helpful", "helpful", "this is helpful",
    "that's helpful", "that was helpful", "the answer", "good", "correct", "right", "exactly", "agreed",
)  # fmt: skip
BOILERPLATE_ZH = (
    "谢谢", "多谢", "感谢", "非常感谢", "谢谢你", "谢谢您", "好的", "好吧", "收到", "明白", "明白了", "了解",
    "知道了", "不客气", "没问题", "有什么可以帮", "有什么可以帮你", "有什么可以帮您", "还有什么需要",
    "还有什么问题", "希望对你有帮助", "希望对您有帮助", "希望能帮到你", "作为一个ai", "作为ai", "作为人工智能",
    "抱歉", "对不起", "你好", "您好", "哈哈", "哈哈哈", "点赞", "很好", "不错", "太棒了", "真棒", "辛苦了",
    "再见", "好的呢", "嗯嗯", "对的", "没错", "正确", "回答得很好", "很有帮助", "有帮助",
)  # fmt: skip


def boilerplate_phrases() -> tuple[str, ...]:
    extra = tuple(p for p in getattr(settings, "LEARNING_BOILERPLATE_PHRASES", ()) if p and p.strip())
    return BOILERPLATE_EN + BOILERPLATE_ZH + extra


def boilerplate_share(text: str) -> float:
    """The share of the text's letters, digits and CJK characters covered by blacklisted phrases."""
    norm = normalize_text(text)
    total = len(norm.replace(" ", ""))
    if total == 0:
        return 1.0
    regex = _phrase_regex(boilerplate_phrases())
    rest = regex.sub(" ", norm) if regex else norm
    return round(1 - len(rest.replace(" ", "")) / total, 3)


def is_boilerplate(text: str) -> bool:
    return boilerplate_share(text) >= BOILERPLATE_SHARE


STOPWORDS_EN = frozenset(
    """a an the is are was were be been being am to of in on at for with and or but nor it its it's this that
    these those i me my mine you your yours he him his she her hers we us our they them their there here as by
    from so if then than do does did done not no yes very really just also too can could would should will
    shall may might must have has had what which who whom when where how why all any some more most about into
    up down out over under again once only own same such both each few other off per via let's i'm you're
    don't doesn't didn't isn't aren't wasn't weren't won't can't""".split()
)
STOP_ZH = frozenset("的了是在和也就都而及与着或我你他她它们这那吗呢吧啊把被给个")
VAGUE_PHRASES = (
    "something", "stuff", "things", "thing", "whatever", "somehow", "maybe", "perhaps", "kind of", "sort of",
    "etc", "and so on", "anything", "i guess", "i think", "probably", "some", "somewhat",
    "什么的", "之类", "某些", "东西", "随便", "差不多", "大概", "可能", "也许", "等等", "反正", "一些",
)  # fmt: skip
FACT_WORDS = (
    "is", "are", "was", "uses", "use", "prefers", "prefer", "likes", "like", "lives", "live", "works", "work",
    "runs", "run", "has", "have", "wants", "needs", "always", "never", "called", "named", "located", "based",
    "deploys", "deploy", "owns", "speaks", "studies", "born",
    "是", "喜欢", "使用", "住在", "叫", "偏好", "需要", "希望", "习惯", "每天", "总是", "从不", "负责", "部署",
)  # fmt: skip
_TECH = re.compile(
    r"`[^`]+`|https?://|\b[\w-]+\.(?:py|js|ts|md|json|ya?ml|toml|sh|sql|txt|csv|com|org|net|io|dev)\b"
    r"|(?<![\w/])/[\w.-]+/|\b\w+_\w+\b|\b[\w.+-]+@[\w-]+\.\w+|\b[a-zA-Z]+-\d+\b|\b\d+\.\d+\.\d+\b|:\d{2,5}\b"
)
_QUOTED = re.compile(r"\"[^\"]{2,}\"|“[^”]{2,}”|「[^」]{2,}」|『[^』]{2,}』")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?。！？])\s+")
_LATIN_WORD = re.compile(r"[A-Za-z][\w'-]*")


@dataclass(frozen=True)
class QualityScore:
    score: float
    substance: float
    diversity: float
    specificity: float
    penalty: float


def _has_proper_noun(text: str) -> bool:
    for sentence in _SENTENCE_SPLIT.split(text):
        words = _LATIN_WORD.findall(sentence)
        if any(w[0].isupper() and w != "I" and not w.startswith("I'") for w in words[1:]):
            return True
    return False


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def score_memory_candidate(text: str) -> QualityScore:
    """The memory guard's quality score in [0, 1]; the module docstring gives the formula."""
    raw = _collapse(text)
    runs = _runs(raw)
    latin = [r for r in runs if not _is_cjk(r)]
    content_latin = [w for w in latin if w not in STOPWORDS_EN]
    cjk_runs = ["".join(c for c in r if c not in STOP_ZH) for r in runs if _is_cjk(r)]
    cjk_chars = sum(len(r) for r in cjk_runs)

    substance = min(1.0, (len(content_latin) + cjk_chars / 1.5) / 12)
    tokens = content_latin + [b for r in cjk_runs if r for b in _bigrams(r)]
    diversity = len(set(tokens)) / len(tokens) if tokens else 0.0

    norm = " ".join(runs)
    specificity = 0.40
    if re.search(r"\d", raw):
        specificity += 0.25
    if _has_proper_noun(raw) or (cjk_chars and any(re.search("[a-z]", w) for w in latin)):
        specificity += 0.20
    if _TECH.search(raw):
        specificity += 0.20
    if _QUOTED.search(raw):
        specificity += 0.10
    if _find_phrases(norm, FACT_WORDS):
        specificity += 0.15
    specificity = min(1.0, specificity)

    penalty = 0.15 * min(2, len(_find_phrases(norm, VAGUE_PHRASES)))
    if raw.rstrip().endswith(("?", "？")):
        penalty += 0.25
    symbols = sum(1 for ch in raw if not (ch.isalnum() or ch.isspace()))
    if raw and symbols / len(raw) > 0.25:
        penalty += 0.20
    letters = [c for c in raw if c.isascii() and c.isalpha()]
    if len(letters) >= 20 and sum(c.isupper() for c in letters) / len(letters) > 0.6:
        penalty += 0.10
    penalty += 0.5 * boilerplate_share(raw)

    score = 0.30 * substance + 0.30 * diversity + 0.40 * specificity - penalty
    return QualityScore(
        score=round(min(1.0, max(0.0, score)), 3),
        substance=round(substance, 3),
        diversity=round(diversity, 3),
        specificity=round(specificity, 3),
        penalty=round(penalty, 3),
    )


@dataclass(frozen=True)
class MemoryCheck:
    accepted: bool
    reason: str  # "accepted" or the first condition that failed
    fingerprint: str
    quality: QualityScore
    duplicate_of: str | None = None


def screen_memory_candidate(text: str) -> MemoryCheck:
    """Conditions 1-3 (length, boilerplate, score): text only, no database; ``reason`` "screened" if they pass."""
    fact = _collapse(text)
    fp = fingerprint(fact)
    quality = score_memory_candidate(fact)
    if len(fact) < MIN_MEMORY_CHARS:
        return MemoryCheck(False, "too_short", fp, quality)
    if is_boilerplate(fact):
        return MemoryCheck(False, "boilerplate", fp, quality)
    if quality.score < settings.LEARNING_MIN_MEM_SCORE:
        return MemoryCheck(False, "low_score", fp, quality)
    return MemoryCheck(False, "screened", fp, quality)


def _check_memory_in_database(screened: MemoryCheck, *, project_id: str) -> MemoryCheck:
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
    return _check_memory_in_database(screened, project_id=project_id)


# --- The candidate fact of a turn ----------------------------------------------------------------
_QUESTION_START = re.compile(
    r"^(?:how|what|why|when|where|which|who|whom|whose|can|could|would|should|is|are|do|does|did|will)\b", re.I
)


def _clip(text: str, limit: int) -> str:
    text = _collapse(text)
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
    user = _collapse(turn.user_message_content or "")
    agent = _collapse(turn.agent_message_content or "")
    try:
        from sessions_app.heuristic_gate import classify_turn

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
        return _collapse(candidate), MemoryItem.Origin.GATE
    fact = distill_fact(turn)
    return (fact or None), MemoryItem.Origin.DISTILLED


# --- Rules: type, priority, confidence, subject and stance ---------------------------------------
RULE_KEYWORDS: dict[str, tuple[str, ...]] = {
    "safety": (
        "unsafe", "safety", "safe", "dangerous", "danger", "harm", "harmful", "illegal", "password", "passwords",
        "secret", "secrets", "credential", "credentials", "api key", "api keys", "token", "tokens", "private",
        "privacy", "personal data", "personal information", "pii", "leak", "leaked", "leaks", "confidential",
        "security", "malware", "exploit", "self harm", "suicide", "medical advice", "legal advice", "delete",
        "deleted", "rm rf", "drop table", "destructive", "irreversible", "payment", "bank", "consent", "expose",
        "exposed", "phishing", "violence", "weapon", "weapons",
        "安全", "危险", "有害", "违法", "非法", "密码", "密钥", "口令", "隐私", "个人信息", "泄露", "泄漏", "机密",
        "敏感", "删除", "删库", "不可逆", "转账", "银行卡", "身份证", "恶意", "攻击", "自残", "暴力", "医疗建议",
        "法律建议",
    ),
    "routing": (
        "route", "routing", "routed", "channel", "channels", "escalate", "escalation", "forward", "forwarded",
        "redirect", "hand off", "handoff", "hand over", "delegate", "assign", "assigned", "transfer", "send it to",
        "send to", "should go to", "ping", "notify", "wrong person", "wrong team", "wrong channel", "wrong place",
        "support team", "on call", "ticket", "queue", "tool", "tools", "department", "dm", "direct message",
        "email", "thread", "team", "send", "sent", "belongs in", "post it in", "ops", "admin", "human",
        "转给", "转交", "转发", "转到", "路由", "频道", "群里", "私信", "升级", "上报", "交给", "分配", "派给",
        "工单", "值班", "队列", "工具", "调用", "通知", "邮件", "部门", "负责人",
    ),
    "style": (
        "tone", "formal", "informal", "casual", "polite", "rude", "friendly", "verbose", "wordy", "long", "longer",
        "short", "shorter", "concise", "brief", "succinct", "detailed", "detail", "bullet", "bullets",
        "bullet points", "list", "markdown", "format", "formatting", "emoji", "emojis", "language", "english",
        "chinese", "jargon", "simple", "simpler", "plain", "style", "wording", "caps", "exclamation", "headings",
        "paragraph", "paragraphs", "summary", "summarize", "explain", "explanation", "code block", "spelling",
        "grammar", "professional", "chatty", "lengthy", "terse",
        "语气", "口吻", "正式", "随意", "礼貌", "客气", "啰嗦", "冗长", "太长", "太短", "简短", "简洁", "精简",
        "详细", "格式", "列表", "要点", "表情", "中文", "英文", "语言", "术语", "通俗", "风格", "措辞", "段落",
        "标题", "总结", "解释", "口语",
    ),
}  # fmt: skip
RULE_BASE_PRIORITY = {"safety": 90, "routing": 60, "style": 40}
STRONG_WORDS = (
    "never", "always", "must", "must not", "under no circumstances", "absolutely", "do not ever", "at all times",
    "绝不", "绝对", "必须", "务必", "永远", "一定", "禁止", "千万",
)  # fmt: skip
SOFT_WORDS = (
    "prefer", "preferably", "maybe", "perhaps", "try to", "could you", "would be nice", "if possible", "ideally",
    "a bit", "slightly", "a little",
    "最好", "尽量", "可以的话", "也许", "建议", "稍微", "有点",
)  # fmt: skip
NEGATIONS = (
    "don't", "dont", "do not", "never", "stop", "avoid", "no", "not", "without", "less", "fewer", "quit",
    "shouldn't", "should not", "mustn't", "must not", "can't", "cannot", "won't", "refrain",
    "不要", "别", "禁止", "不能", "不许", "不准", "勿", "停止", "避免", "少", "不用", "不必", "无需", "不应该",
    "不该", "绝不", "千万不要",
)  # fmt: skip
# Words that place a rule on an axis with two opposite ends: (axis, end). A Chinese complaint ("太长",
# "啰嗦") already says which way the user wants it, so a negation beside it does not flip it again.
AXES: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("short", "shorter", "brief", "briefer", "briefly", "concise", "succinct", "terse", "compact"),
                    ("length", 1)),
    **dict.fromkeys(("long", "longer", "detailed", "verbose", "elaborate", "thorough", "lengthy", "wordy"),
                    ("length", -1)),
    **dict.fromkeys(("formal", "professional", "polite"), ("formality", 1)),
    **dict.fromkeys(("casual", "informal", "relaxed", "chatty"), ("formality", -1)),
    **dict.fromkeys(("english",), ("language", 1)),
    **dict.fromkeys(("chinese", "mandarin"), ("language", -1)),
    **dict.fromkeys(("简短", "简洁", "精简", "简要", "短一点"), ("length", 1)),
    **dict.fromkeys(("详细", "长一点", "展开", "具体"), ("length", -1)),
    **dict.fromkeys(("正式", "专业", "礼貌", "客气"), ("formality", 1)),
    **dict.fromkeys(("随意", "口语", "轻松", "随和"), ("formality", -1)),
    **dict.fromkeys(("英文", "英语"), ("language", 1)),
    **dict.fromkeys(("中文", "汉语", "普通话"), ("language", -1)),
}  # fmt: skip
COMPLAINTS: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("太长", "太啰嗦", "啰嗦", "冗长", "太详细", "太多"), ("length", 1)),
    **dict.fromkeys(("太短", "太简单", "太简略"), ("length", -1)),
    **dict.fromkeys(("太正式",), ("formality", -1)),
    **dict.fromkeys(("太随意",), ("formality", 1)),
}  # fmt: skip
_INTENSIFIERS = frozenset({"too", "overly", "excessively"})
GENERIC_EN = frozenset(
    """use using used add adding make making give giving put keep write writing reply replies replying answer
    answers answering respond response responses message messages please be more start always never again ever
    much many every time times when you your me us it them stop avoid less fewer without don't dont do not
    should must shouldn't mustn't can't cannot won't refrain quit no prefer preferably maybe perhaps try could
    would nice possible ideally bit slightly little way like""".split()
)
GENERIC_ZH = (
    "使用", "回复", "回答", "请", "要", "多", "再", "一点", "一些", "以后", "总是", "每次", "时候", "应该", "需要",
    "用", "说", "话", "给", "把", "你", "我", "的", "了", "得", "太", "更", "点",
)  # fmt: skip


def _stem(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def classify_rule(reason: str) -> tuple[str | None, dict[str, list[str]]]:
    """``(rule_type, keywords matched per type)``; safety whenever it matches, else routing or style."""
    norm = normalize_text(reason)
    hits = {kind: sorted(set(_find_phrases(norm, words))) for kind, words in RULE_KEYWORDS.items()}
    if hits["safety"]:
        return "safety", hits
    if not hits["routing"] and not hits["style"]:
        return None, hits
    return ("routing" if len(hits["routing"]) >= len(hits["style"]) else "style"), hits


def rule_subject(reason: str) -> tuple[frozenset[str], int]:
    """``(subject words, stance)``: what the rule is about, and +1 (do / this end) or −1 (don't / that end)."""
    norm = normalize_text(reason)
    polarity = -1 if _find_phrases(norm, NEGATIONS) else 1
    words: set[str] = set()
    axis: tuple[str, int] | None = None
    complaint = False
    runs = norm.split(" ")
    for i, run in enumerate(runs):
        if _is_cjk(run):
            for phrase, where in (*COMPLAINTS.items(), *AXES.items()):
                if phrase in run and _CJK_CHAR.match(phrase):
                    if axis is None:
                        axis, complaint = where, phrase in COMPLAINTS
                    run = run.replace(phrase, " ")
            for phrase in sorted((*NEGATIONS, *STRONG_WORDS, *SOFT_WORDS, *GENERIC_ZH), key=len, reverse=True):
                if _CJK_CHAR.match(phrase):
                    run = run.replace(phrase, " ")
            for piece in run.split():
                pieces = [c for c in piece if c not in STOP_ZH] if len(piece) == 1 else _bigrams(piece)
                words.update(pieces)
            continue
        if run in AXES:
            where = AXES[run]
            if i > 0 and runs[i - 1] in _INTENSIFIERS:  # "too long" asks for the other end.
                where, flipped = (where[0], -where[1]), True
            else:
                flipped = False
            if axis is None:
                axis, complaint = where, flipped
            continue
        if run in STOPWORDS_EN or run in GENERIC_EN or run in _INTENSIFIERS:
            continue
        words.add(_stem(run))
    if axis is None:
        return frozenset(words), polarity
    words.add(f"~{axis[0]}")
    return frozenset(words), axis[1] if complaint else polarity * axis[1]


@dataclass(frozen=True)
class RuleDraft:
    rule_type: str | None
    priority: int
    confidence: float
    subject: str
    stance: int
    fingerprint: str
    keywords: dict[str, list[str]]


def draft_rule(reason: str) -> RuleDraft:
    """Type, priority, confidence, subject and stance of the rule a negative feedback's reason states."""
    text = _collapse(reason)
    rule_type, hits = classify_rule(text)
    norm = normalize_text(text)
    strong = bool(_find_phrases(norm, STRONG_WORDS))
    soft = bool(_find_phrases(norm, SOFT_WORDS))
    priority = RULE_BASE_PRIORITY.get(rule_type or "", 50) + (10 if strong else 0) - (10 if soft else 0)
    matched = len(hits.get(rule_type or "", [])) if rule_type else 0
    confidence = 0.5 + 0.1 * min(2, max(0, matched - 1)) + (0.1 if strong else 0) - (0.1 if soft else 0)
    confidence += 0.05 if len(text) >= 40 else 0
    subject, stance = rule_subject(text)
    return RuleDraft(
        rule_type=rule_type,
        priority=max(0, min(100, priority)),
        confidence=round(max(0.1, min(0.95, confidence)), 2),
        subject=" ".join(sorted(subject)),
        stance=stance,
        fingerprint=fingerprint(text, salt=f"{rule_type}:"),
        keywords={k: v for k, v in hits.items() if v},
    )


def subject_overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """Shared subject words over the smaller subject's (1.0 when one subject contains the other)."""
    sa, sb = set(a), set(b)
    return len(sa & sb) / min(len(sa), len(sb)) if sa and sb else 0.0


def find_conflicts(draft: RuleDraft, *, project_id: str = DEFAULT_PROJECT) -> list[Rule]:
    """Active rules of the same type about the same subject with the opposite stance, strongest first."""
    if not draft.subject:
        return []
    candidates = Rule.objects.filter(
        project_id=project_id, rule_type=draft.rule_type, status=Rule.Status.ACTIVE
    ).exclude(stance=draft.stance)
    subject = draft.subject.split()
    found = [
        r
        for r in candidates.only("id", "subject", "priority", "confidence", "stance", "content")
        if subject_overlap(subject, r.subject.split()) >= CONFLICT_OVERLAP
    ]
    return sorted(found, key=lambda r: (r.priority, r.confidence), reverse=True)


def outranks(draft: RuleDraft, rule: Rule) -> bool:
    return (draft.priority, draft.confidence) > (rule.priority, rule.confidence)


# --- Failures: logged, counted, recorded when the database lets us -------------------------------
_errors: Counter[str] = Counter()
_errors_lock = threading.Lock()
_last_recorded: dict[str, float] = {}


def guardrail_error_count(component: str | None = None) -> int:
    """Errors the guardrails failed open on, in this process (``guardrail_error`` events are the durable count)."""
    with _errors_lock:
        return _errors[component] if component else sum(_errors.values())


def record_failure(component: str, exc: BaseException | str, *, throttle_s: float = 0, **context: Any) -> None:
    """Count and log a failure, and record a ``guardrail_error`` event (at most one per ``throttle_s``)."""
    with _errors_lock:
        _errors[component] += 1
        count = _errors[component]
        now = time.monotonic()
        due = now - _last_recorded.get(component, -math.inf) >= throttle_s
        if due:
            _last_recorded[component] = now
    if isinstance(exc, BaseException):
        logger.warning("learning guardrails failed open in %s (%d so far): %r", component, count, exc)
    if not due:
        return
    try:
        with transaction.atomic():
            LearningEvent.objects.create(
                event_type=E.GUARDRAIL_ERROR,
                reason=component[:64],
                project_id=context.pop("project_id", DEFAULT_PROJECT),
                source=context.pop("source", LearningSource.API_FEEDBACK),
                trace_id=context.pop("trace_id", None),
                user_id=context.pop("user_id", "")[:255],
                payload_json={"error": repr(exc)[:2000], "count_in_process": count, **context},
            )
    except Exception:  # The database may be what failed; the log line and the counter remain.
        logger.warning("could not record the guardrail error of %s", component, exc_info=True)


def reset_error_counts() -> None:
    with _errors_lock:
        _errors.clear()
        _last_recorded.clear()


# --- Feedback ------------------------------------------------------------------------------------
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
    reason = _collapse(reason) if reason and reason.strip() else None
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


def receive_feedback(
    turn: ConversationTurn,
    *,
    user_id: str,
    feedback: str,
    reason: str | None = None,
    project_id: str = DEFAULT_PROJECT,
    source: str = LearningSource.API_FEEDBACK,
) -> tuple[FeedbackOutcome | None, RateLimitResult | None]:
    """The feedback endpoint's work: the per-user rate limit, then ``apply_feedback``.

    Returns ``(None, limit)`` when the limit refuses the request (a ``rate_limited`` event is recorded and
    nothing else), else ``(outcome, limit)``; ``limit`` is None with the guardrails off. With Redis the
    limit is one round trip before any work; with the database counter its statement runs inside the
    feedback's transaction, so a feedback costs one commit. A limiter failure fails open and is counted.
    """
    from guardian_app.learning import ratelimit

    enabled = settings.LEARNING_GUARDRAILS_ENABLED
    limit = ratelimit.check_feedback(user_id) if enabled and settings.REDIS_URL else None
    prepared = None
    if limit is None or limit.allowed:
        prepared = prepare_feedback(
            turn, user_id=user_id, feedback=feedback, reason=reason, project_id=project_id, source=source
        )
    context = {"trace_id": turn.id, "user_id": user_id, "project_id": project_id, "source": source}
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
        check = _check_memory_in_database(check, project_id=fb.project_id)
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
    # Not functools.partial: Django 5.2 logs a failed robust callback by its __qualname__ (ticket #36487).
    transaction.on_commit(lambda: hand_to_guardian(item.id, fact), robust=True)
    return FeedbackOutcome(accepted=True, reason=E.MEM_ACCEPT, shadow_mode=False, event_id=event.id, item_id=item.id)


def hand_to_guardian(item_id: str, fact: str) -> None:
    """Give an accepted fact to the write guardian for MEMORY.md (idempotent per item on its side)."""
    from guardian_app.tasks import run_guard_write

    run_guard_write.delay("MEMORY.md", fact, "learning", item_id)


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


# --- Hits and operator actions -------------------------------------------------------------------
KINDS: dict[str, type[MemoryItem] | type[Rule]] = {"memory-items": MemoryItem, "rules": Rule}


def record_hit(kind: str, item_id: str, *, now: dt.datetime | None = None) -> MemoryItem | Rule:
    """The agent used this memory item or rule: count it (decay honours hits) and push back its expiry."""
    model = KINDS[kind]
    now = now or timezone.now()
    updates: dict[str, Any] = {"hit_count": F("hit_count") + 1, "last_hit_at": now}
    if model is MemoryItem:
        updates["expires_at"] = now + dt.timedelta(days=settings.LEARNING_STALE_DAYS)
    if not model.objects.filter(id=item_id).update(**updates):
        raise NotFound(f"No {model._meta.verbose_name} {item_id!r}.")
    return model.objects.get(id=item_id)


ACTIONS = ("suppress", "archive", "reactivate")
_TARGET_STATUS = {
    (MemoryItem, "suppress"): MemoryItem.Status.SUPPRESSED,
    (MemoryItem, "archive"): MemoryItem.Status.EXPIRED,
    (MemoryItem, "reactivate"): MemoryItem.Status.ACTIVE,
    (Rule, "suppress"): Rule.Status.SUPPRESSED,
    (Rule, "archive"): Rule.Status.ARCHIVED,
    (Rule, "reactivate"): Rule.Status.ACTIVE,
}
_ACTION_EVENT = {
    (MemoryItem, "suppress"): E.MEM_SUPPRESS,
    (MemoryItem, "archive"): E.MEM_EXPIRE,
    (MemoryItem, "reactivate"): E.MEM_REACTIVATE,
    (Rule, "suppress"): E.RULE_SUPPRESS,
    (Rule, "archive"): E.RULE_ARCHIVE,
    (Rule, "reactivate"): E.RULE_REACTIVATE,
}


def change_status(obj: MemoryItem | Rule, action: str, *, actor: str, note: str = "") -> bool:
    """Suppress, archive or reactivate one item for an operator; returns whether anything changed.

    Reactivating a rule suppresses the active rules that conflict with it (the operator has chosen), each
    with a ``rule_suppress`` event. Nothing is removed from MEMORY.md here: the write guardian's audit of the
    item (``source_ref`` = the item id) is what an operator rolls back.
    """
    model = type(obj)
    target = _TARGET_STATUS[(model, action)]
    now = timezone.now()
    with transaction.atomic():
        updates: dict[str, Any] = {"status": target, "updated_at": now}
        if model is MemoryItem and target == MemoryItem.Status.ACTIVE:
            updates["expires_at"] = now + dt.timedelta(days=settings.LEARNING_STALE_DAYS)
        changed = model.objects.filter(id=obj.id).exclude(status=target).update(**updates)
        if not changed:
            return False
        event_kwargs = {"project_id": obj.project_id, "source": LearningSource.OPERATOR, "created_at": now}
        LearningEvent.objects.create(
            event_type=_ACTION_EVENT[(model, action)],
            reason=f"operator_{action}",
            ref_id=obj.id,
            payload_json={"by": actor, "from": obj.status, "note": note},
            **event_kwargs,
        )
        if model is Rule and target == Rule.Status.ACTIVE:
            rule: Rule = obj  # type: ignore[assignment]
            draft = RuleDraft(
                rule.rule_type, rule.priority, rule.confidence, rule.subject, rule.stance, rule.fingerprint, {}
            )
            for other in find_conflicts(draft, project_id=rule.project_id):
                if other.id == rule.id:
                    continue
                Rule.objects.filter(id=other.id).update(
                    status=Rule.Status.SUPPRESSED, conflict_with=rule.id, updated_at=now
                )
                LearningEvent.objects.create(
                    event_type=E.RULE_SUPPRESS,
                    reason="operator_reactivated",
                    ref_id=other.id,
                    payload_json={"by": actor, "in_favour_of": rule.id},
                    **event_kwargs,
                )
    obj.status = target
    return True


# --- Decay ---------------------------------------------------------------------------------------
def decay_value(
    base: float,
    *,
    age_days: float,
    hit_count: int = 0,
    half_life_days: float | None = None,
    active_weight: float | None = None,
) -> float:
    """Seed 004 P1-001: ``base × 2^(−age/half_life) × (1 + weight · ln(1 + hits))``, within [0, 1]."""
    half_life = half_life_days if half_life_days is not None else settings.LEARNING_DECAY_HALF_LIFE_DAYS
    weight = active_weight if active_weight is not None else settings.LEARNING_DECAY_ACTIVE_WEIGHT
    time_decay = math.pow(2, -max(0.0, age_days) / half_life) if half_life > 0 else 1.0
    boost = 1 + weight * math.log(1 + max(0, hit_count))
    return min(1.0, max(0.0, base * time_decay * boost))


@dataclass
class DecayReport:
    memory_items_decayed: int = 0
    rules_decayed: int = 0
    memory_items_expired: int = 0
    rules_archived: int = 0
    memory_items_over_cap: int = 0
    rules_over_cap: int = 0
    requeued: int = 0
    rate_limit_rows_purged: int = 0
    shadow: bool = False
    enabled: bool = True
    changes: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("changes")
        return data


def _age_days(now: dt.datetime, then: dt.datetime) -> float:
    return (now - then).total_seconds() / 86400


def decay_learning(*, now: dt.datetime | None = None, progress: Callable[[int], None] | None = None) -> DecayReport:
    """The daily job: decay scores and confidences, expire and archive stale items, enforce the caps.

    1. Recompute every active memory item's ``score`` and rule's ``confidence`` (``decay_value``).
    2. Expire memory items past ``expires_at`` and archive rules not hit for ``LEARNING_STALE_DAYS``.
    3. Per project over its cap, expire / archive the lowest-ranked active items until it fits.
    4. Hand accepted facts that never reached the guardian (a broker outage) to it again.
    Every change is a learning event (source ``system``). In shadow mode the changes are recorded with
    ``shadow=True`` and not applied; with the guardrails off nothing happens.
    """
    now = now or timezone.now()
    report = DecayReport(shadow=settings.LEARNING_SHADOW_MODE, enabled=settings.LEARNING_GUARDRAILS_ENABLED)
    if not report.enabled:
        return report
    done = 0

    def tick(n: int = 1) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done)

    report.memory_items_decayed = _decay_rows(MemoryItem, "quality_score", "score", now=now, report=report, tick=tick)
    report.rules_decayed = _decay_rows(Rule, "base_confidence", "confidence", now=now, report=report, tick=tick)

    stale_before = now - dt.timedelta(days=settings.LEARNING_STALE_DAYS)
    stale_items = MemoryItem.objects.filter(status=MemoryItem.Status.ACTIVE).filter(
        Q(expires_at__lte=now)
        | Q(expires_at__isnull=True, last_hit_at__lt=stale_before)
        | Q(expires_at__isnull=True, last_hit_at__isnull=True, created_at__lt=stale_before)
    )
    report.memory_items_expired = _retire(stale_items, MemoryItem.Status.EXPIRED, E.MEM_EXPIRE, "stale", now, report)
    stale_rules = Rule.objects.filter(status=Rule.Status.ACTIVE).filter(
        Q(last_hit_at__lt=stale_before) | Q(last_hit_at__isnull=True, created_at__lt=stale_before)
    )
    report.rules_archived = _retire(stale_rules, Rule.Status.ARCHIVED, E.RULE_ARCHIVE, "stale", now, report)

    report.memory_items_over_cap = _enforce_cap(
        MemoryItem,
        settings.LEARNING_MEM_MAX_PER_PROJECT,
        ("score", "hit_count", "created_at", "id"),
        MemoryItem.Status.EXPIRED,
        E.MEM_EXPIRE,
        now,
        report,
    )
    report.rules_over_cap = _enforce_cap(
        Rule,
        settings.LEARNING_RULE_MAX_PER_PROJECT,
        ("priority", "confidence", "hit_count", "created_at", "id"),
        Rule.Status.ARCHIVED,
        E.RULE_ARCHIVE,
        now,
        report,
    )
    if not report.shadow:
        report.requeued = requeue_unwritten_items(now=now)
    from guardian_app.learning.ratelimit import purge_expired

    report.rate_limit_rows_purged = purge_expired()
    LearningEvent.objects.create(
        event_type=E.DECAY_RUN,
        reason="daily",
        source=LearningSource.SYSTEM,
        shadow=report.shadow,
        created_at=now,
        payload_json=report.summary(),
    )
    logger.info("learning decay: %s", report.summary())
    return report


def _decay_rows(
    model: type[MemoryItem] | type[Rule],
    base_field: str,
    value_field: str,
    *,
    now: dt.datetime,
    report: DecayReport,
    tick: Callable[[int], None],
    batch: int = 500,
) -> int:
    rows = model.objects.filter(status="active").only("id", base_field, value_field, "hit_count", "created_at")
    changed: list[Any] = []
    total = 0
    for row in rows.iterator(chunk_size=batch):
        value = round(
            decay_value(getattr(row, base_field), age_days=_age_days(now, row.created_at), hit_count=row.hit_count), 4
        )
        if value != getattr(row, value_field):
            setattr(row, value_field, value)
            row.decayed_at = now
            changed.append(row)
        if len(changed) >= batch:
            total += _save_decayed(model, value_field, changed, report)
            tick(len(changed))
            changed = []
    total += _save_decayed(model, value_field, changed, report)
    tick(len(changed))
    return total


def _save_decayed(model: type[Any], value_field: str, rows: list[Any], report: DecayReport) -> int:
    if not rows:
        return 0
    if not report.shadow:
        with transaction.atomic():
            model.objects.bulk_update(rows, [value_field, "decayed_at"])
    return len(rows)


def _retire(
    queryset: QuerySet[Any], status: str, event_type: str, reason: str, now: dt.datetime, report: DecayReport
) -> int:
    rows = list(queryset.only("id", "project_id", "status", "hit_count", "last_hit_at", "created_at")[:10_000])
    if not rows:
        return 0
    events = [
        LearningEvent(
            event_type=event_type,
            reason=reason,
            ref_id=row.id,
            project_id=row.project_id,
            source=LearningSource.SYSTEM,
            shadow=report.shadow,
            created_at=now,
            payload_json={
                "hit_count": row.hit_count,
                "last_hit_at": row.last_hit_at.isoformat() if row.last_hit_at else None,
            },
        )
        for row in rows
    ]
    ids = [row.id for row in rows]
    with transaction.atomic():
        if not report.shadow:
            type(rows[0]).objects.filter(id__in=ids, status="active").update(status=status, updated_at=now)
        LearningEvent.objects.bulk_create(events, batch_size=500)
    report.changes.extend({"id": i, "event": event_type, "reason": reason} for i in ids)
    return len(ids)


def _enforce_cap(
    model: type[MemoryItem] | type[Rule],
    cap: int,
    ranking: tuple[str, ...],
    status: str,
    event_type: str,
    now: dt.datetime,
    report: DecayReport,
) -> int:
    over = (
        model.objects.filter(status="active")
        .values("project_id")
        .annotate(n=Count("id"))
        .filter(n__gt=cap)
        .values_list("project_id", "n")
    )
    total = 0
    for project_id, count in list(over):
        weakest = model.objects.filter(project_id=project_id, status="active").order_by(*ranking)[: count - cap]
        ids = list(weakest.values_list("id", flat=True))
        total += _retire(model.objects.filter(id__in=ids), status, event_type, "project_cap", now, report)
    return total


def requeue_unwritten_items(*, now: dt.datetime | None = None, limit: int = 500) -> int:
    """Active memory items whose fact never reached the guardian (no audit for them): hand them over again."""
    from guardian_app.models import WriteGuardianAudit

    now = now or timezone.now()
    audited = WriteGuardianAudit.objects.filter(source="learning").values("source_ref")
    items = (
        MemoryItem.objects.filter(status=MemoryItem.Status.ACTIVE, created_at__lt=now - REQUEUE_GRACE)
        .exclude(id__in=audited)
        .only("id", "content")[:limit]
    )
    count = 0
    for item in items:
        try:
            hand_to_guardian(item.id, item.content)
        except Exception as exc:  # The broker is still down; tomorrow's run tries again.
            record_failure("requeue", exc, source=LearningSource.SYSTEM)
            break
        count += 1
    return count


# --- Metrics -------------------------------------------------------------------------------------
METRIC_TYPES = {
    "accepted": Q(event_type__in=[E.MEM_ACCEPT, E.RULE_ACCEPT]),
    "rejected": Q(event_type__in=[E.MEM_REJECT, E.RULE_REJECT]),
    "conflict": Q(event_type=E.RULE_CONFLICT) | Q(event_type=E.RULE_SUPPRESS, reason="conflict"),
    "expired": Q(event_type__in=[E.MEM_EXPIRE, E.RULE_ARCHIVE]),
    "rate_limited": Q(event_type=E.RATE_LIMITED),
    "errors": Q(event_type=E.GUARDRAIL_ERROR),
}


def learning_metrics(
    *, since: dt.datetime, until: dt.datetime | None = None, project_id: str | None = None
) -> dict[str, Any]:
    """Counts of decisions in ``[since, until)`` (applied and shadow apart), hit rate, and a daily series.

    ``hit_rate`` is the share of the active memory items and rules that were hit (used by the agent) at
    least once in the window; ``None`` when there is nothing learned yet.
    """
    until = until or timezone.now()
    events = LearningEvent.objects.filter(created_at__gte=since, created_at__lt=until)
    items = MemoryItem.objects.filter(status=MemoryItem.Status.ACTIVE)
    rules = Rule.objects.filter(status=Rule.Status.ACTIVE)
    if project_id:
        events, items, rules = (qs.filter(project_id=project_id) for qs in (events, items, rules))
    aggregates = {
        f"{name}_{kind}": Count("id", filter=q & Q(shadow=shadow))
        for name, q in METRIC_TYPES.items()
        for kind, shadow in (("applied", False), ("shadow", True))
    }
    counts = events.aggregate(**aggregates)
    active_items, active_rules = items.count(), rules.count()
    hit_items = items.filter(last_hit_at__gte=since).count()
    hit_rules = rules.filter(last_hit_at__gte=since).count()
    learned = active_items + active_rules
    daily_rows = (
        events.filter(shadow=False)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(**{name: Count("id", filter=q) for name, q in METRIC_TYPES.items()})
        .order_by("day")
    )
    return {
        "since": since,
        "until": until,
        "project_id": project_id,
        **{name: counts[f"{name}_applied"] for name in METRIC_TYPES},
        "hit_rate": round((hit_items + hit_rules) / learned, 4) if learned else None,
        "shadow": {name: counts[f"{name}_shadow"] for name in METRIC_TYPES},
        "active": {"memory_items": active_items, "rules": active_rules},
        "hits": {"memory_items": hit_items, "rules": hit_rules},
        "daily": [{"day": row["day"], **{name: row[name] for name in METRIC_TYPES}} for row in daily_rows],
    }
