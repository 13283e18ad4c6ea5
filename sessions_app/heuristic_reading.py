"""How the offline gate reads a message: code spans and URLs kept whole, sentences split, greetings and
thanks at a sentence's front dropped, and each sentence read as a statement, a question, a hypothetical,
small talk or a paste too long to be one fact; what a rule finds in a statement (``Finding``), and how a
fact is finished ("Prefers tea." / "用户喜欢喝茶。"). The phrase lists are in ``heuristic_rules``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reflection_site.text import count_cjk
from sessions_app import heuristic_rules as rules

# A fact is one sentence; anything longer is a paste, not a statement to remember.
MAX_SENTENCE_CHARS = 400


# --- Text -------------------------------------------------------------------------------------------------------------
def protect(text: str) -> tuple[str, list[str]]:
    """``text`` with its code spans and URLs replaced by placeholders, and the spans (for ``restore``)."""
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"\x00{len(spans) - 1}\x00"

    return rules.OPAQUE_RE.sub(keep, text), spans


def restore(text: str, spans: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], text)


def is_chinese(text: str) -> bool:
    """Whether the Chinese rules read this text: more CJK characters than Latin words outside code and URLs
    ("我用 Mac" is Chinese, "My name is 李雷" is English). A name of several capitalised words counts as one word
    ("我住在Prince Edward Island" is Chinese)."""
    protected, _ = protect(text)
    protected = _NAME_RUN.sub("Name", protected)
    return count_cjk(protected) > len(re.findall(r"[A-Za-z]+(?:[.'/_-][A-Za-z0-9]+)*", protected))


_NAME_RUN = re.compile(r"\b[A-Z][A-Za-z'-]*(?:[ \t]+(?:of |de |la |del |van |von )?[A-Z][A-Za-z'-]*)+")


def normalise(text: str) -> str:
    text = (text or "").replace("\u2019", "'").replace("\u2018", "'").replace("\u3000", " ")
    text = text.replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"(?<![\w/~])~(\w(?:[^~\n/]{0,38}\w)?)~(?![\w/~])", r"\1", text)  # "I ~think~ I'm …": chat markup.
    return re.sub(r"[ \t\r\f\v]+", " ", text).strip()


def split_sentences(text: str) -> list[str]:
    protected, spans = protect(text)
    parts = re.split(r"(?<=[。！？；])|(?<=[.!?;])\s+|\n+", protected)
    sentences: list[str] = []
    for part in parts:
        part = (part or "").strip()
        if not part:
            continue
        if sentences and _ends_with_abbreviation(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {part}"
        else:
            sentences.append(part)
    return [restore(sentence, spans) for sentence in sentences]


def _ends_with_abbreviation(sentence: str) -> bool:
    """ "… see Dr." or "(e.g." ends on an abbreviation; "… the dentist." (a word ending like "st.") does not."""
    last = sentence.lower().rsplit(None, 1)[-1]
    return any(
        last == short or (last.endswith(short) and not last[-len(short) - 1].isalpha()) for short in rules.ABBREVIATIONS
    )


def finish_en(text: str) -> str:
    text = re.sub(r"[\s,;:.!~]+$", "", text.strip())
    text = re.sub(r",?\s+(?:please|pls|thanks|thank you|thx|btw)$", "", text, flags=re.I)
    if text and text[0].islower() and text[0].isascii():
        text = text[0].upper() + text[1:]
    return f"{text}." if text else ""


def finish_zh(text: str) -> str:
    text = rules.ZH_TAIL_RE.sub("", text.strip())
    return f"{text}。" if text else ""


# --- Reading a sentence: small talk, questions, hypotheticals ---------------------------------------------------------
@dataclass(frozen=True)
class Reading:
    kind: str  # "statement" | "question" | "hypothetical" | "smalltalk" | "long"
    text: str
    greeted: bool = False
    labelled: bool = False  # Opened by "Update:" or "Correction:": the user says it is a fact.


def _strip_leading(text: str) -> tuple[str, bool]:
    greeted = False
    while True:
        before = text
        for pattern in (rules.EN_LEAD_STRICT, rules.EN_LEAD_LOOSE, rules.ZH_LEAD_STRICT, rules.ZH_LEAD_LOOSE):
            match = pattern.match(text)
            if match and match.end() > 0:
                if re.match(rf"(?:{rules.GREETING_WORDS}|{rules.ZH_GREETING})", match.group(0), re.I):
                    greeted = True
                text = text[match.end() :].lstrip()
        if text == before:
            return text, greeted


# A time adverb between "I" (with "am" or "have") and what they say: read as if it closed the sentence.
_INNER_TIME_ADVERB = re.compile(
    r"^(?P<subject>I(?:'m|'ve| am| have)?)\s+(?P<adverb>currently|recently|nowadays)\s+"
    r"(?P<rest>(?!(?:that|the|a|an|and|but|or|so|if|on|in|at|to)\b)\w.*)$",
    re.I | re.S,
)


# Who with or on top of what, before "I": "With Adwoa and Mum I speak Fante", "On top of residency I've picked up …".
_WITH_OPENER = re.compile(
    r"^(?P<opener>(?i:with|on top of|besides|apart from|alongside|along with|together with|at work|at home)\b"
    r"[^,.;!?]{0,40}?)\s*,?\s+(?=(?:I|I'm|I've|I'd|I am|I have)\s)"
)


def move_time_opener(text: str) -> str:
    """A time or adverbial opener moved behind the first-person statement it opens, so that the rules, which
    read "I …" / "我…", see the statement: "These days I live in Leeds." → "I live in Leeds these days.",
    "最近我搬到了厦门。" → "我最近搬到了厦门。". Any other text comes back as it was."""
    if match := rules.EN_TIME_OPENER.match(text):
        rest = text[match.end() :]
        body, end = re.match(r"^(.*?)([.!]*)$", rest, re.S).groups()
        opener = match.group("opener")
        return f"{body.rstrip(' ,')} {opener[0].lower()}{opener[1:]}{end}"
    if match := _WITH_OPENER.match(text):  # "With Adwoa I speak Fante, …" → "I speak Fante with Adwoa, …".
        first, more = re.match(r"^(.*?)((?:,|;|\s(?:but|so|because)\s|[.!]*$).*)$", text[match.end() :], re.S).groups()
        opener = match.group("opener")
        return f"{first.rstrip(' ,')} {opener[0].lower()}{opener[1:]}{more}"
    if match := rules.ZH_TIME_OPENER.match(text):
        opener = re.sub(r"[，,\s]+", "", match.group("opener"))
        return f"我{opener}{text[match.end() + 1 :]}"
    if re.match(r"^新工作(?:今天|昨天|已经|上周|这周|终于)?(?:开始了|入职了)", text):  # Whose new job: the user's.
        return f"我{text}"
    if match := _INNER_TIME_ADVERB.match(text):  # "I'm currently living in Leeds." → "I'm living in Leeds currently."
        first, more = re.match(
            r"^(.*?)((?:,|\s(?:and|but|so|which|because)\s|[.!]*$).*)$", match.group("rest"), re.S
        ).groups()
        return f"{match.group('subject')} {first.rstrip(' ,')} {match.group('adverb').lower()}{more}"
    return text


def _is_question(text: str) -> bool:
    if re.search(r"[?？]\s*$", text):
        return True
    if is_chinese(text):
        if text.startswith("请问") or re.search(r"(?:吗|呢|么|嘛)[\s。.！!~～]*$", text):
            return True
        return not re.search(r"[。！!.]$", text) and bool(rules.ZH_QUESTION_WORDS.search(text))
    return bool(rules.EN_QUESTION_START.match(text))


def _is_smalltalk(text: str) -> bool:
    return not text or bool(
        rules.EN_SMALLTALK.match(text) or rules.ZH_SMALLTALK.match(text) or rules.EN_GREETING_NAME.match(text)
    )


def read_sentence(sentence: str) -> Reading:
    if len(sentence) > MAX_SENTENCE_CHARS:
        return Reading("long", sentence)
    if sentence.startswith("请问"):
        return Reading("question", sentence)
    if _is_smalltalk(sentence):
        return Reading("smalltalk", sentence)
    text, greeted = _strip_leading(sentence)
    text = move_time_opener(rules.ZH_TAIL.sub("", rules.EN_TAIL.sub("", text)).strip())
    if _is_smalltalk(text):
        return Reading("smalltalk", text, greeted)
    polite = rules.EN_POLITE.match(text) or rules.ZH_POLITE.match(text)
    if polite:
        return Reading("statement", polite.group("rest").strip(), greeted)
    if rules.EN_LABEL.match(sentence) and not _is_question(text):
        return Reading("statement", text, greeted, labelled=True)
    if rules.EN_HYPOTHETICAL.search(text) or rules.ZH_HYPOTHETICAL.search(text):
        return Reading("hypothetical", text, greeted)
    if _is_question(text):
        return Reading("question", text, greeted)
    return Reading("statement", text, greeted)


# --- What a rule finds ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    decision: str
    fact: str | None
    reason: str
    confidence: float


def write_finding(decision: str, fact: str, reason: str, confidence: float) -> Finding | None:
    return Finding(decision, fact, reason, confidence) if fact else None
