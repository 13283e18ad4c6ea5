"""What the learning guardrails read in a text: normal form and fingerprint, phrase lists, boilerplate and
the memory candidate's quality score.

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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from reflection_site.text import CJK_CHAR, STOP_CHARS_ZH, STOP_WORDS_EN, bigrams, is_cjk, normalize, words

BOILERPLATE_SHARE = 0.5

# --- Text ----------------------------------------------------------------------------------------
# Words, CJK, the normal form and the fingerprint are reflection_site.text's (``normalize``: the folded words,
# apostrophes kept inside a word, joined by one space; ``fingerprint``: its salted SHA-256).


def collapse(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=64)
def _phrase_regex(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for a phrase list over normalised text: Latin phrases as whole words, CJK ones anywhere."""
    latin, cjk = [], []
    for phrase in phrases:
        norm = normalize(phrase)
        if norm:
            (cjk if CJK_CHAR.search(norm) else latin).append(norm)
    parts = []
    if latin:
        alternation = "|".join(re.escape(p) for p in sorted(set(latin), key=len, reverse=True))
        parts.append(f"(?<![^ ])(?:{alternation})(?![^ ])")
    if cjk:
        parts.append("|".join(re.escape(p) for p in sorted(set(cjk), key=len, reverse=True)))
    return re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None


def find_phrases(norm: str, phrases: Sequence[str]) -> list[str]:
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
    norm = normalize(text)
    total = len(norm.replace(" ", ""))
    if total == 0:
        return 1.0
    regex = _phrase_regex(boilerplate_phrases())
    rest = regex.sub(" ", norm) if regex else norm
    return round(1 - len(rest.replace(" ", "")) / total, 3)


def is_boilerplate(text: str) -> bool:
    return boilerplate_share(text) >= BOILERPLATE_SHARE


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


def score_memory_candidate(text: str) -> QualityScore:
    """The memory guard's quality score in [0, 1]; the module docstring gives the formula."""
    raw = collapse(text)
    runs = words(raw, apostrophes=True)
    latin = [r for r in runs if not is_cjk(r)]
    content_latin = [w for w in latin if w not in STOP_WORDS_EN]
    cjk_runs = ["".join(c for c in r if c not in STOP_CHARS_ZH) for r in runs if is_cjk(r)]
    cjk_chars = sum(len(r) for r in cjk_runs)

    substance = min(1.0, (len(content_latin) + cjk_chars / 1.5) / 12)
    tokens = content_latin + [b for r in cjk_runs if r for b in bigrams(r)]
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
    if find_phrases(norm, FACT_WORDS):
        specificity += 0.15
    specificity = min(1.0, specificity)

    penalty = 0.15 * min(2, len(find_phrases(norm, VAGUE_PHRASES)))
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
