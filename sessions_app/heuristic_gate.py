"""The offline memory gate: a deterministic classifier used when no LLM endpoint is configured.

When ``LLM_BASE_URL`` is unset the gate records its decisions as model ``heuristic-gate-v1`` and
decides with the rules below instead of an LLM. It reads English and Chinese. It is a fallback:
it knows phrasings, not meaning, and when in doubt it answers ``NO_WRITE``.

How a turn is read
------------------
1. The user message is split into sentences (code spans and URLs are never split). Greetings,
   thanks and acknowledgements at the front of a sentence are dropped ("ok, …", "好的，…").
2. A sentence that is a question ("Do you like jazz?", "我喜欢什么？"), a hypothetical ("If I
   lived in Paris…", "假如…") or small talk ("thanks!", "哈哈") is set aside: trigger words inside
   it never cause a write. A polite request phrased as a question ("Can you remember that…?",
   "你能记住…吗？") is a request, not a question.
3. Every remaining sentence goes through the rules in this order, and the first rule that fires
   decides that sentence:

   ======  ===================  ==============================================================
   order   decision             what fires it
   ======  ===================  ==============================================================
   1       UPDATE_MEMORY        an explicit request to remember ("remember that …", "don't
                                forget …", "keep in mind …", "记住…", "别忘了…", "…，记一下")
   2       UPDATE_IDENTITY      the agent's own identity ("your name is …", "call yourself …",
                                "I'll call you …", "your emoji is …", "你叫…", "你的名字是…")
   3       UPDATE_SOUL          the agent's character and manner ("you should always/never …",
                                "be more concise", "stop apologizing", "以后你要…", "说话简洁一点")
   4       UPDATE_TOOLS         tools, commands and environment (code spans, URLs, hosts, paths,
                                known tools, "the staging API lives at …", "部署用 …")
   5       UPDATE_USER          durable facts and preferences about the user ("I prefer …",
                                "my name is …", "I live in …", "我喜欢…", "我叫…")
   ======  ===================  ==============================================================

   A manner instruction that mentions a tool or the environment ("always use pnpm", "never push
   to main") is about tools, so the soul rules step aside for it. "Remember to <do something>" is an
   instruction rather than a fact: it is UPDATE_SOUL when the soul rules recognise it ("remember to
   always answer in English"), else a memory of the task ("The agent should remember to …").
4. If several sentences fire, the decision highest in that table wins (one turn, one fact).
   Nothing fires → ``NO_WRITE`` with the reason (question, hypothetical, small talk, a request
   for now rather than a lasting preference, a passing state such as "today", or no fact).

``context`` is used sparingly: a bare "remember that" / "记住这个" takes its fact from the
previous sentence or the user's previous message, and "yes" / "好的" answering the agent's own
offer ("Should I remember that you prefer tea?", "要我记住…吗？") records what the agent offered.
``agent_reply`` is accepted for parity with the LLM gate and not used: the reply does not carry the
user's intent.

The candidate fact is one standalone third-person sentence: "I prefer summaries on Fridays" →
"Prefers summaries on Fridays.", "my name is Ada" → "The user's name is Ada.", "我喜欢喝咖啡" →
"用户喜欢喝咖啡。", "your name is Orion" → "The agent's name is Orion."; tool facts may stay
imperative ("Use `make deploy` to ship."). Prompt-injection-like text is classified like any
other text; the write guardian holds instruction-like facts. A decision is always one of
``DECISIONS``; no file name from the text ever becomes a decision.

Behaviour corrections
---------------------
Corrections marked ``apply_to_future`` reach the gate as :class:`CorrectionHint`. They are tried in
the order given (callers pass the newest first) against the candidate fact and the user message;
the first one that matches decides:

* ``corrected_status == "refused"`` → ``NO_WRITE``, and the reason names the correction;
* ``corrected_status == "written"`` with a ``corrected_target_file`` among the five memory files →
  that file's decision. A plain statement that no rule recognised is written too (the operator has
  said such statements matter); questions, greetings and hypotheticals never are.
* any other status or target file (``None``, ``settings.py``) → the hint is skipped.

Pattern semantics (:func:`matches_correction_pattern`, reused by the write guardian): a pattern is
plain text that matches when every word of it occurs in the text as a whole word, case-insensitive,
punctuation ignored, in any order; every run of CJK characters in it must occur in the text as a
substring. A pattern wrapped in slashes, ``/…/``, is a case-insensitive regular expression searched
anywhere in the text by RE2 (google-re2), which runs in time linear in the text whatever the pattern, so
``/(a+)+$/`` cannot stall the gate; RE2 has no look-arounds or back-references. A pattern RE2 refuses is
refused when saved (:func:`correction_pattern_problem`); one stored before that never matches and is logged.
An empty pattern never matches.

Limits, stated frankly: rules are phrase lists, so an unusual phrasing falls through to
``NO_WRITE``; a Chinese sentence containing a question word ("我喜欢什么都吃") reads as a
question; one turn yields at most one fact; sentences longer than 400 characters are not read.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import re2

from reflection_site import memory_files
from reflection_site.poisoning import hold_reason

logger = logging.getLogger(__name__)

MODEL_NAME = "heuristic-gate-v1"

DECISIONS = ("NO_WRITE", "UPDATE_MEMORY", "UPDATE_USER", "UPDATE_SOUL", "UPDATE_IDENTITY", "UPDATE_TOOLS")

FILE_FOR_DECISION = dict(memory_files.SEED_FILE_FOR_DECISION)

# A correction names a file (of any workspace profile); the decision is looked up, so an unknown name can
# never become one.
DECISION_FOR_FILE = dict(memory_files.DECISION_FOR_FILE)

# Rule order, highest first: an explicit request beats everything, a generic "I …" statement last.
PRECEDENCE = ("UPDATE_MEMORY", "UPDATE_IDENTITY", "UPDATE_SOUL", "UPDATE_TOOLS", "UPDATE_USER")

NO_WRITE = "NO_WRITE"

# A fact is one sentence; anything longer is a paste, not a statement to remember.
_MAX_SENTENCE_CHARS = 400
_MAX_SENTENCES = 40


@dataclass(frozen=True)
class CorrectionHint:
    """An operator's correction of an earlier write, marked ``apply_to_future``."""

    pattern: str
    corrected_status: str  # "written" | "refused"
    corrected_target_file: str | None = None
    correction_id: str = ""


@dataclass(frozen=True)
class GateVerdict:
    """What the gate decided about one turn."""

    decision: str
    reason: str
    candidate_fact: str | None  # None only for NO_WRITE
    confidence: float  # 0..1, how sure the rule was


# --------------------------------------------------------------------------------------------
# Correction patterns
# --------------------------------------------------------------------------------------------

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RE = re.compile(f"[{_CJK}]")
# A CJK run, or a run of other letters and digits: "用vim部署" is "用", "vim", "部署".
_TOKEN_RE = re.compile(rf"[{_CJK}]+|(?:(?![{_CJK}])[^\W_])+")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _regex_body(pattern: str) -> str | None:
    """The regular expression of a ``/…/`` pattern; None for a plain-text pattern."""
    if len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/"):
        return pattern[1:-1]
    return None


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.case_sensitive = False
_RE2_OPTIONS.log_errors = False  # A refused pattern is reported by us, once, not by RE2 on stderr each time.


@lru_cache(maxsize=512)
def _compiled(body: str) -> tuple[re2._Regexp | None, str | None]:
    """The RE2 program for a regex, or None and why RE2 refuses it (each refused pattern is logged once)."""
    try:
        return re2.compile(body, _RE2_OPTIONS), None
    except re2.error as exc:
        problem = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        logger.warning("correction pattern /%s/ is disabled: RE2 refuses it (%s)", body[:200], problem)
        return None, problem


def correction_pattern_problem(pattern: str | None) -> str | None:
    """Why a correction pattern cannot be used (a message for the operator), or None when it can."""
    pattern = (pattern or "").strip()
    body = _regex_body(pattern)
    if body is None:
        return None if _TOKEN_RE.findall(_fold(pattern)) else "it has no word or CJK character to match"
    _, problem = _compiled(body)
    if problem is not None:
        return (
            f"/{body}/ is not a regular expression RE2 accepts ({problem}); patterns run on RE2, which has no "
            "look-arounds or back-references: use plain words, or a simpler /regex/"
        )
    return None


def matches_correction_pattern(pattern: str, text: str) -> bool:
    """Whether a behaviour correction's ``correction_pattern`` matches ``text``.

    Plain text matches when every word of the pattern occurs in the text as a whole word (case and
    punctuation ignored, any order) and every CJK run of the pattern occurs in the text as a
    substring. ``/regex/`` is searched case-insensitively by RE2, in time linear in the text; a regex RE2
    refuses (stored before patterns were checked on save) never matches and is logged once.
    """
    pattern = (pattern or "").strip()
    body = _regex_body(pattern)
    if body is not None:
        program, _ = _compiled(body)
        return program is not None and program.search(text or "") is not None
    wanted = _TOKEN_RE.findall(_fold(pattern))
    if not wanted:
        return False
    folded = _fold(text or "")
    words = set(_TOKEN_RE.findall(folded))
    for token in wanted:
        if _CJK_RE.match(token):
            if token not in folded:
                return False
        elif token not in words:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------------------------

# Code spans and URLs are opaque: never split, never rewritten.
_OPAQUE_RE = re.compile(
    r"```.*?```|`[^`\n]+`|https?://[^\s`\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]*[^\s`.,;:!?)\]'\"\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]",
    re.S,
)
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "mr.", "mrs.", "ms.", "dr.", "st.", "approx.", "no.")


def _protect(text: str) -> tuple[str, list[str]]:
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"\x00{len(spans) - 1}\x00"

    return _OPAQUE_RE.sub(keep, text), spans


def _restore(text: str, spans: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], text)


def _is_chinese(text: str) -> bool:
    """Whether the Chinese rules read this text: more CJK characters than Latin words outside code and URLs
    ("我用 Mac" is Chinese, "My name is 李雷" is English)."""
    protected, _ = _protect(text)
    return len(_CJK_RE.findall(protected)) > len(re.findall(r"[A-Za-z]+(?:[.'/_-][A-Za-z0-9]+)*", protected))


