"""What a sentence or a fact says has ended for the person, named: "Left the district hospital", "Sold my Honda CD 70",
"I've swapped the Huawei for a Garmin", "I'm done with tape-ball", "The dry needling certificate is off",
"早上的paratha我戒了", "网上的英语口语课我不教了", "培训班我转给一个朋友了", "孔子学院的合同到期…". Pure text: the offline gate
reads such a sentence as a change, and the write guardian (``guardian_app.write.ended_thing``) takes back the lines
that name the thing.

The thing must be specific enough to find a line by: a word of at least four Latin letters (a name, "tape-ball",
"paratha") or two Chinese characters, never a stop word or a kind alone ("job", "class").
"""

from __future__ import annotations

import re

from reflection_site.text import stop_words

_DET = r"(?:(?:the|my|their|his|her|our|its|a|an|that|this)\s+)?"
_THING_EN = (
    r"(?!(?:by|at|in|on|to|for|off|over|with|from|into|out|up|down|around|back)\b)"  # "Stopped by the bakery"
    r"(?P<thing>(?:[\w'-]+)(?:\s+(?!(?:on|at|for|to|in|with|from|after|since|because|and|but|so|as)\b)[\w'-]+){0,3})"
)
# "Is done with tape-ball on Sundays", "Left the district hospital", "Sold their Honda CD 70", "swapped the Huawei for".
# The verbs of an ending, for the thing after them ("Sold my Honda") and for the speaker's own ending.
_ENDED_VERBS = (
    r"done with|finished with|through with|quit|left|sold|gave up|given up|stopped|dropped|swapped|replaced|traded in|"
    r"ditched|got rid of|retired from|resigned from"
)
_ENDED_EN = re.compile(
    rf"\b(?:(?:is|am|are|has)\s+)?(?:{_ENDED_VERBS}|no more|traded|handed over|RIP|R\.I\.P\.?)\s+{_DET}{_THING_EN}",
    re.I,
)
# "The dry needling certificate is off", "The Saturday rabies clinic is over".
_OFF_EN = re.compile(
    rf"^{_DET}{_THING_EN}(?:\s+(?:is|are)\s+|['\u2019]s\s+)(?:off|over|cancelled|finished|gone)\b", re.I
)
# A thing named first, then the person and how it ended: "早上的paratha用户戒了", "培训班欣然转给一个朋友了".
_HOW_ENDED_ZH = (
    r"(?:已经)?(?:戒了|戒掉了|不(?:去|再)?[\u4e00-\u9fff]了|没再[\u4e00-\u9fff]|(?:转给|交给|让给)[^，。；]{1,10}了|卖了|卖掉了|退了|辞了|"
    r"停了|关了|没续)"
)
_ENDED_ZH = tuple(
    re.compile(rf"^(?P<thing>[^，。；,;]{{2,16}}?){who}{_HOW_ENDED_ZH}")
    # The user or a pronoun first, else a name, else no one ("网店交给我表妹管了").
    for who in ("(?:用户|我|他|她)", "(?:(?![的那这])[\u4e00-\u9fff]){2,3}?", "")
)
# The verb first: "我辞了音乐学校的工作", "婉清卖了那辆车".
_VERB_FIRST_ZH = re.compile(
    r"^(?:用户|我|他|她|[\u4e00-\u9fff]{2,3}?)(?:已经|也)?(?:辞了|辞掉了|卖了|卖掉了|退了|关了|停了|戒了|戒掉了)(?P<thing>[^，。；]{2,16})"
)
# Of a topic said with 的 or 那边 ("茶叶电商那边的稿子", "早上的paratha", "旅行社的工作"), the thing is its last part that is
# not a kind or a time.
_ZH_PARTS = re.compile(r"的|那边|这边|那儿|这儿|[那这](?:家|个|所|台|辆)")
_ZH_KINDS = frozenset("工作 活 活儿 稿子 单子 订单 课 班 事 事情 东西 早上 晚上 周末 以前 原来 网上 平时".split())
# "孔子学院的合同到期…", "诊所那边辞了": a place whose contract or work ended.
_CONTRACT_ZH = re.compile(
    r"(?P<thing>[\u4e00-\u9fff A-Za-z]{2,12}?)的(?:合同|工作|租约)(?:一|已经|刚)?(?:到期|结束|没续)"
)
_KINDS = frozenset(
    "job work class classes course courses lesson lessons team side club place thing stuff it habit diet".split()
)


