"""Query understanding for recall (EN and ZH): the search terms, a time expression as a time scope, the filters'
times.

Stop words are dropped, CJK runs become bigrams without the bigrams of function characters (``了``, ``我``,
``的`` …); English is stemmed by the index's tokenizer (FTS5's porter, PostgreSQL's ``english``), not here. A
time expression ("last month", "in May", "3 weeks ago", "上个月", "五月", "before Tomas moved …") is taken out
of the words and turned into a time scope.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from django.utils import timezone

from guardian_app.errors import GuardianError
from guardian_app.recall.chunking import MAX_TOKEN_CHARS
from reflection_site import cli, text

MAX_TERMS = 24
MAX_QUERY_CHARS = 1000


# Question words and function words: "what did we decide about the staging server" searches for
# "decide staging server". Only dropped when something else is left.
STOP_WORDS = text.stop_words(questions=True)
CJK_STOP_WORDS = text.QUESTION_WORDS_ZH
# Function characters: a query bigram that contains one ("我去", "做了", "了什") is dropped when others are left.
CJK_STOP_CHARS = text.stop_chars_zh(questions=True)


class InvalidRecallQuery(GuardianError):
    code = "invalid_query"
    status = HTTPStatus.UNPROCESSABLE_ENTITY


# --- Query parsing --------------------------------------------------------------------------------------
def parse_time(
    value: str | dt.date | dt.datetime | None, *, now: dt.datetime, end_of_day: bool = False
) -> dt.datetime | None:
    """``reflection_site.cli.parse_time`` in the server's zone (the one time syntax of the commands and the API);
    None for no value, InvalidRecallQuery (a 422) for one that is not a time."""
    if value is None or value == "":
        return None
    try:
        return cli.parse_time(value, tz=timezone.get_current_timezone(), now=now, end_of_day=end_of_day)
    except ValueError as exc:
        raise InvalidRecallQuery(str(exc), details={"value": str(value)[:40]}) from exc


def query_terms(query: str) -> list[str]:
    """The query's search terms: lower-cased words, CJK runs as bigrams, stop words dropped, each once.

    A CJK bigram that holds a function character (``我去``, ``做了``) is dropped too, unless nothing else is left:
    a question's bigrams across word boundaries match nothing useful and only add noise to the OR query.
    """
    words: list[str] = []
    for match in text.WORD.finditer(unicodedata.normalize("NFKC", query)):
        word = match.group()
        if text.is_cjk(word):
            words.extend(text.bigrams(word))
        else:
            words.append(word[:MAX_TOKEN_CHARS].lower())
    words = list(dict.fromkeys(words))
    content = [
        w
        for w in words
        if w not in STOP_WORDS and w not in CJK_STOP_WORDS and not (text.is_cjk(w) and CJK_STOP_CHARS.intersection(w))
    ]
    return (content or words)[:MAX_TERMS]


# --- Time expressions ---------------------------------------------------------------------------------------
MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_UNIT_RE = r"(day|week|month|year)s?"
_EN_RELATIVE = re.compile(
    r"\b(?P<which>yesterday|today|tonight|this morning|"
    r"(?:this|last|past|previous) (?:week|month|year)|recently|lately)\b",
    re.IGNORECASE,
)
_EN_AGO = re.compile(rf"\b(?P<n>\d{{1,3}}|a|an|one|two|three|four|five|six) {_UNIT_RE} ago\b", re.IGNORECASE)
_EN_MONTH = re.compile(
    rf"\b(?:in|during|since|of|from|on) (?P<month>{_MONTH_NAMES})\b\.?(?: (?P<year>\d{{4}}))?", re.IGNORECASE
)
_EN_YEAR = re.compile(r"\b(?:in|during) (?P<year>(?:19|20)\d\d)\b", re.IGNORECASE)
_EN_ANCHOR = re.compile(r"\b(?P<side>before|after) (?P<event>[^?.!,;]{3,})", re.IGNORECASE)
_ZH_RELATIVE = re.compile(
    r"(?P<which>昨天|今天|上周|上星期|上个星期|这周|本周|这个星期|上个月|上月|这个月|本月|去年|今年|最近)"
)
_ZH_MONTH = re.compile(r"(?:(?P<year>\d{4})年)?(?P<month>1[0-2]|[1-9]|十[一二]?|[一二三四五六七八九])月份?")
_ZH_ANCHOR = re.compile(r"(?:在)?(?P<event>[^，。？！?]{2,}?)(?P<side>之前|以前|之后|以后)")
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_UNIT_LENGTH = {"day": 1, "week": 7, "month": 30, "year": 365}


@dataclass(frozen=True)
class TimeScope:
    """A half-open window ``[start, end)`` that a question asks about, and the words that said so."""

    start: dt.datetime | None
    end: dt.datetime | None
    phrase: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "phrase": self.phrase,
        }


def _day(moment: dt.datetime) -> dt.datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_window(year: int, month: int, tz: dt.tzinfo | None) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime(year, month, 1, tzinfo=tz)
    end = dt.datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=tz)
    return start, end


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + (_ZH_DIGITS.get(text[1:], 0) if len(text) > 1 else 0)
    return _ZH_DIGITS[text]


def time_scope(query: str, *, now: dt.datetime) -> tuple[TimeScope | None, str]:
    """The time window a question asks about, and the question without the words that said it.

    Relative expressions are taken against ``now`` in the server's time zone; a month without a year is its
    latest occurrence up to now. ``before X`` / ``after X`` (``X之前``) are returned with no window and the
    event ``X`` as the phrase: ``recall`` dates the event by searching for it.
    """
    local = timezone.localtime(now)
    for find in (_relative_scope, _ago_scope, _month_scope, _year_scope, _anchor_scope):
        found = find(query, local)
        if found is not None:
            scope, match = found
            return scope, _cut(query, match)
    return None, query


Found = tuple[TimeScope, re.Match[str]] | None


def _relative_scope(query: str, local: dt.datetime) -> Found:
    """ "yesterday", "last month", "上个月", "recently" …"""
    match = _EN_RELATIVE.search(query) or _ZH_RELATIVE.search(query)
    if not match:
        return None
    start, end = _relative_windows(_day(local))[match.group("which").lower()]
    return TimeScope(start, end, match.group()), match


def _relative_windows(today: dt.datetime) -> dict[str, tuple[dt.datetime, dt.datetime]]:
    day = dt.timedelta(days=1)
    this_week = today - dt.timedelta(days=today.weekday())
    this_month = today.replace(day=1)
    last_month = (this_month - day).replace(day=1)
    this_year = today.replace(month=1, day=1)
    last_year = this_year.replace(year=this_year.year - 1)
    windows = {
        ("yesterday", "昨天"): (today - day, today),
        ("today", "tonight", "this morning", "今天"): (today, today + day),
        ("this week", "这周", "本周", "这个星期"): (this_week, today + day),
        ("last week", "previous week", "上周", "上星期", "上个星期"): (this_week - 7 * day, this_week),
        ("past week",): (today - 7 * day, today + day),
        ("this month", "这个月", "本月"): (this_month, today + day),
        ("last month", "previous month", "上个月", "上月"): (last_month, this_month),
        ("past month",): (today - 30 * day, today + day),
        ("this year", "今年"): (this_year, today + day),
        ("last year", "previous year", "去年"): (last_year, this_year),
        ("past year",): (today - 365 * day, today + day),
        ("recently", "lately", "最近"): (today - 30 * day, today + day),
    }
    return {phrase: window for phrases, window in windows.items() for phrase in phrases}


def _ago_scope(query: str, local: dt.datetime) -> Found:
    """ "3 weeks ago": a window of one unit either side of that day."""
    match = _EN_AGO.search(query)
    if not match:
        return None
    n = match.group("n").lower()
    count = int(n) if n.isdigit() else _NUMBER_WORDS[n]
    unit = dt.timedelta(days=_UNIT_LENGTH[match.group(2).lower()])
    center = _day(local) - count * unit
    return TimeScope(center - unit, center + unit + dt.timedelta(days=1), match.group()), match


def _month_scope(query: str, local: dt.datetime) -> Found:
    """ "in May", "五月", "2025年3月": the month, in the year given or its latest occurrence up to now."""
    match = _EN_MONTH.search(query)
    if match:
        month = MONTHS[match.group("month").lower()]
    else:
        match = _ZH_MONTH.search(query)
        if not match:
            return None
        month = _zh_number(match.group("month"))
    if not 1 <= month <= 12:
        return None
    year = int(match.group("year")) if match.group("year") else local.year - (month > local.month)
    start, end = _month_window(year, month, local.tzinfo)
    return TimeScope(start, end, match.group()), match


def _year_scope(query: str, local: dt.datetime) -> Found:
    match = _EN_YEAR.search(query)
    if not match:
        return None
    year = int(match.group("year"))
    tz = local.tzinfo
    return TimeScope(dt.datetime(year, 1, 1, tzinfo=tz), dt.datetime(year + 1, 1, 1, tzinfo=tz), match.group()), match


def _anchor_scope(query: str, local: dt.datetime) -> Found:
    """ "before Tomas moved …", "搬家之前": no window yet, the event as the phrase (``before:<event>``)."""
    match = _EN_ANCHOR.search(query) or _ZH_ANCHOR.search(query)
    if not match:
        return None
    side = "before" if match.group("side").lower() in ("before", "之前", "以前") else "after"
    return TimeScope(None, None, f"{side}:{match.group('event').strip()}"), match


def _cut(query: str, match: re.Match[str]) -> str:
    return (query[: match.start()] + " " + query[match.end() :]).strip()