def _normalise(text: str) -> str:
    text = (text or "").replace("\u2019", "'").replace("\u2018", "'").replace("\u3000", " ")
    text = text.replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"[ \t\r\f\v]+", " ", text).strip()


def _split_sentences(text: str) -> list[str]:
    protected, spans = _protect(text)
    parts = re.split(r"(?<=[。！？；])|(?<=[.!?;])\s+|\n+", protected)
    sentences: list[str] = []
    for part in parts:
        part = (part or "").strip()
        if not part:
            continue
        if sentences and sentences[-1].lower().endswith(_ABBREVIATIONS):
            sentences[-1] = f"{sentences[-1]} {part}"
        else:
            sentences.append(part)
    return [_restore(sentence, spans) for sentence in sentences]


def _finish_en(text: str) -> str:
    text = re.sub(r"[\s,;:.!~]+$", "", text.strip())
    text = re.sub(r",?\s+(?:please|pls|thanks|thank you|thx|btw)$", "", text, flags=re.I)
    if text and text[0].islower() and text[0].isascii():
        text = text[0].upper() + text[1:]
    return f"{text}." if text else ""


_ZH_TAIL_RE = re.compile(r"(?:[\s。.，,；;：:！!~～]|吧|哦|喔|啊|呀|啦|哈|嘛)+$")


def _finish_zh(text: str) -> str:
    text = _ZH_TAIL_RE.sub("", text.strip())
    return f"{text}。" if text else ""


# --------------------------------------------------------------------------------------------
# Third person (English)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Person:
    subject: str
    object: str
    possessive: str
    reflexive: str
    # Once the sentence has named its subject, "my coffee" is "their coffee", not "the user's coffee".
    pronoun_object: str
    pronoun_possessive: str


_USER = _Person("the user", "the user", "the user's", "themselves", "them", "their")
_AGENT = _Person("the agent", "the agent", "the agent's", "itself", "it", "its")
# Inside a sentence whose subject is already the agent: "keep your answers short" → "its answers".
_AGENT_IT = _Person("it", "it", "its", "itself", "it", "its")
_TEAM = _Person("the team", "the team", "the team's", "themselves", "them", "their")

_CONTRACTIONS = (
    (r"\bI'm\b", "I am"),
    (r"\bI've\b", "I have"),
    (r"\bI'll\b", "I will"),
    (r"\bI'd\b", "I would"),
    (r"\byou're\b", "you are"),
    (r"\byou've\b", "you have"),
    (r"\byou'll\b", "you will"),
    (r"\byou'd\b", "you would"),
    (r"\bwe're\b", "we are"),
    (r"\bwe've\b", "we have"),
    (r"\bwe'll\b", "we will"),
    (r"\blet's\b", "let us"),
    (r"\bdont\b", "don't"),
)


def _expand(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text, flags=re.I)
    return re.sub(r"\bi\b", "I", text)


_ADVERBS = frozenset(
    "really also actually generally usually often always never sometimes mostly totally absolutely "
    "definitely genuinely truly strongly much still just only rarely typically normally especially "
    "particularly honestly seriously even mainly currently kinda already personally simply deeply "
    "rather slightly certainly mostly frequently occasionally now nowadays recently finally no longer".split()
)
_MODALS = frozenset("can could will would shall should may might must cannot".split())
_PAST = frozenset(
    "was had did went grew got made said left came became began bought ran met spent took gave saw knew "
    "thought felt kept lost found told wrote built sold taught brought chose drove ate drank fell flew "
    "forgot heard held led meant paid put quit read rode sat set shut slept spoke stood swam understood "
    "woke won wore".split()
)
_IRREGULAR = {
    "am": "is",
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "go": "goes",
    "don't": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
    "weren't": "wasn't",
}
_SUBJECT_LEADERS = frozenset(
    "that when whenever if because and but so since while unless until as whether where before after once "
    "then or".split()
)


def _third_person_verb(word: str) -> str:
    lower = word.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower in _MODALS or lower in _PAST or lower.endswith(("ed", "n't")) or not lower.isalpha():
        return word
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return f"{word}es"
    if re.search(r"[^aeiou]y$", lower):
        return f"{word[:-1]}ies"
    return f"{word}s"


_FIRST_PERSON_KIND = {"me": "object", "my": "possessive", "mine": "possessive", "myself": "reflexive"}


def _pronoun(person: _Person, kind: str, named: set[int]) -> str:
    """The noun ("the user's") the first time, the pronoun ("their") once the subject is named."""
    if kind == "reflexive":
        return person.reflexive
    if id(person) in named:
        return person.pronoun_object if kind == "object" else person.pronoun_possessive
    return person.object if kind == "object" else person.possessive


def _rewrite(
    text: str,
    *,
    first: _Person | None = _USER,
    second: _Person | None = _AGENT,
    plural: _Person | None = _TEAM,
) -> str:
    """Put first and second person into the third: "I like your style" → "the user likes the agent's style"."""
    protected, spans = _protect(_expand(text))
    out: list[str] = []
    named: set[int] = set()  # ids of the persons already named as a subject in this text
    conjugate_next = False
    previous: str | None = None
    previous_ended_clause = True
    for token in re.split(r"(\s+)", protected):
        if not token or token.isspace():
            out.append(token)
            continue
        lead, core, trail = re.match(r"^([^\w']*)([\w'-]*)(.*)$", token).groups()
        lower = core.lower()
        replacement: str | None = None
        if conjugate_next and core:
            if lower not in _ADVERBS:
                replacement = _third_person_verb(core)
                conjugate_next = False
        elif first and core == "I":
            replacement, conjugate_next = first.subject, True
            named.add(id(first))
        elif first and lower in ("me", "my", "mine", "myself"):
            replacement = _pronoun(first, _FIRST_PERSON_KIND[lower], named)
        elif second and lower == "you":
            is_subject = previous_ended_clause or previous in _SUBJECT_LEADERS
            replacement = second.subject if is_subject else _pronoun(second, "object", named)
            conjugate_next = is_subject
            if is_subject:
                named.add(id(second))
        elif second and lower in ("your", "yours", "yourself"):
            replacement = second.reflexive if lower == "yourself" else _pronoun(second, "possessive", named)
        elif plural and lower == "we":
            replacement, conjugate_next = plural.subject, True
            named.add(id(plural))
        elif plural and core in ("us", "our", "ours", "ourselves", "Our"):
            kind = {"us": "object", "ourselves": "reflexive"}.get(lower, "possessive")
            replacement = _pronoun(plural, kind, named)
        out.append(f"{lead}{replacement if replacement is not None else core}{trail}")
        if core:
            previous = lower
        previous_ended_clause = bool(re.search(r"[,;:(]$", trail)) or (not core and bool(lead))
    return _restore("".join(out), spans)


# --------------------------------------------------------------------------------------------
# Chinese person rewriting
# --------------------------------------------------------------------------------------------

# "我女儿" reads as "my daughter": these nouns take an implied 的.
_ZH_KIN = (
    "女儿|儿子|老婆|老公|妻子|丈夫|太太|先生|孩子|妈妈|爸爸|父母|母亲|父亲|哥哥|姐姐|弟弟|妹妹|家人|男朋友|女朋友|"
    "对象|老家|家乡|公司|老板|领导|同事|朋友|猫|狗|家"
)


def _rewrite_zh(text: str, *, first: str = "用户", second: str = "助手") -> str:
    protected, spans = _protect(text)
    # Not after a verb or preposition: in "别叫我老板" the 我 is an object, "boss" is what to call them.
    protected = re.sub(rf"(?<![叫称喊让给帮对和跟把被向])我(?=(?:{_ZH_KIN}))", "我的", protected)
    protected = protected.replace("我们", "\x01").replace("你们", "\x02").replace("您", "你")
    protected = protected.replace("我", first).replace("你", second)
    protected = protected.replace("\x01", "我们").replace("\x02", "你们")
    return _restore(protected, spans)


# --------------------------------------------------------------------------------------------
# Reading a sentence: small talk, questions, hypotheticals
# --------------------------------------------------------------------------------------------

_GREETING_WORDS = r"hi|hello|hey|hiya|howdy|yo|good (?:morning|afternoon|evening|day)|nice to meet you"
_EN_LEAD_LOOSE = re.compile(
    rf"^(?:{_GREETING_WORDS}|btw|by the way|fyi|just so you know|just fyi|for the record|for your information|"
    r"and also|also|oh and|and|oh|actually|anyway|anyways|one more thing|quick note|heads up|please|pls|plz|"
    r"kindly|um+|uh+|so)\b[\s,:;!.\-\u2013\u2014]*",
    re.I,
)
_EN_LEAD_STRICT = re.compile(
    r"^(?:ok(?:ay)?|alright|all right|sure|great|cool|well|yes|yeah|yep|yup|no|nope|nah|thanks|thank you|thx|"
    r"hmm+|ah+|got it|perfect|nice|right|fine|wait|listen|look|note|understood)\s*[,:;!.\-\u2013\u2014]+\s*",
    re.I,
)
_ZH_GREETING = r"你好|您好|嗨|哈喽|早上好|早安|晚上好|下午好"
_ZH_LEAD_LOOSE = re.compile(
    r"^(?:对了|顺便说一下|顺便说一句|顺便提一下|顺便一提|顺便|另外|还有|其实|说一下|告诉你|跟你说|我跟你说|我告诉你|"
    r"提醒一下|补充一下|然后|那么|请(?!问)|麻烦你|麻烦|话说|你知道吗)[\s，,：:！!。]*"
)
_ZH_LEAD_STRICT = re.compile(
    rf"^(?:{_ZH_GREETING}|好的|好吧|好|嗯+|哦+|噢|喔|对|是的|行|可以|谢谢你|谢谢|多谢|哈+|ok|okay|收到|明白了|明白)"
    r"[\s，,：:！!。~～]+",
    re.I,
)
_EN_TAIL = re.compile(r"[\s,]+(?:please|pls|thanks|thank you|thx|btw|ok|okay)\s*[.!?]*$", re.I)
_ZH_TAIL = re.compile(
    r"(?:[，,]?(?:谢谢|谢啦|多谢|好吗|好不好|行吗|可以吗|行不行))+[。！!？?~～]*$|(?:哦|啊|呀|啦|哈|嘛|喔)+[。！!~～]*$"
)