def _key(thing: str) -> str | None:
    """The part of ``thing`` specific enough to find a line by, or None."""
    thing = thing.strip(" '-")
    if re.search(r"[\u4e00-\u9fff]", thing):
        parts = [re.sub(r"(?:那[个台辆家])$", "", p).strip() for p in _ZH_PARTS.split(thing)]
        parts = [
            p
            for p in parts
            if len(p) >= 2
            and p not in _ZH_KINDS
            and not re.search(r"用户|我|你|他|她|它|^[这那]", p)  # a person, not a thing
        ]
        return parts[-1] if parts else None
    if re.search(r"\b(?:him|her|them|me|us|you|it)\b", thing, re.I):
        return None  # "I've given up correcting him": a way of acting towards someone, not a thing of the speaker's.
    if any(w.casefold() in _KINDS for w in thing.split()):
        return None  # "Dropped the Portuguese course": a kind of thing, which the rules for courses and jobs read.
    kept = [w for w in thing.split() if w.casefold() not in stop_words()]
    if not kept:
        return None
    key = " ".join(kept)
    return key if len(key.replace(" ", "")) >= 4 else None


def ended_things(fact: str) -> list[str]:
    """The things ``fact`` says have ended, as keys to find lines by."""
    found = [m.group("thing") for pattern in (_ENDED_EN, _OFF_EN) for m in pattern.finditer(fact)]
    # The user or a pronoun, when one is there; else a name or no one, read both ways ("欣然培训班欣然转给…").
    zh = [m for pattern in _ENDED_ZH if (m := pattern.search(fact))]
    found += [m.group("thing") for m in (zh[:1] if zh and zh[0].re is _ENDED_ZH[0] else zh)]
    found += [m.group("thing") for m in [_CONTRACT_ZH.search(fact)] if m]
    found += [m.group("thing") for m in [_VERB_FIRST_ZH.search(fact)] if m]
    keys = [_key(thing) for thing in found]
    return list(dict.fromkeys(k for k in keys if k))


# The speaker's own ending, said with "I" or with no subject at all ("Left the district hospital …", "I've swapped
# the Huawei for …", "I'm done with tape-ball"), or a thing of theirs that is off ("The dry needling certificate is
# off"); in Chinese the thing first, then 我 ("早上的paratha我戒了") or whose contract ended ("…的合同到期我没续").
_SPEAKER_ENDED_EN = re.compile(
    rf"^(?:no more\b|RIP\b|R\.I\.P\b|(?:I(?:'ve| have|'m| am)?\s+)?(?:(?:just|finally|recently|officially)\s+)?"
    rf"(?:{_ENDED_VERBS})\b)",
    re.I,
)
_SPEAKER_ENDED_ZH = re.compile(
    r"我(?:就|已经|也)?(?:戒了|戒掉了|不[\u4e00-\u9fff]了|没再|转给|交给|卖了|卖掉了|退了|辞了|停了|关了|没续)|^[^，。；]{2,16}?(?:交给|转给)我|"
    # A thing of theirs that stopped, said with no one ("陶艺那边停了", "说明书翻译的活停了"): the speaker's own.
    r"^[^，。；他她]{2,16}?(?:已经|也)?(?:停了|黄了|不(?:做|干|弄|教|上|开|卖|练|学|带|接|写|画|唱|跳|弹|拍|玩|修|打|采|跑|拉|抽|去[\u4e00-\u9fff])了)"
)


def speaker_ended(sentence: str) -> bool:
    """Whether ``sentence`` says that a named thing of the speaker's has ended (see ``ended_things``)."""
    if not ended_things(sentence) or sentence.rstrip().endswith(("!", "！")):  # "No more wedding cake for me!"
        return False
    if re.search(r"[\u4e00-\u9fff]", sentence):
        return bool(_SPEAKER_ENDED_ZH.search(sentence))
    return bool(
        _SPEAKER_ENDED_EN.match(sentence)
        or (_OFF_EN.match(sentence) and not re.match(r"^(?:it|that|this)\b", sentence, re.I))
    )


# "The Redmi went into a washing tank. I've replaced it with a Samsung Galaxy A55.": "it" is the thing the sentence
# before opened with.
_REPLACED_IT = re.compile(
    r"^(?:I(?:'ve| have)?\s+)?(?P<verb>replaced|swapped|traded(?: in)?)\s+(?:it|that|that one|mine)\s+(?P<rest>(?:with|for)\s.+)$",
    re.I,
)
_OPENED_WITH = re.compile(
    r"^(?:the|my|our)\s+(?:old\s+)?(?P<thing>(?-i:[A-Z])[\w-]*(?:\s+(?-i:[A-Z0-9])[\w-]*){0,3})", re.I
)


def with_what_it_was(sentence: str, before: str | None) -> str:
    """``sentence`` with "it" named when it replaces the thing ``before`` opened with, else as it was."""
    replaced = _REPLACED_IT.match(sentence)
    opened = _OPENED_WITH.match(before or "")
    if replaced is None or opened is None:
        return sentence
    return f"I {replaced.group('verb').lower()} the {opened.group('thing')} {replaced.group('rest')}"
