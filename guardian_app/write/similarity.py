"""How alike two facts are, offline: the near-duplicate check that keeps one fact once.

Two measures, both offline and deterministic:

* ``lexical`` — word-set overlap (Jaccard over stemmed content words and CJK bigrams, from
  ``reflection_site.text.content_words``), the guardian's check before issue 21;
* ``semantic`` — cosine of WordLlama sentence vectors (``guardian_app.recall.embeddings.load_local_embedder``: the
  16 MB weights ship inside the ``wordllama`` wheel, nothing is downloaded), which also sees "keep it brief"
  and "prefers short answers" as one fact.

``is_paraphrase`` combines them as measured on ``tests/fixtures/memory_eval/paraphrase_pairs.jsonl``
(thresholds chosen on its dev split, figures for its held-out split in QUALITY.md): a pair is the same fact
when the semantic similarity reaches ``GUARDIAN_PARAPHRASE_THRESHOLD`` and the fact names nothing
specific (a number, a name, a place, a CJK word) that the stored line lacks, or when the lexical
similarity reaches ``GUARDIAN_NEAR_DUPLICATE_THRESHOLD``. The guard on specifics is what keeps "Likes green
tea" and "Likes black coffee" apart, which word vectors alone place close together.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import numpy as np
from django.conf import settings

from reflection_site import glossary
from reflection_site.text import CJK_RUN, bigrams, content_words, fold, stop_words, words

# A word with a digit (a number, a date, an id: "21", "m0x0"), a capitalised word inside the sentence (a name, a
# place), a domain, a code span.
_SPECIFIC = re.compile(r"[\w-]*\d[\w-]*|(?<=[\w,;:] )[A-Z][\w'-]+|[\w.-]+\.[a-z]{2,}\b|`[^`]+`")
_WORD = re.compile(r"[\w.-]+|`[^`]+`")


# --- The attribute rule: how the user wants answers, as one attribute with a value ------------------------------------
# "Prefers short answers.", "Keep it brief.", "The agent should not write the user essays, short is fine.",
# "用户希望回答简洁一些。" all state answer length = short; "Prefers detailed answers." states it = long. A fact
# scoped to a topic or moment ("for math", "when …") is an attribute of its own.
_STYLE_VALUES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (key, value, re.compile(pattern, re.IGNORECASE))
    for key, value, pattern in (
        (
            "length",
            "short",
            r"\b(?:short|shorter|brief|briefly|concise|concisely|succinct|terse|to the point|few sentences|"
            r"one paragraph|tl;?dr|no (?:long|lengthy) \w+|(?:not?|never|don't|do not)\b[^.]{0,20}\b(?:essays|"
            r"long-winded|ramble|rambling|wordy|verbose|walls? of text))\b|简短|简洁|精简|简明|短一点|短一些|别太长|不要太长",
        ),
        (
            "length",
            "long",
            r"\b(?:detailed|in detail|thorough|thoroughly|in depth|in-depth|elaborate|longer|comprehensive)\b|"
            r"详细|具体一点|展开说",
        ),
        ("tone", "formal", r"\b(?:formal|formally|professional)\b|正式"),
        ("tone", "casual", r"\b(?:casual|casually|informal|informally|relaxed|chatty)\b|随意|轻松|口语化"),
        (
            "emoji",
            "none",
            r"\b(?:no|never|don't|do not|avoid|without|stop)\b[^.]{0,25}\bemojis?\b|不要?用?表情|别用表情|少用表情",
        ),
    )
)
# What makes it about answers: a word for them, or an instruction to the agent ("Keep it brief.").
_ABOUT_ANSWERS = re.compile(
    r"\b(?:answers?|repl(?:y|ies)|responses?|respond|messages?|explanations?|explain|writing|write|talk|speak|"
    r"say|tone|emojis?|it short|it brief|keep it|be more|be less)\b|^(?:the agent|agent|keep|be)\b|"
    r"回答|回复|答复|说话|解释|讲|语气|助手",
    re.IGNORECASE,
)
_SCOPE = re.compile(r"\b(?:for|when|if|during|about|on)\s+(?P<scope>[a-z][\w -]{2,30})|(?:时|的时候)", re.IGNORECASE)


def style_attribute(fact: str) -> tuple[str, str] | None:
    """``("style:length", "short")`` for a fact about how the user wants answers, else None (see above)."""
    if not _ABOUT_ANSWERS.search(fact):
        return None
    found = [(key, value) for key, value, pattern in _STYLE_VALUES if pattern.search(fact)]
    if len({key for key, _ in found}) != 1 or len(found) != 1:
        return None  # Nothing, or two attributes in one fact: not one value to compare.
    key, value = found[0]
    scope = _SCOPE.search(fact)
    if scope and scope.group("scope") and not re.match(r"(?:me|the user|us)\b", scope.group("scope"), re.I):
        key = f"{key}@{' '.join(scope.group('scope').lower().split()[:2])}"
    return f"style:{key}", value


# --- The preference rule: what the user likes, keyed by the thing liked ------------------------------------------------
# "用户喜欢深色模式。", "用户偏好深色模式。", "用户喜欢默认深色界面。" and "Prefers dark mode." all state theme = dark;
# "用户喜欢猫" and "用户喜欢狗" are two keys (liking one thing does not end liking another). The verb (喜欢, 偏好,
# 偏爱, 习惯用, 倾向于…) and the words around the thing (默认, 使用, 模式, 界面, 主题…) are not part of it.
_PREFER_ZH = re.compile(
    r"^(?:用户|我|他|她|[a-z][a-z' -]{0,30}?)(?:比较|更|最|一直|还是|还|特别|很|非常|也|都|仍然|依然|真的)*(?P<neg>不再|已经不|不)?"
    r"(?:比较|更|很|最)?"
    r"(?:喜欢|偏好|偏爱|喜爱|爱用|习惯用|习惯|倾向于|倾向)(?!的)(?:用|使用|开|开启|打开)?(?P<v>[^，。；,.;！!]{1,16})"
)
_PREFER_EN = re.compile(
    r"^(?:the user |i )?(?P<neg>(?:no longer|doesn't|does not|don't|do not)\s+)?(?:prefers?|likes?|loves?|wants?|uses?)"
    r"\s+(?:the\s+|a\s+)?(?P<v>(?:dark|light)(?:\s+(?:mode|theme|ui|interface))?)\b",
    re.IGNORECASE,
)
_THING_NOISE = re.compile(
    r"^(?:默认的?|默认用|都用|总是|一律)|(?:模式|界面|主题|风格|样式|配色|外观|显示)$|(?:一点|一些)$"
)
_THEMES = (
    ("dark", re.compile(r"^(?:深色|暗色|暗黑|黑色|夜间|dark)")),
    ("light", re.compile(r"^(?:浅色|亮色|白色|日间|light)")),
)


def preference_attribute(fact: str) -> tuple[str, str, bool] | None:
    """``("prefers:theme", "dark", False)`` for "用户喜欢默认深色界面。", ``("prefers:猫", "猫", False)`` for
    "用户喜欢猫。", the third item True for a negation ("用户不再喜欢猫了"); None for anything else."""
    text = fold(fact).strip()
    match = _PREFER_ZH.match(text) or _PREFER_EN.match(text)
    if match is None:
        return None
    thing = match.group("v").strip()
    for _ in range(2):
        thing = _THING_NOISE.sub("", thing).strip()
    thing = re.sub(r"了$", "", thing)
    if not thing:
        return None
    for value, pattern in _THEMES:
        if pattern.match(thing):
            return "prefers:theme", value, bool(match.group("neg"))
    return f"prefers:{thing}", thing, bool(match.group("neg"))


# What is liked most, in Chinese ("古典音乐里用户最爱的还是莫扎特", "用户最喜欢贝多芬") and in English ("Prefers Mozart.",
# "The user's favorite composer is Mozart.", "Loves Beethoven most").
_LIKED_MOST_ZH = re.compile(
    r"(?:最喜欢|最爱|最偏爱|更喜欢|更爱)(?:的)?(?:[\u4e00-\u9fff]{0,6}?)?(?:还是|就是|是|仍然是)?(?P<v>[\u4e00-\u9fff]{2,6}?)(?:[，。,.；;！!]|$)"
)
_LIKED_EN = re.compile(r"\b(?:prefers?|likes?|loves?|favou?rite)\b", re.I)


def liked_in_both_languages(fact: str, line: str) -> bool:
    """Whether ``fact`` and ``line`` say, one in Chinese and one in English, that the same thing is liked most:
    "古典音乐里用户最爱的还是莫扎特" after "Prefers Mozart." (the thing by ``reflection_site.glossary``)."""
    chinese, english = (fact, line) if CJK_RUN.search(fact) else (line, fact)
    if CJK_RUN.search(english):
        return False
    if not (liked := _LIKED_MOST_ZH.search(chinese)):
        return _liked_alike(chinese, english)
    verb = _LIKED_EN.search(english)
    value = liked.group("v")  # "喝咖啡": the thing is its end, "咖啡".
    ends = [value[i:] for i in range(len(value) - 1)]
    if verb is None:
        return False
    after = english[verb.end() :]
    # The thing named in Latin letters in the Chinese too: "用户最爱的还是奶油宽面，就是Alfredo那种" and "The user's
    # favorite food is Fettuccine Alfredo.".
    named = re.findall(r"[A-Za-z][A-Za-z'-]{2,}", chinese)
    return any(glossary.english_at(end, after) >= 0 for end in ends) or any(
        re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", after, re.I) for name in named
    )


# A liking said in Chinese any way: "爱听", "闻不够", "谁也比不了", "迷上了".
_LIKED_ZH = re.compile(r"喜欢|爱[听看吃喝读]?|迷上|着迷|[闻听看吃]不够|[听看吃]不腻|比不了|比不上")
_THING_ENDS = re.compile(r"[,.;:!?]|\s(?:but|when|because|and the user|though)\b", re.I)


def _liked_alike(chinese: str, english: str) -> bool:
    """Whether a Chinese liking and an English one name the same thing: every content word of the English thing
    ("the smell of pine trees", "classical music") has a Chinese word in the Chinese text that means it (松树, 味道;
    古典, 音乐). "Likes rock music" and "爱听乡村音乐" are not alike: no word there means "rock"."""
    verb = _LIKED_EN.search(english)
    if verb is None or not _LIKED_ZH.search(chinese):
        return False
    thing = _THING_ENDS.split(english[verb.end() :], maxsplit=1)[0]
    wanted = [w for w in words(thing) if w.lower() not in stop_words() and w.lower() not in {"user", "the", "of"}]
    return 0 < len(wanted) <= 4 and all(glossary.find(w, chinese) is not None for w in wanted)


def lexical(a: str, b: str) -> float:
    """Jaccard overlap of the two facts' content words (0..1)."""
    ta, tb = set(content_words(a, roles=True)), set(content_words(b, roles=True))
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