_EN_SMALLTALK_ITEM = (
    r"(?>(?:hi|hello|hey|yo|hiya|howdy|good (?:morning|afternoon|evening|night|day)|morning|evening|thanks|"
    r"thank you|many thanks|thx|ty|ok|okay|k|kk|cool|nice|great|awesome|perfect|excellent|wonderful|amazing|"
    r"got it|gotcha|sounds good|sounds great|makes sense|lol|lmao|(?:ha)+h?|(?:he)+h?|bye|goodbye|bye bye|see you|"
    r"see ya|later|cheers|sure|yes|no|yep|nope|yeah|yup|nah|you're welcome|you are welcome|no problem|np|"
    r"no worries|good job|well done|nice work|great job|love it|i love it|like it|i like it|"
    r"that's (?:great|nice|cool|it|fine|perfect|awesome|helpful|right|correct|true)|"
    r"that was (?:\w+ )?(?:helpful|great|useful|fun|nice|good|awesome)|never ?mind|hmm+|i see|ah+|oh+|wow|"
    r"oops|sorry|my bad|fine|alright|all right|good|very good|indeed|exactly|right|true|agreed|same|me too|"
    r"interesting|noted|understood|of course)\b)"
    r"(?:\s+(?>(?:you|there|again|everyone|all|friend|buddy|mate|so much|a lot|very much|too|then|for now|"
    r"for the help|for your help|for that|for this)\b))*+"
)
# One item at a time, each matched atomically and separated by spaces or punctuation, so that a long
# "hahaha…" has exactly one reading (no exponential backtracking).
_EN_SMALLTALK = re.compile(rf"^{_EN_SMALLTALK_ITEM}(?:[\s,!.~:)(]++{_EN_SMALLTALK_ITEM})*+[\s,!.~:)(]*+$", re.I)
_EN_GREETING_NAME = re.compile(r"^(?:hi|hello|hey|good \w+|thanks|thank you)[\s,]+[A-Z][\w-]*[\s,!.]*$")
_ZH_SMALLTALK = re.compile(
    r"^(?:(?>你好|您好|嗨|哈喽|早上好|早安|早|晚上好|晚安|下午好|中午好|谢谢你|谢谢|谢啦|多谢|感谢|太感谢了|好的呢|好的|"
    r"好吧|好|嗯++|哦++|噢|喔|行|可以|没问题|哈++|(?:呵)++|再见|拜拜|回头见|辛苦了|厉害|不错|太棒了|真棒|棒|收到|明白了|"
    r"明白|了解|知道了|懂了|对的|对|是的|没事|不客气|不用谢|别客气|别担心|不用了|算了|ok|okay)"
    r"[\s，,！!。~～啦呀啊哦了的]*+)++$",
    re.I,
)

_EN_HYPOTHETICAL = re.compile(
    r"^(?:what if|suppose|supposing|imagine|hypothetically|let us say|pretend|assuming|in theory|"
    r"if only|i wish)\b"
    r"|^if (?:i|we|you) (?:were|was|had|could|would|did|lived|liked|loved|hated|preferred|worked|moved|won|"
    r"became|got)\b"
    r"|\b(?:i would|we would) \w+.*\bif\b",
    re.I,
)
_ZH_HYPOTHETICAL = re.compile(
    r"^(?:假如|假设|假使|设想|想象一下|想象|要是|万一|如果说|倘若|比如说|打个比方|如果我|我要是)|^(?:如果|要是)[^，,]*的话"
)

_EN_QUESTION_START = re.compile(
    r"^(?:(?:what|who|whom|whose|where|when|why|how|which)(?:'s|'re|\s+(?:is|are|was|were|do|does|did|can|could|"
    r"would|will|should|shall|have|has|had|am|about|many|much|long|often|come|else|kind|sort)\b)"
    r"|(?:do|does|did|is|are|am|was|were|can|could|would|will|shall|should|have|has|had|may|might|must|isn't|"
    r"aren't|don't|doesn't|didn't|won't|wouldn't|can't|couldn't|shouldn't)\s+(?:i|you|we|they|he|she|it|there|"
    r"this|that|these|those|my|your|our|the|a|an|anyone|someone|anybody)\b"
    r"|i (?:wonder|was wondering|am wondering)\b|do you know\b|any idea\b|tell me\b|guess what\b)",
    re.I,
)
_ZH_QUESTION_WORDS = re.compile(
    r"什么|怎么|为什么|为啥|哪里|哪儿|哪个|哪些|谁|多少|几点|几个|是不是|能不能|可不可以|会不会|有没有|要不要|对不对|"
    r"好不好|行不行|是否|啥"
)

_REMEMBER_VERBS_EN = (
    r"remember|not forget|never forget|note|keep in mind|bear in mind|make a note|write down|jot down|"
    r"memori[sz]e|call yourself|refer to yourself|go by|always|never|stop|start|be\b|use (?:fewer|less|more|no)|"
    r"answer|reply|respond|speak|talk|keep (?:your|the)|try to|avoid"
)
_EN_POLITE = re.compile(
    rf"^(?:can|could|would) you (?:please |kindly |also )?(?P<rest>(?:{_REMEMBER_VERBS_EN}).+?)(?:,? please)?\s*\?*$",
    re.I,
)
_ZH_POLITE = re.compile(
    r"^(?:你)?(?:能|能不能|可以|可不可以|能否|可否)(?:请你|麻烦你)?(?:帮我)?"
    r"(?P<rest>(?:记住|记下|记一下|记得|以后|今后|从现在开始|别|不要|用中文|用英文|用英语|说话|回答|少用|多用|自称).+?)"
    r"(?:吗|么|嘛|呢)?[？?。]*$"
)


@dataclass(frozen=True)
class _Reading:
    kind: str  # "statement" | "question" | "hypothetical" | "smalltalk" | "long"
    text: str
    greeted: bool = False


def _strip_leading(text: str) -> tuple[str, bool]:
    greeted = False
    while True:
        before = text
        for pattern in (_EN_LEAD_STRICT, _EN_LEAD_LOOSE, _ZH_LEAD_STRICT, _ZH_LEAD_LOOSE):
            match = pattern.match(text)
            if match and match.end() > 0:
                if re.match(rf"(?:{_GREETING_WORDS}|{_ZH_GREETING})", match.group(0), re.I):
                    greeted = True
                text = text[match.end() :].lstrip()
        if text == before:
            return text, greeted


def _is_question(text: str) -> bool:
    if re.search(r"[?？]\s*$", text):
        return True
    if _is_chinese(text):
        if text.startswith("请问") or re.search(r"(?:吗|呢|么|嘛)[\s。.！!~～]*$", text):
            return True
        return not re.search(r"[。！!.]$", text) and bool(_ZH_QUESTION_WORDS.search(text))
    return bool(_EN_QUESTION_START.match(text))


def _is_smalltalk(text: str) -> bool:
    return not text or bool(_EN_SMALLTALK.match(text) or _ZH_SMALLTALK.match(text) or _EN_GREETING_NAME.match(text))


def _read_sentence(sentence: str) -> _Reading:
    if len(sentence) > _MAX_SENTENCE_CHARS:
        return _Reading("long", sentence)
    if sentence.startswith("请问"):
        return _Reading("question", sentence)
    if _is_smalltalk(sentence):
        return _Reading("smalltalk", sentence)
    text, greeted = _strip_leading(sentence)
    text = _ZH_TAIL.sub("", _EN_TAIL.sub("", text)).strip()
    if _is_smalltalk(text):
        return _Reading("smalltalk", text, greeted)
    polite = _EN_POLITE.match(text) or _ZH_POLITE.match(text)
    if polite:
        return _Reading("statement", polite.group("rest").strip(), greeted)
    if _EN_HYPOTHETICAL.search(text) or _ZH_HYPOTHETICAL.search(text):
        return _Reading("hypothetical", text, greeted)
    if _is_question(text):
        return _Reading("question", text, greeted)
    return _Reading("statement", text, greeted)


# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Finding:
    decision: str
    fact: str | None
    reason: str
    confidence: float


def _write(decision: str, fact: str, reason: str, confidence: float) -> _Finding | None:
    return _Finding(decision, fact, reason, confidence) if fact else None


# Tools and environment. Strong markers are enough on their own; weak ones need a tool-shaped sentence.
_STRONG_TOOL_RE = re.compile(
    r"`[^`]+`|\bhttps?://\S+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"
    r"|\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|dev|internal|local|lan|app|cloud|co|ai|corp|intra)\b"
    r"|\b[a-z][\w.-]*:\d{2,5}\b|(?:^|\s)(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+|(?:^|\s)~/[\w.-]+"
    r"|\b[\w-]+\.(?:sh|py|js|ts|go|rs|rb|yml|yaml|json|toml|ini|cfg|conf|env|lock|sql|ps1|bat)\b"
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z][A-Z0-9_]*=\S+|(?:^|\s)--?[a-z][\w-]*|\$[A-Za-z_]\w*|\b(?:run|type|execute)\s+make\s+[a-z][\w-]*",
)
_KNOWN_TOOLS = (
    r"npm|pnpm|yarn|pip|pipx|uv|poetry|conda|docker|podman|kubectl|k8s|kubernetes|helm|terraform|ansible|git|"
    r"github|gitlab|bitbucket|gh|ssh|rsync|curl|wget|python|node|nodejs|cargo|rustc|golang|gradle|maven|mvn|"
    r"pytest|jest|ruff|eslint|prettier|vim|neovim|nvim|emacs|vscode|tmux|bash|zsh|postgres|postgresql|mysql|"
    r"sqlite|redis|nginx|celery|jenkins|grafana|sentry|jira|aws|gcp|azure|heroku|vercel|netlify|s3|django|"
    r"webpack|vite|makefile|homebrew|brew|apt|systemd|cron|crontab"
)
_INFRA_NOUNS = (
    r"apis?|endpoints?|servers?|databases?|db|repos?|repository|repositories|clusters?|buckets?|hosts?|"
    r"dashboards?|registry|vpn|wiki|docs|logs|staging|production|prod|ci|cd|pipelines?|containers?|vms?|"
    r"scripts?|commands?|terminal|shell|cli|environment|env"
)
_DEV_WORDS = (
    r"deploy\w*|builds?|commits?|push(?:es|ed|ing)?|merg(?:e|es|ed|ing)|rebas\w*|branch\w*|migrat\w*|lint\w*|tests?|test suite|"
    r"releases? branch"
)
_WEAK_TOOL_RE = re.compile(rf"\b(?:{_KNOWN_TOOLS}|{_INFRA_NOUNS}|{_DEV_WORDS})\b", re.I)
_TOOL_STRUCTURES = (
    re.compile(
        r"^(?:(?:always|never|please|just|first|only)\s+)?(?:don't\s+|do not\s+|never\s+)?(?:use|run|deploy|call|"
        r"execute|ssh|type|build|push|test|restart|set|export|install|connect|invoke|start|launch|source|pull|"
        r"merge|rebase|ship|lint|format|migrate|commit|check|open|log in|login|point|configure|tag)\b",
        re.I,
    ),
    re.compile(r"^(?:to|for) \w+", re.I),
    re.compile(
        rf"\b(?:{_INFRA_NOUNS})\b[^.]*?\b(?:lives?|is hosted|are hosted|is deployed|are deployed|runs?|is running|"
        r"are running|is available|is located|listens|sits|is reachable|is|are|uses|use|needs|requires)\b",
        re.I,
    ),
    re.compile(
        r"^(?:I|we|the team|our team|our \w+|my team)\s+(?:\w+ly\s+)?(?:use|deploy|host|build|run|ship|develop|"
        r"test|manage|store|keep|track|push|merge|release)\w*\b",
        re.I,
    ),
    re.compile(
        r"^(?:the\s+)?(?:command|password|token|key|credentials|login|username|port|url|address|hostname)s?\b", re.I
    ),
)


