"""Seed 001's ``## Retain`` bullets: typed, self-contained facts in a daily log.

    ## Retain
    - W @Peter: Currently in Marrakech (Nov 27 - Dec 1) for Andy's birthday.
    - B @warelay: I fixed the Baileys WS crash by wrapping connection.update in try/catch.
    - O(c=0.95) @Peter: Prefers short replies on WhatsApp (<1500 chars); long content goes into a file.
    - S Busy week; the migration dominated.

The type prefix is ``W`` (world), ``B`` (experience, biographical), ``O`` (opinion) or ``S`` (observation,
summary); ``@Name`` tags are entities (slugs of ``bank/entities/<Name>.md``); ``(c=0.0..1.0)`` is the
confidence, written for opinions. A bullet in the section without a type prefix is kept as plain text.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from reflection_site.memory_files import is_heading, parse_heading
from reflection_site.text import CJK_RANGES

KIND_FOR_PREFIX: dict[str, str] = {"W": "world", "B": "experience", "O": "opinion", "S": "observation"}
KINDS: tuple[str, ...] = ("world", "experience", "opinion", "observation")

# "## Retain", and "## 保留" as the seed's Chinese edition writes it.
RETAIN_TITLES = ("retain", "保留")  # ## Retain, ## 保留
_BULLET = re.compile(
    r"""^\s{0,3}[-*+]\s+
        (?P<prefix>[WBOS])
        (?:\((?P<params>[^)]*)\))?
        (?=[\s:@]|$)
        (?P<rest>.*)$""",
    re.VERBOSE,
)
ENTITY = re.compile(r"(?<![\w@])@([^\W_][\w.\-]*)")
_CONFIDENCE = re.compile(r"\bc\s*=\s*([01](?:\.\d+)?|\.\d+)\b")
_LEADING_TAGS = re.compile(r"^\s*((?:@[^\W_][\w.\-]*[\s,]*)*)\s*:?\s*")


@dataclass(frozen=True)
class RetainFact:
    kind: str
    content: str
    entities: list[str] = field(default_factory=list)
    confidence: float | None = None


def entity_name(raw: str) -> str:
    """``@The-Castle.`` -> ``The-Castle`` (a trailing full stop or hyphen ends the sentence, not the name)."""
    return raw.rstrip(".-")


_ENTITY_SPACES = re.compile(r"[\s_]+")


def entity_key(name: str) -> str:
    """The form entities are compared in: ``The Castle`` and ``the-castle`` are the same entity."""
    return _ENTITY_SPACES.sub("-", name.strip().lstrip("@")).lower()


def mentioned_entities(text: str) -> list[str]:
    """Every ``@Name`` in the text, in order, once each."""
    seen: dict[str, str] = {}
    for raw in ENTITY.findall(text):
        name = entity_name(raw)
        if name and entity_key(name) not in seen:
            seen[entity_key(name)] = name
    return list(seen.values())


def parse_retain_bullet(text: str) -> RetainFact | None:
    """One bullet (its first line and any continuation lines) -> a typed fact, or None if it has no type prefix."""
    first, _, more = text.partition("\n")
    match = _BULLET.match(first)
    if match is None:
        return None
    confidence = None
    if match.group("params") is not None:
        found = _CONFIDENCE.search(match.group("params"))
        if found is not None:
            confidence = min(1.0, max(0.0, float(found.group(1))))
    rest = match.group("rest")
    tags = _LEADING_TAGS.match(rest)
    content = rest[tags.end() :] if tags else rest
    if more.strip():
        content = (content + "\n" + "\n".join(line.strip() for line in more.splitlines())).strip()
    if not content.strip():
        return None
    return RetainFact(
        kind=KIND_FOR_PREFIX[match.group("prefix")],
        content=content.strip(),
        entities=mentioned_entities(rest + "\n" + more),
        confidence=confidence,
    )


def is_retain_heading(line: str) -> bool:
    heading = parse_heading(line)
    return heading is not None and heading[1].casefold() in RETAIN_TITLES


# --- Time ranges in facts ----------------------------------------------------------------------------------
# "since March", "until 2025", "from May to July", "Nov 27 - Dec 1", "自三月起", "2025年11月27日至12月1日": the
# period a fact holds, as the recall index's valid_from / valid_until (seed 001: "what was true in November
# 2025?"). A date without a year takes the reference day's (a daily log's day), moved a year back for a start
# after the reference day and a year on for an end before it.
_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_CN_NUMBERS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_ORD = r"(?:st|nd|rd|th)?"
_DATE_EN = (
    rf"(?:\d{{4}}-\d{{2}}(?:-\d{{2}})?"
    rf"|\d{{1,2}}{_ORD}\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?"
    rf"|{_MONTH}(?:\s+\d{{1,2}}{_ORD}(?!\d))?(?:,?\s+\d{{4}})?"
    rf"|(?:19|20)\d{{2}})(?!\w)"
)
_CN_NUM = r"(?:\d{1,2}|十[一二]?|[一二三四五六七八九])"
_DATE_CN = rf"(?:(?:\d{{4}}年)?{_CN_NUM}月(?:{_CN_NUM}[日号])?|\d{{4}}年)"
_DATE = rf"(?:{_DATE_EN}|{_DATE_CN})"
# What every date above contains (a digit, a month's first three letters, 年 or 月): a line without any has no
# range, and most facts are such lines (the index parses every chunk: the full patterns cost 50 µs a chunk).
_MAYBE_DATE = re.compile(r"\d|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|[年月]", re.I)
_RANGE_PATTERNS = [
    # (pattern, which ends it sets); group "a" is the start, "b" the end
    (re.compile(rf"(?<!\w)(?:from|between)\s+(?P<a>{_DATE_EN})\s*(?:to|until|till|through|and|-|–|—)\s*(?P<b>{_DATE_EN})", re.I), "ab"),
    (re.compile(rf"(?:自|从)?\s*(?P<a>{_DATE_CN})\s*(?:到|至|-|–|—|~)\s*(?P<b>{_DATE_CN}|{_CN_NUM}[日号])", re.I), "ab"),
    (re.compile(rf"(?<![\w-])(?P<a>{_DATE_EN})\s*(?:-|–|—|to|until|till|through)\s*(?P<b>{_DATE_EN}|\d{{1,2}}(?!\d))", re.I), "ab"),
    (re.compile(rf"(?<!\w)(?:since|starting(?:\s+(?:in|on|from))?|as\s+of|from|beginning(?:\s+in)?)\s+(?P<a>{_DATE_EN})", re.I), "a"),
    (re.compile(rf"(?:自|从)\s*(?P<a>{_DATE_CN})\s*(?:起|开始|以来)"), "a"),
    (re.compile(rf"(?<!\w)(?:until|till|through|up\s+to|ends?\s+(?:in|on))\s+(?P<b>{_DATE_EN})", re.I), "b"),
    (re.compile(rf"(?:直到|截至|截止到?|到)\s*(?P<b>{_DATE_CN})\s*(?:为止|底|前)?"), "b"),
]  # fmt: skip


@dataclass(frozen=True)
class _Date:
    year: int | None
    month: int | None
    day: int | None


def _cn_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + (_CN_NUMBERS.get(text[1:], 0) if len(text) > 1 else 0)
    return _CN_NUMBERS[text]


def _parse_date(text: str) -> _Date | None:
    text = text.strip().rstrip(".")
    match = re.fullmatch(r"(\d{4})-(\d{2})(?:-(\d{2}))?", text)
    if match:
        return _Date(int(match.group(1)), int(match.group(2)), int(match.group(3)) if match.group(3) else None)
    match = re.fullmatch(rf"(?:(\d{{4}})年)?(?:({_CN_NUM})月)?(?:({_CN_NUM})[日号])?", text)
    if match and any(match.groups()):
        year, month, day = match.groups()
        return _Date(
            int(year) if year else None, _cn_number(month) if month else None, _cn_number(day) if day else None
        )
    if re.fullmatch(r"\d{4}", text):
        return _Date(int(text), None, None)
    if re.fullmatch(r"\d{1,2}", text):
        return _Date(None, None, int(text))
    year = re.search(r"(\d{4})$", text)
    month = re.search(r"[a-z]{3,}", text, re.I)
    day = re.search(r"(?<!\d)(\d{1,2})(?!\d)", text[: year.start()] if year else text)
    if month is None or month.group().lower()[:3] not in _MONTHS:
        return None
    return _Date(
        int(year.group(1)) if year else None, _MONTHS[month.group().lower()[:3]], int(day.group(1)) if day else None
    )


def _bounds(date: _Date, year: int) -> tuple[dt.date, dt.date]:
    """The first and last day a date names (a year, a month or a day), in ``year`` if it has none."""
    year = date.year or year
    if date.month is None:
        return dt.date(year, 1, 1), dt.date(year, 12, 31)
    if date.day is None:
        last = (dt.date(year + date.month // 12, date.month % 12 + 1, 1)) - dt.timedelta(days=1)
        return dt.date(year, date.month, 1), last
    return dt.date(year, date.month, date.day), dt.date(year, date.month, date.day)


def parse_time_range(text: str, reference: dt.date) -> tuple[dt.date | None, dt.date | None]:
    """The period a fact states (first day, last day), either end None when open; (None, None) when none.

    ``reference`` is the day the fact was written (its daily log's day): it supplies a missing year.
    """
    if _MAYBE_DATE.search(text) is None:
        return None, None
    for pattern, ends in _RANGE_PATTERNS:
        match = pattern.search(text)
        if match is None:
            continue
        start = _parse_date(match.group("a")) if "a" in ends else None
        end = _parse_date(match.group("b")) if "b" in ends else None
        if ("a" in ends and start is None) or ("b" in ends and end is None):
            continue
        try:
            if start is not None and end is not None:
                if end.month is None and end.year is None:  # "Nov 27-30": the end's month is the start's
                    if start.month is None or start.day is None:
                        continue  # "2023-04" is no range from 2023 to the 4th
                    end = _Date(start.year, start.month, end.day)
                year = end.year or start.year or reference.year
                first = _bounds(start, start.year or year)[0]
                last = _bounds(end, year)[1]
                if last < first and start.year is None:
                    first = _bounds(start, year - 1)[0]
                if last < first:
                    continue
                return first, last
            if start is not None:
                first = _bounds(start, reference.year)[0]
                if start.year is None and first > reference:
                    first = _bounds(start, reference.year - 1)[0]
                return first, None
            assert end is not None
            last = _bounds(end, reference.year)[1]
            if end.year is None and last < reference:
                last = _bounds(end, reference.year + 1)[1]
            return None, last
        except ValueError:  # "February 30"
            continue
    return None, None


# --- Inferring Retain bullets from a log's untyped lines ----------------------------------------------------
# Seed 001: "the reflect job can infer these bullets from the rest of the log". Offline rules, in this order:
# a summary (S), a preference or judgement (O, with a confidence from its hedges), a first-person past action of
# the agent (B), else a fact about the world or people (W). Measured on a labelled table (QUALITY.md).
PREFIX_FOR_KIND: dict[str, str] = {kind: prefix for prefix, kind in KIND_FOR_PREFIX.items()}
_SUMMARY = re.compile(
    r"^(?:summary|recap|overall|all in all|in short|in sum|tl;?dr|to sum up|bottom line|today was|today:|"
    r"this week(?: was)?|the week|the day|busy (?:day|week|morning|afternoon)|long (?:day|week)|quiet (?:day|week)|"
    r"productive (?:day|week)|mostly\b|main (?:theme|thing)s?\b)|^(?:总结|总的来说|总之|今天(?:主要|整体|总体)|本周|这周)",
    re.IGNORECASE,
)
_OPINION = re.compile(
    r"\b(?:prefer(?:s|red|ring)?|likes?|loves?|enjoys?|hates?|dislikes?|favou?rite|would rather|'d rather|"
    r"can'?t stand|cannot stand|i think|i believe|i feel|i suspect|in my (?:view|opinion)|imo|seems?|looks like|"
    r"should(?:n't)? (?:be|use|have|avoid|stick)|better than|worse than|(?:much|far|way) \w+er than|"
    r"(?:cleaner|nicer|simpler|clearer|easier|harder|uglier|messier) than|the best|the worst|overrated|underrated|"
    r"not worth|worth it|annoying|frustrating|elegant|clunky|too (?:slow|long|verbose|complex|noisy)|"
    r"is (?:great|terrible|awful|excellent|bad|good|nicer|cleaner|simpler)|are (?:great|terrible|bad|good))\b"
    r"|喜欢|偏好|讨厌|觉得|认为|更爱|宁愿|应该",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|probably|might|seems?|looks like|i think|i suspect|not sure)\b|可能|也许", re.I
)
_STRONG = re.compile(
    r"\b(?:always|never|strongly|definitely|hates?|loves?|can'?t stand|cannot stand|absolutely)\b|讨厌|非常", re.I
)
_IRREGULAR_PAST = (
    "did made wrote built ran sent found set put got gave took told led left began brought bought caught chose "
    "drew drove fought forgot froze hid held kept knew lost met paid read rode rebuilt rewrote said saw sold shut "
    "spent split spoke stood struck swept taught thought threw understood undid upgraded woke won withdrew"
).split()
_PAST_VERB = rf"(?:[a-z]+ed|{'|'.join(_IRREGULAR_PAST)})"
_FIRST_PERSON_PAST = re.compile(
    rf"^(?:(?:i|we)\s+(?:(?:have|had|'ve|just|then|also|finally|already|successfully|quickly)\s+)*{_PAST_VERB}\b"
    rf"|(?:i|we)'ve\s+{_PAST_VERB}\b|(?:i|we)\s+(?:was|were)\s+able\s+to\b)"
    rf"|^{_PAST_VERB}\b(?!\s+(?:by|to|from)\b)"
    r"|^我(?:们)?(?:已经|刚|刚刚|今天|昨天|终于)?\S{0,6}?(?:了|过)",
    re.IGNORECASE,
)
_NOT_ACTIONS = frozenset("need needed based red bed shed seed feed speed used supposed interested".split())
_LEAD = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+|^\s*(?:\[?\d{1,2}:\d{2}(?::\d{2})?\]?\s*[-–:]?\s*)")
_RELATIVE_DAY = re.compile(r"\b(today|yesterday|tonight|this morning|this afternoon|this evening)\b", re.IGNORECASE)


def infer_kind(text: str) -> tuple[str, float | None]:
    """(kind, confidence) of an untyped log line: observation, opinion (with a confidence), experience or world."""
    line = _LEAD.sub("", text.strip()).strip()
    if _SUMMARY.search(line):
        return "observation", None
    if _OPINION.search(line):
        if _STRONG.search(line):
            return "opinion", 0.9
        return ("opinion", 0.6) if _HEDGE.search(line) else ("opinion", 0.75)
    match = _FIRST_PERSON_PAST.search(line)
    if match is not None and match.group().split()[-1].lower() not in _NOT_ACTIONS:
        return "experience", None
    return "world", None


def _dated(text: str, day: dt.date) -> str:
    """Relative days made absolute, so the bullet stands on its own: "today" -> "on 2025-11-27"."""

    def repl(match: re.Match[str]) -> str:
        word = match.group(1).lower()
        when = day - dt.timedelta(days=1) if word == "yesterday" else day
        return f"on {when.isoformat()}" if word in ("today", "yesterday") else f"{word} ({when.isoformat()})"

    return _RELATIVE_DAY.sub(repl, text)


def infer_bullet(text: str, day: dt.date, *, names: list[str] | None = None) -> str:
    """The ``## Retain`` bullet for an untyped line: ``- W @Peter: …``, ``- O(c=0.75) …``, with its entities
    (its ``@tags`` and ``names``, the names found in it) and relative days made absolute."""
    line = " ".join(_LEAD.sub("", text.strip()).split())
    kind, confidence = infer_kind(line)
    prefix = PREFIX_FOR_KIND[kind] + (f"(c={confidence:.2f})" if confidence is not None else "")
    tags: dict[str, str] = {entity_key(n): n for n in mentioned_entities(line)}
    for name in names or []:
        tags.setdefault(entity_key(name), name)
    tagged = " ".join("@" + re.sub(r"\s+", "-", n) for n in tags.values() if f"@{n}" not in line)
    body = _dated(line, day)
    return f"- {prefix} {tagged}: {body}" if tagged else f"- {prefix} {body}"


def untyped_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of a daily log's lines a Retain bullet could be inferred from: prose and list items that
    are not typed Retain bullets (a line under ``## Retain`` without a type counts: an agent appending to its log
    writes below the section), outside code blocks and headings; one-word lines and link-only lines are left out."""
    out: list[tuple[int, str]] = []
    in_retain = in_fence = False
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if re.match(r"^(?:`{3,}|~{3,})", stripped):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if is_heading(stripped):
            in_retain = is_retain_heading(stripped)
            continue
        if raw[:1] in (" ", "\t") and not stripped.startswith(("-", "*", "+")):
            continue
        if in_retain and parse_retain_bullet(raw) is not None:
            continue  # typed already; an untyped line under ## Retain (the agent appends below it) is inferred
        line = _LEAD.sub("", stripped).strip()
        if len(line) < 12 or len(line.split()) < 3 and not re.search(rf"[{CJK_RANGES}]{{6,}}", line):
            continue
        if re.fullmatch(r"(?:<[^>]*>|\[[^\]]*\]\([^)]*\)|https?://\S+|[-*_=|:` ]+)+", line):
            continue
        out.append((number, line))
    return out