@lru_cache(maxsize=20_000)
def _vector(text: str) -> np.ndarray:
    from guardian_app.recall.embeddings import load_local_embedder

    return load_local_embedder().embed([text])[0]


def vectors(texts: Iterable[str]) -> np.ndarray:
    """Unit vectors for ``texts`` (cached per text: a file's lines are compared on every write)."""
    return np.stack([_vector(text) for text in texts])


def semantic(a: str, b: str) -> float:
    """Cosine of the two facts' WordLlama vectors (-1..1)."""
    return float(_vector(a) @ _vector(b))


def specifics(text: str) -> set[str]:
    """What a fact names in particular: numbers, capitalised names, domains, code, CJK words (as bigrams)."""
    found = {fold(m.group()).strip("`") for m in _SPECIFIC.finditer(text)}
    for run in CJK_RUN.findall(text):
        found.update(bigrams(run))
    return found


def new_specifics(fact: str, stored: str) -> set[str]:
    """Specifics of ``fact`` the stored line does not have (CJK bigrams only count when most are new)."""
    stored_words = specifics(stored) | {fold(w).strip("`") for w in _WORD.findall(stored)}
    missing = {s for s in specifics(fact) if s not in stored_words and not CJK_RUN.fullmatch(s)}
    missing |= {s for s in specifics(fact) if CJK_RUN.fullmatch(s) and s not in fold(stored)}
    cjk = [s for s in specifics(fact) if CJK_RUN.fullmatch(s)]
    cjk_missing = [s for s in cjk if s in missing]
    if cjk and len(cjk_missing) <= len(cjk) // 2:
        missing -= set(cjk_missing)  # A Chinese paraphrase reorders characters; only a new noun counts.
    return missing


def semantic_available() -> bool:
    """Whether the WordLlama model loads here (once per process); without it only the lexical check runs."""
    from guardian_app.recall.embeddings import local_embedder_available

    return local_embedder_available()


def find_paraphrase(fact: str, lines: Iterable[str]) -> str | None:
    """The first stored line that ``fact`` paraphrases (semantic check only; the lexical one runs before)."""
    limit = settings.GUARDIAN_PARAPHRASE_THRESHOLD
    if limit > 1 or not semantic_available():
        return None
    for line in lines:
        if semantic(fact, line) >= limit and not new_specifics(fact, line):
            return line
    return None


def is_paraphrase(fact: str, stored: str, *, semantic_threshold: float | None = None) -> bool:
    """Whether ``fact`` says what ``stored`` already says (see the module docstring)."""
    lexical_threshold = settings.GUARDIAN_NEAR_DUPLICATE_THRESHOLD
    limit = settings.GUARDIAN_PARAPHRASE_THRESHOLD if semantic_threshold is None else semantic_threshold
    if lexical(fact, stored) >= lexical_threshold:
        return True
    if limit > 1:
        return False  # Semantic matching switched off.
    return semantic(fact, stored) >= limit and not new_specifics(fact, stored)