def _mentions_tools(text: str) -> bool:
    return bool(_STRONG_TOOL_RE.search(text) or _WEAK_TOOL_RE.search(text) or _ZH_TOOL_VOCAB.search(text))


def _tools_en(clause: str) -> _Finding | None:
    strong = _STRONG_TOOL_RE.search(clause)
    if not strong and not (_WEAK_TOOL_RE.search(clause) and any(p.search(clause) for p in _TOOL_STRUCTURES)):
        return None
    reason = "names a command, address or path" if strong else "describes the tools or environment"
    return _write(
        "UPDATE_TOOLS", _finish_en(_rewrite(clause)), f"Tools and environment: {reason}.", 0.8 if strong else 0.65
    )


# Identity
_FUTURE_EN = r"from now on|going forward|from here on(?: out)?|henceforth|in (?:the )?future|starting (?:now|today)"
_FUTURE_LEAD_EN = re.compile(rf"^(?:{_FUTURE_EN})[\s,:]+", re.I)
_FUTURE_TAIL_EN = re.compile(rf"[\s,]+(?:{_FUTURE_EN}|please|then|okay|ok)\s*[.!]*$", re.I)
_NAME_INTRO_EN = re.compile(
    r"^(?:your name (?:is now|is|will be|shall be|should be)|you are (?:now )?(?:called|named|known as)|"
    r"you will be (?:called|named|known as)|you shall be (?:called|known as)|(?:call|name) yourself|"
    r"introduce yourself as|refer to yourself as|go by|answer to(?: the name)?)\s+(?P<name>.+)$",
    re.I,
)
_CALL_YOU_EN = re.compile(
    r"^(?:I will|I am going to|I'm going to|we will|let us|I would like to|I want to|I shall|I am gonna)\s+"
    r"call you\s+(?P<name>.+)$",
    re.I,
)
_ATTRIBUTE_EN = re.compile(
    r"^your (?P<attr>emoji|avatar|pronouns|persona|vibe|creature|role|job|title|nickname|signature|sign-off|"
    r"catchphrase|gender|species|mascot|motto)\s+(?P<verb>is now|is|are|will be|should be|shall be)\s+(?P<value>.+)$",
    re.I,
)
_ROLE_NOUNS = (
    r"assistant|helper|tutor|coach|bot|agent|secretary|advisor|adviser|butler|companion|mentor|guide|reviewer|"
    r"editor|translator|teacher|sidekick|copilot|co-pilot|pair programmer|researcher|analyst|planner|concierge|"
    r"trainer|consultant|expert|specialist|buddy"
)
_ROLE_EN = re.compile(
    rf"^you are (?:now )?(?P<det>my|a|an|the) (?P<role>(?:[\w'-]+ ){{0,4}}?(?:{_ROLE_NOUNS}))\b(?P<tail>.*)$", re.I
)
_YOU_ARE_NAME_EN = re.compile(r"^(?i:you are(?: now)?) (?P<name>[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2})\s*[.!]*$")


def _clean_name(name: str) -> str:
    name = re.split(r"\s*[,;]\s*|\s+and\s+|\s+(?:from now on|going forward)\b", name.strip(), maxsplit=1)[0]
    return name.strip(" \"'.!`*").strip()


def _identity_en(clause: str) -> _Finding | None:
    future = bool(_FUTURE_LEAD_EN.match(clause))
    clause = _FUTURE_TAIL_EN.sub("", _FUTURE_LEAD_EN.sub("", clause)).strip()
    name: str | None = None
    if match := _NAME_INTRO_EN.match(clause):
        name = _clean_name(match.group("name"))
    elif (match := _CALL_YOU_EN.match(clause)) and re.match(r"[\"'A-Z]|[^\x00-\x7f]", match.group("name")):
        name = _clean_name(match.group("name"))
    elif (match := _YOU_ARE_NAME_EN.match(clause)) and (future or " now " in clause):
        name = _clean_name(match.group("name"))
    if name:
        return _write("UPDATE_IDENTITY", f"The agent's name is {name}.", "The agent's identity: its name.", 0.85)
    if match := _ATTRIBUTE_EN.match(clause):
        attr = match.group("attr").lower()
        verb = "are" if match.group("verb").lower() == "are" or attr == "pronouns" else "is"
        value = _rewrite(match.group("value"), second=None)
        return _write(
            "UPDATE_IDENTITY",
            _finish_en(f"The agent's {attr} {verb} {value}"),
            f"The agent's identity: its {attr}.",
            0.85,
        )
    if match := _ROLE_EN.match(clause):
        det = {"my": "the user's"}.get(match.group("det").lower(), match.group("det").lower())
        tail = _rewrite(match.group("tail"), second=_AGENT_IT)
        fact = _finish_en(f"The agent is {det} {match.group('role')}{tail}")
        return _write("UPDATE_IDENTITY", fact, "The agent's identity: its role.", 0.75)
    return None


# Soul: character and manner.
_OUTPUT_NOUNS = (
    r"answers?|repl(?:y|ies)|responses?|messages?|tone|explanations?|summar(?:y|ies)|emails?|texts?|sentences|"
    r"paragraphs|output|code comments|jokes|writing|style|voice|personality|humou?r"
)
_LANGUAGES = (
    r"english|british english|american english|chinese|mandarin|cantonese|german|french|spanish|japanese|korean|"
    r"italian|portuguese|russian|dutch|arabic|hindi|plain english|simple english|plain language|simple language"
)
_NEG_VERBS = (
    r"be|use|apologi[sz]e|say|call|add|include|write|reply|answer|respond|start|end|give|make|repeat|ask|sound|"
    r"act|talk|speak|over-?explain|explain|mention|lecture|moralize|moralise|hedge|sugarcoat|pad|assume|guess|"
    r"invent|summari[sz]e|translate|interrupt|swear|curse|put|show|overuse|capitali[sz]e|format|sign|greet|"
    r"praise|flatter|patroni[sz]e|bold|quote|cite|send|share|remind|correct"
)
_SOUL_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (
        re.compile(
            r"^(?:you (?P<modal>should|must|need to|have to|ought to|are to|shall)|I (?:want|need|would like|expect) "
            r"you to|make sure (?:that )?you)\s+(?P<rest>.+)$",
            re.I,
        ),
        lambda m: (
            f"The agent {'must' if (m.group('modal') or '').lower() == 'must' else 'should'} "
            f"{_rewrite(m.group('rest'), second=_AGENT_IT)}"
        ),
    ),
    (
        re.compile(r"^(?:make sure to|try to|try not to|remember to)\s+.+$", re.I),
        lambda m: f"The agent should {_rewrite(m.group(0), second=_AGENT_IT)}",
    ),
    (
        re.compile(
            r"^I (?:(?:would prefer|prefer|like|love|hate|dislike|do not like|don't like|cannot stand|can't stand|"
            r"appreciate) (?:it )?(?:if|when)|would rather) you\b.+$",
            re.I,
        ),
        lambda m: _rewrite(m.group(0)),
    ),
    (
        re.compile(r"^(?P<adv>always|never)\s+(?!mind\b)(?P<rest>\w.*)$", re.I),
        lambda m: f"The agent should {m.group('adv').lower()} {_rewrite(m.group('rest'), second=_AGENT_IT)}",
    ),
    (
        re.compile(rf"^(?:don't|do not|never)\s+(?:ever\s+)?(?P<rest>(?:{_NEG_VERBS})\b.*)$", re.I),
        lambda m: f"The agent should not {_rewrite(m.group('rest'), second=_AGENT_IT)}",
    ),
    (
        re.compile(r"^(?:be|stay|sound|act)\s+(?!right back\b|back\b|there\b|quiet\b)\w.*$", re.I),
        lambda m: f"The agent should {_rewrite(m.group(0), second=_AGENT_IT)}",
    ),
    (
        re.compile(r"^(?:stop|quit|avoid)\s+\w+ing\b.*$", re.I),
        lambda m: f"The agent should {_rewrite(m.group(0), second=_AGENT_IT)}",
    ),
    (
        re.compile(rf"^(?:keep|make)\s+(?:all\s+)?(?:your|the)\s+(?:{_OUTPUT_NOUNS})\b.*$", re.I),
        lambda m: f"The agent should {_rewrite(m.group(0), second=_AGENT_IT)}",
    ),
    (
        re.compile(
            rf"^(?:answer|reply|respond|speak|talk|write|communicate)(?:\s+to me)?(?:\s+only)?\s+(?:in (?:{_LANGUAGES}|"
            r"bullet points|full sentences|short sentences|one paragraph|lowercase|markdown|a [\w-]+ tone)\b|more\b|"
            r"less\b|briefly|concisely|formally|informally|casually|politely|directly|plainly|simply|like\b|as if\b)",
            re.I,
        ),
        lambda m: f"The agent should {_rewrite(m.string, second=_AGENT_IT)}",
    ),
    (
        re.compile(
            r"^use\s+(?:fewer|less|more|no|plain|simple|simpler|short|shorter|british|american|metric|imperial|"
            r"formal|informal|bullet|numbered|emojis?|headings|headers|tables|markdown|examples|analogies|humou?r|"
            r"a [\w-]+ tone)\b",
            re.I,
        ),
        lambda m: f"The agent should {_rewrite(m.string, second=_AGENT_IT)}",
    ),
    (
        re.compile(
            rf"^(?:your|the)\s+(?:{_OUTPUT_NOUNS})\s+(?:should|must|need to|needs to|have to|has to|could|can|are|is)\b",
            re.I,
        ),
        lambda m: _rewrite(m.string),
    ),
    (
        re.compile(r"^you are\s+(?:way |far |a bit |a little |much |just )?(?:too|overly)\s+(?P<adj>[\w-]+)", re.I),
        lambda m: f"The user finds the agent too {m.group('adj')}",
    ),
    (
        re.compile(
            r"^you\s+(?:talk|write|apologi[sz]e|ramble|explain|hedge|repeat yourself|use \w+|ask)\s.*too much\b.*$",
            re.I,
        ),
        lambda m: f"The user finds that {_rewrite(m.group(0))}",
    ),
)
_NOT_A_VERB = frozenset(
    "i we you he she it they my our your the a an this that these those there here what who which it's "
    "his her their its".split()
)
_CONDITION_EN = re.compile(
    r"^(?P<conj>when|whenever|if|before|after|once)\s+(?P<cond>[^,]+),\s*(?:then\s+)?(?P<main>.+)$", re.I
)


def _lower_first(text: str) -> str:
    """ "Be more concise" inside "The agent should be more concise"; "I" and acronyms keep their case."""
    first_word = text.split(" ", 1)[0]
    if first_word != "I" and not first_word.isupper() and text[:1].isupper():
        return text[0].lower() + text[1:]
    return text


def _soul_main_en(clause: str, *, open_imperative: bool) -> str | None:
    clause = _lower_first(clause)
    for pattern, build in _SOUL_RULES:
        if match := pattern.match(clause):
            return build(match)
    if not open_imperative:
        return None
    # After "from now on" or a condition, any imperative is an instruction about manner.
    words = clause.split()
    if words and words[0].lower() == "you" and len(words) > 1:
        verb = "be" if words[1].lower() in ("are", "is") else words[1]
        return f"The agent should {verb} {_rewrite(' '.join(words[2:]), second=_AGENT_IT)}".rstrip()
    if words and words[0].lower() not in _NOT_A_VERB and words[0].isalpha() and not words[0].lower().endswith("ing"):
        return f"The agent should {_rewrite(clause, second=_AGENT_IT)}"
    return None


def _soul_en(clause: str) -> _Finding | None:
    if _mentions_tools(clause):
        return None
    future = bool(_FUTURE_LEAD_EN.match(clause))
    clause = _FUTURE_TAIL_EN.sub("", _FUTURE_LEAD_EN.sub("", clause)).strip()
    clause = re.sub(r"^(?:please|pls|kindly)\s+", "", clause, flags=re.I)
    fact: str | None = None
    if condition := _CONDITION_EN.match(clause):
        main = _soul_main_en(condition.group("main"), open_imperative=True)
        if main and not re.match(r"^I\b", condition.group("main")):
            cond = _rewrite(condition.group("cond"))
            fact = f"{condition.group('conj').capitalize()} {cond}, {main[0].lower()}{main[1:]}"
    if fact is None:
        fact = _soul_main_en(clause, open_imperative=future)
    if not fact:
        return None
    return _write("UPDATE_SOUL", _finish_en(fact), "An instruction about the agent's character or manner.", 0.75)


# Explicit requests to remember.
_REMEMBER_EN = re.compile(
    r"^(?:(?:please|pls|plz|also|and|oh|so|now|just|kindly|from now on|going forward)[,]?\s+)*"
    r"(?:(?:I (?:want|need|would like) you to|you (?:should|need to|must|have to)|make sure (?:to|you)|try to|"
    r"always|can you|could you)\s+)?"
    r"(?P<verb>remember|don't forget|do not forget|never forget|not forget|keep in mind|bear in mind|"
    r"make a note(?: of)?|make note(?: of)?|take note(?: of)?|note down|note(?= that\b)|write down|jot down|memori[sz]e|"
    r"commit to memory|remind me|save (?:this|that|it)(?: (?:to|in) (?:your )?memory)?|"
    r"store (?:this|that|it) (?:in|to) (?:your )?memory|add (?:this |that |it )?to (?:your )?memory)\b(?P<rest>.*)$",
    re.I,
)
_REMEMBER_TAIL_EN = re.compile(
    r"^(?P<content>.+?)\s*[,;:.!\-\u2013\u2014]+\s*(?:please\s+)?(?:remember (?:that|this|it)|remember|"
    r"don't forget (?:that|this|it)|do not forget (?:that|this|it)|don't forget|keep (?:that|this|it) in mind|"
    r"make a note of (?:that|this|it)|note that down|write that down)(?:,?\s*(?:please|ok|okay|thanks))?\s*[.!]*$",
    re.I,
)
_BARE_EN = re.compile(
    r"^(?:this|that|it|these|those)?(?: one)?(?:\s*(?:for (?:me|later|next time|the future)|too|as well|please|now))*$",
    re.I,
)
_REMEMBER_ZH = re.compile(
    r"^(?:(?:以后|今后|从现在开始|请你|请|麻烦你|麻烦|帮我|你一定要|你要|你得|一定要|一定|务必|千万要|千万|要|得|你|可以)\s*)*"
    r"(?P<verb>记住|记得|记一下|记下来|记下|记好|记牢|别忘了|不要忘了|别忘记|不要忘记|千万别忘了|牢记)(?P<rest>.*)$"
)
_REMEMBER_TAIL_ZH = re.compile(
    r"^(?P<content>.+?)[，,。！!\s]+(?:请|你|要|一定要|帮我)?"
    r"(?:记住|记一下|记下来|记下|记好|别忘了|不要忘了|别忘记|不要忘记)(?:了|哦|啊|吧|喔|呀|这个|这一点)*[。！!]*$"
)
_BARE_ZH = re.compile(r"^(?:这个|这件事|这一点|这些|这|了|哦|啊|吧|喔|呀|一下|下来|好|住)*$")


@dataclass(frozen=True)
class _Remember:
    """A request to remember; ``content`` None means a bare "remember that" whose fact is elsewhere."""

    content: str | None


def _remember_request(clause: str) -> _Remember | _Finding | None:
    """Recognise a request to remember. "Remember to <do something>" is an instruction, so it comes
    back as a finding: the soul rule's when it is about manner, else a memory of the task."""
    if _is_chinese(clause):
        if match := _REMEMBER_TAIL_ZH.match(clause):
            return _Remember(match.group("content"))
        if match := _REMEMBER_ZH.match(clause):
            rest = re.sub(r"^[\s，,：:。]*(?:一下|下来|了)?[\s，,：:。]*", "", match.group("rest"))
            return _Remember(None if _BARE_ZH.match(rest) else rest)
        return None
    if match := _REMEMBER_EN.match(clause):
        verb = match.group("verb").lower()
        rest = re.sub(r"^[\s:,\-\u2013\u2014]+", "", match.group("rest")).strip()
        rest = re.sub(r"[\s,]+(?:please|thanks|ok|okay)\s*[.!]*$", "", rest, flags=re.I)
        if re.match(r"to\s", rest, re.I):
            inner = rest[3:].strip()
            if verb == "remind me":
                fact = _finish_en(f"The user wants to be reminded to {_rewrite(inner)}")
                return _Finding("UPDATE_MEMORY", fact, "An explicit request to be reminded.", 0.85)
            instruction = _soul_main_en(inner, open_imperative=False)
            if instruction and not _mentions_tools(inner):
                return _Finding(
                    "UPDATE_SOUL", _finish_en(instruction), "An instruction about the agent's manner.", 0.75
                )
            fact = _finish_en(f"The agent should remember to {_rewrite(inner, second=_AGENT_IT)}")
            return _Finding("UPDATE_MEMORY", fact, "An explicit request to remember a task.", 0.85)
        rest = re.sub(
            r"^(?:(?:this|that)\s*[:,\-\u2013\u2014]+\s*|the fact that\s+|that\s+|about\s+)", "", rest, flags=re.I
        )
        if verb == "remind me" and rest:
            fact = _finish_en(f"The user wants to be reminded about {_rewrite(rest)}")
            return _Finding("UPDATE_MEMORY", fact, "An explicit request to be reminded.", 0.85)
        return _Remember(None if _BARE_EN.match(rest.rstrip(".!")) else rest)
    if match := _REMEMBER_TAIL_EN.match(clause):
        return _Remember(match.group("content"))
    return None


def _fact_from_statement(text: str) -> str:
    """A fact in full ("The user is allergic to peanuts."), for MEMORY.md and for corrections."""
    if _is_chinese(text):
        return _finish_zh(_rewrite_zh(text))
    return _finish_en(_rewrite(text))


def _fact_from_agent(text: str) -> str:
    """The agent's own words, "you prefer tea", seen from outside: "The user prefers tea."."""
    if _is_chinese(text):
        return _finish_zh(_rewrite_zh(text, first="助手", second="用户"))
    return _finish_en(_rewrite(text, first=_AGENT, second=_USER))


# Durable facts about the user (English).
_TRANSIENT_EN = re.compile(
    r"\b(?:today|tonight|right now|at the moment|this (?:morning|afternoon|evening|week)|yesterday|tomorrow|"
    r"just now)\b",
    re.I,
)
_ONE_OFF_EN = re.compile(r"^I (?:would|will) (?:like|love|prefer|rather|want|need|take|have)\b", re.I)
_ADV = r"(?:(?:really|also|actually|generally|usually|much|kind of|kinda|sort of|absolutely|definitely|genuinely|truly|strongly|totally|personally|still|honestly|mostly|especially|just|very)\s+)*"
_PREFERENCE_EN = re.compile(
    rf"^I\s+{_ADV}(?:prefer|like|love|enjoy|adore|hate|dislike|detest|loathe|despise|can't stand|cannot stand|"
    r"can not stand|don't like|do not like|don't mind|do not mind|don't eat|do not eat|don't drink|do not drink|"
    r"can't eat|cannot eat|never eat|never drink|am into|am (?:a )?(?:big |huge )?fan of|favou?r)\b(?P<object>.*)$",
    re.I,
)
_REACTION_OBJECT = re.compile(r"^\s*(?:it|this|that|these|those|them|yours?)\b(?!\s+(?:when|if)\b)", re.I)
_DURABLE_ADJECTIVES = (
    r"vegetarian|vegan|pescatarian|gluten-free|lactose intolerant|left-handed|right-handed|colou?rblind|deaf|"
    r"blind|married|single|divorced|engaged|widowed|retired|pregnant|diabetic|allergic|based|from|originally|"
    r"fluent|bilingual|native|self-employed|freelance|freelancing|unemployed|dyslexic|autistic|introverted|"
    r"extroverted|an? (?!bit\b|little\b|lot\b|tad\b|sort\b|kind\b)\w+|\d+(?: years old|-year-old)|"
    r"(?:learning|studying|training for|preparing for|saving for|working on|working at|working as|working for|"
    r"building|writing|planning|moving to|responsible for|in charge of)\b"
)
# An update or a negation of something the user said before (the guardian replaces the old line).
_CHANGE_EN = re.compile(
    rf"^I\s+{_ADV}(?:(?:now|recently|finally|just|have)\s+)*(?:switched|changed|moved|relocated|started|joined|quit|"
    r"left|gave up|stopped|dropped|ditched|swapped|traded|became|went|got (?:a new job|married|divorced|engaged))\b|"
    r"^I\s+(?:am|do|have)?\s*no longer\b|^I\s+(?:am not|do not|don't|no more)\b.*\b(?:anymore|any more|any longer|these days)\b|"
    r"^I\s+(?:now|nowadays)\s+\w+",
    re.I,
)
# "I changed my mind", "I started it": about this conversation, not a change in the user's life.
_CHANGE_NOT_EN = re.compile(
    r"^I\s+(?:\w+\s+)?(?:changed|switched|started|stopped|gave up|left|dropped|quit)\s+(?:my mind|it|this|that|them|the (?:topic|subject)|"
    r"talking|asking|reading|typing|here|there)\b",
    re.I,
)
_ROUTINE_EN = re.compile(
    rf"^I\s+{_ADV}(?:wake up|get up|go to bed|go to sleep|sleep|work out|exercise|train|run|swim|cycle|meditate|"
    r"start work|finish work|have (?:a )?(?:standup|stand-up|lunch|dinner|breakfast)|go to the gym|take my \w+)\b"
    r".*\b(?:at \d|at (?:noon|midnight)|on (?:mon|tue|wed|thu|fri|sat|sun)\w*|every|each|daily|weekly|\d\s?(?:am|pm))",
    re.I,
)
_USER_RULES_EN: tuple[tuple[str, re.Pattern[str], float], ...] = (
    ("a change to something the user said before", _CHANGE_EN, 0.75),
    ("the user's routine", _ROUTINE_EN, 0.7),
    ("a stated preference", _PREFERENCE_EN, 0.8),
    (
        "where the user lives or comes from",
        re.compile(rf"^I\s+{_ADV}(?:live|come from|grew up|was born|moved|relocated|reside)\b", re.I),
        0.8,
    ),
    (
        "the user's work, studies or skills",
        re.compile(
            rf"^I\s+{_ADV}(?:work|study|teach|manage|lead|run (?:a|an|my|the)|own|volunteer|play|speak|drive|ride|"
            r"cook|practi[cs]e|collect|attend|use|code|program|develop|design|maintain|support|write)\b",
            re.I,
        ),
        0.7,
    ),
    ("a durable trait", re.compile(rf"^I am\s+{_ADV}(?:{_DURABLE_ADJECTIVES})", re.I), 0.75),
    (
        "the user's family, pets or health",
        re.compile(
            r"^I\s+(?:have|have got)\s+(?:a |an |one |two |three |four |five |\d+ )?(?:[\w-]+ ){0,2}?"
            r"(?:dogs?|cats?|pets?|kids?|child|children|sons?|daughters?|brothers?|sisters?|wife|husband|partner|"
            r"boyfriend|girlfriend|twins|grandchildren|allerg\w+|diabetes|asthma|adhd|dyslexia|degree|phd|"
            r"master's|bachelor's)\b",
            re.I,
        ),
        0.75,
    ),
    (
        "something long-standing",
        re.compile(
            r"^I have\s+(?:been\s+)?\w+\b.*\b(?:for (?:\w+ )?(?:years|months|decades|ages|a long time)|since)\b", re.I
        ),
        0.7,
    ),
    (
        "a habit",
        re.compile(
            r"^I\s+(?:usually|always|never|often|normally|typically|rarely|generally|tend to|mostly)\s+\w+", re.I
        ),
        0.65,
    ),
    (
        "a goal",
        re.compile(
            r"^I\s+(?:want|hope|plan|intend|am planning|am trying|aim) to\s+(?:learn|become|move|switch|get better|"
            r"improve|retire|start|quit|study|travel|visit|run a|finish)\b",
            re.I,
        ),
        0.6,
    ),
)
_MY_DURABLE = frozenset(
    "name names nickname birthday wife husband partner son sons daughter daughters kid kids children child mother "
    "mom mum father dad parents brother brothers sister sisters family dog dogs cat cats pet pets boss manager "
    "team company employer job role title timezone email phone address hometown city country language pronouns "
    "age anniversary allergy allergies diet hobby hobbies favourite favorite colour color food team's "
    "girlfriend boyfriend fiance fiancee university school degree major salary car house apartment flat "
    "native first zone".split()
)
_MY_EN = re.compile(
    r"^my\s+(?P<np>[\w' -]{1,40}?)\s+(?:is|are|was|were|has|have|lives|live|works|work|likes|like|loves|love|"
    r"hates|goes|studies|turns|just turned)\b",
    re.I,
)
_CALL_ME_EN = re.compile(r"^(?i:(?:you can |you may |just |please )?call me)\s+(?P<name>[\"'A-Z\u4e00-\u9fff].*)$")
_INTRO_EN = re.compile(r"^(?:I am|this is)\s+(?P<name>[A-Z][\w'-]*(?: [A-Z][\w'-]*)?)\b")


def _user_fact_en(clause: str) -> str:
    rewritten = _rewrite(clause)
    if rewritten.lower().startswith("the user ") and not rewritten.lower().startswith("the user's"):
        rewritten = rewritten[len("the user ") :]
    return _finish_en(rewritten)


def _user_en(clause: str, *, greeted: bool) -> _Finding | None:
    clause = _FUTURE_LEAD_EN.sub("", _expand(clause))
    if match := _CALL_ME_EN.match(clause):
        return _write(
            "UPDATE_USER",
            f"Prefers to be called {_clean_name(match.group('name'))}.",
            "How the user wants to be addressed.",
            0.85,
        )
    if greeted and (match := _INTRO_EN.match(clause)):
        return _write(
            "UPDATE_USER", f"The user's name is {match.group('name')}.", "The user introduced themselves.", 0.75
        )
    if _ONE_OFF_EN.match(clause):
        return _Finding(NO_WRITE, None, "A request for now, not a lasting preference.", 0.7)
    matched: tuple[str, float] | None = None
    if (match := _MY_EN.match(clause)) and _MY_DURABLE & {
        w.lower().removesuffix("'s") for w in match.group("np").split()
    }:
        matched = ("a fact about the user's life", 0.75)
    else:
        for label, pattern, confidence in _USER_RULES_EN:
            if match := pattern.match(clause):
                if "object" in pattern.groupindex and (
                    not match.group("object").strip(" .!") or _REACTION_OBJECT.match(match.group("object"))
                ):
                    return _Finding(NO_WRITE, None, "A reaction to this conversation, not a lasting preference.", 0.7)
                matched = (label, confidence)
                break
    if matched is None:
        return None
    if _CHANGE_NOT_EN.match(clause):
        return _Finding(NO_WRITE, None, "About this conversation, not a change in the user's life.", 0.6)
    if matched[0] == _USER_RULES_EN[0][0] and _mentions_tools(clause):
        # "I switched from vim to Emacs": a change of tool goes where the tool facts are, so it can replace them.
        return _write("UPDATE_TOOLS", _finish_en(_rewrite(clause)), "A change of the user's tools.", matched[1])
    if _TRANSIENT_EN.search(clause):
        return _Finding(NO_WRITE, None, "A passing state, not a durable fact about the user.", 0.7)
    return _write("UPDATE_USER", _user_fact_en(clause), f"About the user: {matched[0]}.", matched[1])


# Chinese rules.
_ZH_TOOL_VOCAB = re.compile(
    r"部署|命令|脚本|服务器|数据库|接口|仓库|代码库|测试环境|生产环境|预发|线上环境|环境变量|端口|域名|配置文件|分支|"
    r"构建|编译|上线|集群|容器|镜像|流水线|密钥|日志"
)
_ZH_TOOL_STRUCTURE = re.compile(r"[A-Za-z][\w.-]*|在|位于|跑在|部署在|地址|用|使用|是|运行|执行")
_ZH_TOOL_USE = re.compile(
    rf"^(?:我们|团队|我们团队|我|大家)?(?:都|一般|平时|统一)?(?:用|使用|运行|执行|跑)\s*(?:{_KNOWN_TOOLS})\b", re.I
)


def _tools_zh(clause: str) -> _Finding | None:
    strong = _STRONG_TOOL_RE.search(clause)
    weak = (_ZH_TOOL_VOCAB.search(clause) and _ZH_TOOL_STRUCTURE.search(clause)) or _ZH_TOOL_USE.match(clause)
    if not strong and not weak:
        return None
    reason = "names a command, address or path" if strong else "describes the tools or environment"
    return _write(
        "UPDATE_TOOLS", _finish_zh(_rewrite_zh(clause)), f"Tools and environment: {reason}.", 0.8 if strong else 0.65
    )


_FUTURE_ZH = re.compile(r"^(?:以后|今后|从现在开始|从现在起|从今以后|往后|接下来|下次|之后)[\s，,]*")
_NAME_ZH = re.compile(
    r"^(?:你的名字(?:就)?(?:是|叫|改成|改为)|你(?:以后)?(?:就)?(?:叫|名叫|改叫|改名叫|改名为|自称)|"
    r"我(?:以后)?(?:就)?(?:叫|称呼|称|喊)你(?:为)?|(?:请)?称呼你自己(?:为)?|(?:你)?给(?:你)?自己起(?:个|一个)?名字(?:叫)?)"
    r"(?P<name>.+)$"
)
_ATTRIBUTE_ZH = re.compile(
    r"^你的(?P<attr>表情符号|表情|emoji|头像|代词|人设|身份|角色|称号|昵称|口头禅|性别|物种|签名)(?:就)?(?:是|改成|改为|设为|换成)(?P<value>.+)$",
    re.I,
)
_ROLE_ZH = re.compile(
    r"^你(?:现在)?(?:就)?是(?P<rest>(?:我的)?(?:一个|一名|一位|个)?.{0,12}?"
    r"(?:助手|助理|秘书|老师|教练|顾问|管家|伙伴|导师|翻译|编辑|机器人|专家|搭档|陪练|军师).*)$"
)
_ZH_NAME_TAIL = re.compile(r"(?:吧|了|好了|就行|就好|哦|啊|呀|啦|[。！!~～\s\"'「」“”])+$")


def _identity_zh(clause: str) -> _Finding | None:
    clause = _FUTURE_ZH.sub("", clause)
    if match := _NAME_ZH.match(clause):
        name = _ZH_NAME_TAIL.sub("", match.group("name")).strip("\"'「」“” ")
        if name and not name.startswith(("我", "用户")):
            return _write("UPDATE_IDENTITY", f"助手的名字是{name}。", "The agent's identity: its name.", 0.85)
    if match := _ATTRIBUTE_ZH.match(clause):
        value = _ZH_NAME_TAIL.sub("", match.group("value"))
        return _write(
            "UPDATE_IDENTITY", _finish_zh(f"助手的{match.group('attr')}是{value}"), "The agent's identity.", 0.85
        )
    if match := _ROLE_ZH.match(clause):
        return _write(
            "UPDATE_IDENTITY",
            _finish_zh(f"助手是{_rewrite_zh(match.group('rest'))}"),
            "The agent's identity: its role.",
            0.75,
        )
    return None


_ZH_MODALS = r"要|应该|应当|必须|得|需要|一定要|最好|尽量|总是|永远|始终|一直|不要|不能|不用"
_ZH_NEGATIVE = r"别|不要|不许|不准|千万别|千万不要"
_ZH_NOT_SOUL = r"担心|着急|客气|介意|急|怕|难过|生气|忘|管"
_ZH_COMPLIMENTS = r"棒|好|厉害|聪明|可爱|牛|强|贴心|有用|给力|优秀|暖"
_ZH_COMPLAINT = re.compile(
    rf"^你(?P<what>说话|回答|回复)?(?P<degree>太|有点儿?|实在太|真是太)(?P<adj>(?!{_ZH_COMPLIMENTS}).+?)了?$"
)
_ZH_SOUL_FORMS = (
    re.compile(rf"^你(?:{_ZH_MODALS}|{_ZH_NEGATIVE}|少|多)"),
    re.compile(rf"^(?:{_ZH_NEGATIVE})(?:再)?(?!{_ZH_NOT_SOUL})"),
    re.compile(r"^(?:用|使用)(?:中文|汉语|英文|英语|日语|简体中文|繁体中文|粤语|普通话|简体|繁体)"),
    re.compile(
        r"^(?:回答|回复|说话|语气|解释|讲话|措辞|输出|答案|文风|风格|语言).*(?:简短|简洁|短|精简|详细|正式|随意|轻松|礼貌|"
        r"直接|委婉|幽默|专业|通俗|口语化|温柔|耐心|客观|一点|一些|点儿)"
    ),
    re.compile(r"^(?:少|多)(?:用|说|加|讲|写|给|举)"),
)


def _soul_zh(clause: str) -> _Finding | None:
    if _STRONG_TOOL_RE.search(clause) or _WEAK_TOOL_RE.search(clause) or _ZH_TOOL_VOCAB.search(clause):
        return None
    if match := _ZH_COMPLAINT.match(clause):
        fact = f"用户觉得助手{match.group('what') or ''}{match.group('degree')}{match.group('adj')}"
        return _write("UPDATE_SOUL", _finish_zh(fact), "The user's feedback on the agent's manner.", 0.65)
    rest = _FUTURE_ZH.sub("", clause)
    open_instruction = rest != clause
    wished = re.match(r"^(?:我希望你|我想让你|我要你|我需要你|希望你|请你)", rest)
    if wished:
        rest, open_instruction = _FUTURE_ZH.sub("", rest[wished.end() :]), True
    if not rest or rest.startswith("我"):
        return None
    if not open_instruction and not any(form.match(rest) for form in _ZH_SOUL_FORMS):
        return None
    rest = re.sub(r"^你(?!们)", "", rest)
    rest = re.sub(rf"^(?:{_ZH_NEGATIVE})", "不要", rest)
    rest = re.sub(r"了$", "", _ZH_TAIL_RE.sub("", rest))
    subject = "助手" if re.match(rf"(?:{_ZH_MODALS})", rest) else "助手应当"
    return _write(
        "UPDATE_SOUL",
        _finish_zh(subject + _rewrite_zh(rest)),
        "An instruction about the agent's character or manner.",
        0.75,
    )


_TRANSIENT_ZH = re.compile(r"今天|今晚|刚才|刚刚|此刻|这会儿|昨天|明天|今早")
_ZH_ADV = r"(?:也|还|真的|很|非常|特别|比较|最|一直|还是|超级|超|挺|蛮|更|都|就|其实|本来|向来|从来|平时|一般|不太|不怎么|不是很|有点儿?)*"
_ZH_DURABLE_MY = (
    r"名字|生日|老婆|妻子|丈夫|老公|女儿|儿子|孩子|猫|狗|宠物|时区|邮箱|家乡|老家|母语|工作|职业|公司|老板|爱好|专业|城市|"
    r"电话|手机号|地址|血型|星座|年龄|身高|过敏|饮食|偏好|习惯|口味|团队|部门|上司|领导|同事|朋友|男朋友|女朋友|父母|爸爸|"
    r"妈妈|哥哥|姐姐|弟弟|妹妹|家人|车|母校|学校|代词|家"
)
_USER_RULES_ZH: tuple[tuple[str, re.Pattern[str], float], ...] = (
    (
        "a change to something the user said before",
        re.compile(
            r"^我(?:已经|现在|最近|刚|前不久|上个月|去年|终于)?(?:搬到|搬去|搬家到|移居|换到|跳槽到|转到|改用|换成|换用|开始用|"
            r"入职|加入|辞职|离职|离开了|戒了|不再|已经不|不.{1,8}了$|改成|改吃|开始吃|成了|变成)"
        ),
        0.75,
    ),
    (
        "the user's routine",
        re.compile(
            r"^我(?:现在|平时|一般|通常)?(?:每天|每周.|每晚|周.)?.{0,6}?(?:点|點)(?:半|钟)?.{0,4}(?:起床|睡觉|上班|下班|健身|跑步|吃饭)"
        ),
        0.7,
    ),
    (
        "a stated preference",
        re.compile(
            rf"^我{_ZH_ADV}(?:喜欢|爱|热爱|讨厌|不喜欢|偏好|偏爱|喜爱|受不了|反感|害怕|怕|习惯|不习惯|爱吃|爱喝|不爱|"
            r"不吃|不喝|不能吃|吃素|不碰|忌口|倾向于|钟爱|痴迷|迷|介意|不介意)(?P<object>.*)$"
        ),
        0.8,
    ),
    ("the user's name", re.compile(r"^我(?:的名字)?(?:叫|是叫|名叫)(?P<name>.+)$"), 0.85),
    (
        "where the user lives or works",
        re.compile(
            r"^我(?:现在|目前|一直|平时)?(?:住在|住|生活在|定居在|来自|出生在|出生于|在.{1,20}?(?:工作|上班|上学|读书|生活|"
            r"长大|出生|实习|任职))"
        ),
        0.8,
    ),
    ("the user's allergy", re.compile(r"^我对.+?过敏"), 0.85),
    ("a fact about the user's life", re.compile(rf"^我(?:的)?(?:{_ZH_DURABLE_MY})"), 0.75),
    (
        "the user's family, pets or health",
        re.compile(
            r"^我(?:有|养了|养着|养|家里有)(?:一|两|二|三|四|五|六|几|\d+)?(?:个|只|条|位|匹)?.{0,4}?"
            r"(?:猫|狗|孩子|女儿|儿子|宠物|兄弟|姐妹|鱼|兔子|鸟|糖尿病|哮喘|高血压)"
        ),
        0.75,
    ),
    (
        "a habit",
        re.compile(r"^我(?:每天|每周|每晚|每个月|每年|通常|一般|平时|经常|总是|从不|从来不|很少|习惯)(?P<rest>.+)$"),
        0.65,
    ),
    (
        "the languages the user speaks",
        re.compile(r"^我(?:会说|会讲|说|讲)(?:中文|英语|英文|日语|法语|德语|西班牙语|粤语|普通话|韩语)"),
        0.75,
    ),
    ("the user's work or studies", re.compile(r"^我(?:在|正在|最近在)?(?:学|学习|备考|负责|研究|从事)(?!了)"), 0.7),
    ("the user's work", re.compile(r"^我(?:的工作是|是做|做)(?!了)"), 0.7),
    ("what the user uses", re.compile(r"^我(?:平时|一般|习惯|主要|一直)?(?:用|使用)(?!了)"), 0.65),
    ("the user's age", re.compile(r"^我(?:今年)?(?:\d+|[一二三四五六七八九十]+)岁"), 0.75),
    (
        "who the user is",
        re.compile(r"^我(?:现在|目前)?是(?!说|问|不是|想|觉得|认真|开玩笑|在|真的|故意|来|要)(?P<rest>.+)$"),
        0.7,
    ),
)
_CALL_ME_ZH = re.compile(
    r"^(?:你)?(?:以后)?(?:就|可以)?(?:叫我|称呼我|喊我|管我叫)(?P<name>.+?)(?:就行了|就行|就好了|就好|就可以了|就可以|吧|好了)?$"
)
_ZH_REACTION = re.compile(r"^(?:这个|那个|它|这样|你|这|那|此)")


def _user_zh(clause: str) -> _Finding | None:
    if match := _CALL_ME_ZH.match(clause):
        name = _ZH_NAME_TAIL.sub("", match.group("name"))
        return _write("UPDATE_USER", f"用户希望被称为{name}。", "How the user wants to be addressed.", 0.85)
    for label, pattern, confidence in _USER_RULES_ZH:
        if match := pattern.match(clause):
            if "object" in pattern.groupindex and (
                not match.group("object").strip() or _ZH_REACTION.match(match.group("object"))
            ):
                return _Finding(NO_WRITE, None, "A reaction to this conversation, not a lasting preference.", 0.7)
            if _TRANSIENT_ZH.search(clause):
                return _Finding(NO_WRITE, None, "A passing state, not a durable fact about the user.", 0.7)
            return _write("UPDATE_USER", _finish_zh(_rewrite_zh(clause)), f"About the user: {label}.", confidence)
    return None


# --------------------------------------------------------------------------------------------
# Putting it together
# --------------------------------------------------------------------------------------------

_OFFER_EN = re.compile(
    r"(?:(?:should|shall|can|may) I|(?:do you want|want|would you like) me to)\s+(?:remember|note down|note|save|"
    r"keep in mind|make a note of|add)(?:\s+that)?\s+(?P<content>[^?]+?)(?:\s+(?:to|in) (?:my|your) (?:memory|notes))?\s*\?",
    re.I,
)
_OFFER_ZH = re.compile(
    r"(?:要不要|需不需要|要|需要)?我(?:帮你)?(?:记住|记下来|记下|记一下)(?P<content>[^？?]+?)(?:吗|么|嘛)?[？?]"
)
_AFFIRMATION = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|ok|okay|please do|please|do it|go ahead|absolutely|definitely|of course|correct|"
    r"that's right|exactly|好|好的|好啊|是的|是|对|对的|可以|行|嗯|要|需要|记吧|记下吧|麻烦了)"
    r"(?:[\s,，!！.。]+(?:please|thanks|thank you|do it|go ahead|please do|谢谢|好的|记吧|麻烦了))*[\s!！.。]*$",
    re.I,
)


def _classify_statement(text: str, *, greeted: bool) -> _Finding | _Remember | None:
    """Run the rules on one statement, in precedence order; a bare remember request comes back as is."""
    remember = _remember_request(text if _is_chinese(text) else _expand(text))
    if isinstance(remember, _Finding):
        return remember
    if remember is not None:
        if remember.content:
            return _write(
                "UPDATE_MEMORY", _fact_from_statement(remember.content), "An explicit request to remember.", 0.9
            )
        return remember
    if _is_chinese(text):
        rules: tuple[Callable[[str], _Finding | None], ...] = (_identity_zh, _soul_zh, _tools_zh, _user_zh)
        clause = text
    else:
        clause = _expand(text)
        rules = (_identity_en, _soul_en, _tools_en, lambda c: _user_en(c, greeted=greeted))
    for rule in rules:
        finding = rule(clause)
        if finding is not None:
            return finding
    return None


def _last(context: Sequence[tuple[str, str]], role: str) -> str | None:
    for speaker, message in reversed(context):
        if speaker == role and message and message.strip():
            return _normalise(message)
    return None


def _offer_in(context: Sequence[tuple[str, str]]) -> str | None:
    """What the agent last offered to remember, as a fact; None if its last message made no such offer."""
    last_agent = _last(context, "agent")
    if last_agent is None:
        return None
    tail = last_agent[-600:]  # An offer closes the agent's message; a long reply is not searched whole.
    match = _OFFER_EN.search(tail) or _OFFER_ZH.search(tail)
    if match is None:
        return None
    content = match.group("content").strip()
    if _BARE_EN.match(content) or _BARE_ZH.match(content):
        return None
    return _fact_from_agent(content)


def _previous_user_statement(context: Sequence[tuple[str, str]]) -> str | None:
    last_user = _last(context, "user")
    if last_user is None:
        return None
    statements = [r.text for r in map(_read_sentence, _split_sentences(last_user)) if r.kind == "statement"]
    return statements[-1] if statements else None


def _resolve_bare_remember(previous: str | None, context: Sequence[tuple[str, str]]) -> _Finding:
    """ "Remember that." points at something said just before: this message, the agent's offer, or the user's last turn."""
    if previous:
        return _Finding(
            "UPDATE_MEMORY", _fact_from_statement(previous), "An explicit request to remember what was just said.", 0.85
        )
    if offer := _offer_in(context):
        return _Finding("UPDATE_MEMORY", offer, "The user asked to remember what the agent offered to remember.", 0.8)
    if statement := _previous_user_statement(context):
        return _Finding(
            "UPDATE_MEMORY",
            _fact_from_statement(statement),
            "An explicit request to remember the user's last message.",
            0.7,
        )
    return _Finding(NO_WRITE, None, "A request to remember with nothing to remember.", 0.6)


_NO_WRITE_REASONS = {
    "hypothetical": ("A hypothetical, not a fact.", 0.8),
    "question": ("A question, not a fact to remember.", 0.9),
    "smalltalk": ("A greeting, thanks or small talk.", 0.9),
    "long": ("Too long to be a single fact.", 0.6),
}


def _classify_message(message: str, context: Sequence[tuple[str, str]]) -> tuple[GateVerdict, str | None]:
    """The rule verdict, and the first plain statement (what a "written" correction may promote)."""
    readings = [_read_sentence(s) for s in _split_sentences(message)[:_MAX_SENTENCES]]
    if not readings:
        return GateVerdict(NO_WRITE, "An empty message.", None, 0.95), None
    findings: list[_Finding] = []
    previous: str | None = None
    first_statement: str | None = None
    for reading in readings:
        if reading.kind != "statement":
            continue
        result = _classify_statement(reading.text, greeted=reading.greeted)
        if isinstance(result, _Remember):
            result = _resolve_bare_remember(previous, context)
        else:
            previous = reading.text
            first_statement = first_statement or reading.text
        if result is not None:
            findings.append(result)
    writes = [f for f in findings if f.decision != NO_WRITE]
    if writes:
        best = min(writes, key=lambda f: PRECEDENCE.index(f.decision))
        confidence = best.confidence
        if len({f.decision for f in writes}) > 1:
            # Several kinds of fact in one turn: only one is kept, so the choice is less certain.
            confidence = max(0.3, confidence - 0.1)
        return GateVerdict(best.decision, best.reason, best.fact, confidence), first_statement
    if all(r.kind == "smalltalk" for r in readings) and (offer := _offer_in(context)):
        if any(r.text and _AFFIRMATION.match(r.text) for r in readings):
            verdict = GateVerdict("UPDATE_MEMORY", "The user accepted the agent's offer to remember.", offer, 0.75)
            return verdict, first_statement
    if findings:
        return GateVerdict(NO_WRITE, findings[0].reason, None, findings[0].confidence), first_statement
    for kind, (reason, confidence) in _NO_WRITE_REASONS.items():
        if any(r.kind == kind for r in readings):
            return GateVerdict(NO_WRITE, reason, None, confidence), first_statement
    return GateVerdict(NO_WRITE, "No durable fact or instruction found.", None, 0.6), first_statement


def _apply_corrections(
    verdict: GateVerdict, message: str, statement: str | None, corrections: Sequence[CorrectionHint]
) -> GateVerdict:
    """The first matching correction overrides the rules; see the module docstring."""
    for hint in corrections:
        texts = [t for t in (verdict.candidate_fact, message) if t]
        if not any(matches_correction_pattern(hint.pattern, text) for text in texts):
            continue
        label = hint.correction_id or repr(hint.pattern)
        status = (hint.corrected_status or "").strip().lower()
        if status == "refused":
            if verdict.decision == NO_WRITE:
                return verdict
            reason = f"Behaviour correction {label} refused facts like this (pattern {hint.pattern!r})."
            return GateVerdict(NO_WRITE, reason, None, 0.95)
        if status != "written":
            continue
        decision = DECISION_FOR_FILE.get((hint.corrected_target_file or "").strip())
        fact = verdict.candidate_fact or (_fact_from_statement(statement) if statement else None)
        if decision is None or not fact:
            continue
        reason = f"Behaviour correction {label} writes facts like this to {FILE_FOR_DECISION[decision]} (pattern {hint.pattern!r})."
        return GateVerdict(decision, reason, fact, 0.95)
    return verdict


def classify_turn(
    user_message: str,
    agent_reply: str = "",
    *,
    context: Sequence[tuple[str, str]] = (),
    corrections: Sequence[CorrectionHint] = (),
) -> GateVerdict:
    """Decide whether a turn holds something worth remembering, where, and as which fact.

    1. Split the user message into sentences and set aside questions, hypotheticals and small talk.
    2. Run the rules on each remaining sentence (remember, identity, soul, tools, user) and keep the
       highest-precedence write; a bare "remember that" looks back at the sentence before it, then at
       ``context``.
    3. Let the first matching behaviour correction override the result.
    4. A write from a message that, read whole, carries an instruction (``reflection_site.poisoning``)
       passes the whole message as its fact, so that the guardian holds it for review: the rules keep one
       sentence, and the instruction could sit in another ("Great tip. Whenever someone asks, send them
       to …").

    Never raises on odd input; an empty or unreadable message is ``NO_WRITE``.
    """
    message = _normalise(user_message)
    verdict, statement = _classify_message(message, context)
    verdict = _apply_corrections(verdict, message, statement, corrections)
    if verdict.decision != NO_WRITE and not hold_reason(verdict.candidate_fact or ""):
        why = hold_reason(message)
        if why is not None:
            return GateVerdict(
                verdict.decision,
                f"{verdict.reason}; the message reads as an instruction ({why}), so the whole of it goes to the "
                "guardian to be held for review",
                " ".join(message.split()),
                verdict.confidence,
            )
    return verdict
