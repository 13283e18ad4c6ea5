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
_ENDED_EN = re.compile(
    rf"\b(?:(?:is|am|are)\s+)?(?:done with|finished with|through with|quit|left|sold|gave up|has given up|stopped|"
    rf"dropped|swapped|traded in|traded|ditched|got rid of|retired from|resigned from|handed over)\s+{_DET}{_THING_EN}",
    re.I,
)
# "The dry needling certificate is off", "The Saturday rabies clinic is over".
_OFF_EN = re.compile(rf"^{_DET}{_THING_EN}\s+(?:is|are)\s+(?:off|over|cancelled|finished|gone)\b", re.I)
# A thing named first, then the person and how it ended: "早上的paratha用户戒了", "培训班欣然转给一个朋友了".
_HOW_ENDED_ZH = r"(?:已经)?(?:戒了|戒掉了|不[\u4e00-\u9fff]了|没再[\u4e00-\u9fff]|转给[^，。；]{1,10}了|卖了|卖掉了|退了|辞了|停了|关了|没续)"
_ENDED_ZH = tuple(
    re.compile(rf"^(?:[\u4e00-\u9fff]{{1,4}}的)?(?P<thing>[^，。；,;的]{{2,12}}?){who}{_HOW_ENDED_ZH}")
    for who in ("(?:用户|我|他|她)", "[\u4e00-\u9fff]{2,3}?")  # The user or a pronoun first, else a name.
)
# "孔子学院的合同到期…", "诊所那边辞了": a place whose contract or work ended.
_CONTRACT_ZH = re.compile(r"(?P<thing>[\u4e00-\u9fff A-Za-z]{2,12}?)的(?:合同|工作|租约)(?:到期|结束|没续)")
_KINDS = frozenset(
    {
        "job",
        "work",
        "class",
        "classes",
        "course",
        "courses",
        "lessons",
        "lesson",
        "team",
        "side",
        "club",
        "place",
        "thing",
        "stuff",
        "it",
        "habit",
        "diet",
    }
)


def _key(thing: str) -> str | None:
    """The part of ``thing`` specific enough to find a line by, or None."""
    thing = thing.strip(" '-")
    if re.search(r"[\u4e00-\u9fff]", thing):
        thing = re.sub(r"(?:那[个台辆家])$", "", thing)
        return thing if len(thing) >= 2 and not re.fullmatch(r"[这那它]\w?", thing) else None
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
    zh = next((m for pattern in _ENDED_ZH if (m := pattern.search(fact))), None)
    found += [m.group("thing") for m in (zh, _CONTRACT_ZH.search(fact)) if m]
    keys = [_key(thing) for thing in found]
    return list(dict.fromkeys(k for k in keys if k))


# The speaker's own ending, said with "I" or with no subject at all ("Left the district hospital …", "I've swapped
# the Huawei for …", "I'm done with tape-ball"), or a thing of theirs that is off ("The dry needling certificate is
# off"); in Chinese the thing first, then 我 ("早上的paratha我戒了") or whose contract ended ("…的合同到期我没续").
_SPEAKER_ENDED_EN = re.compile(
    r"^(?:I(?:'ve| have|'m| am)?\s+)?(?:(?:just|finally|recently|officially)\s+)?(?:done with|finished with|"
    r"through with|quit|left|sold|gave up|given up|stopped|dropped|swapped|traded in|ditched|got rid of|retired from|"
    r"resigned from)\b",
    re.I,
)
_SPEAKER_ENDED_ZH = re.compile(
    r"我(?:已经)?(?:戒了|戒掉了|不[\u4e00-\u9fff]了|没再|转给|卖了|卖掉了|退了|辞了|停了|关了|没续)"
)


def speaker_ended(sentence: str) -> bool:
    """Whether ``sentence`` says that a named thing of the speaker's has ended (see ``ended_things``)."""
    if not ended_things(sentence):
        return False
    if re.search(r"[\u4e00-\u9fff]", sentence):
        return bool(_SPEAKER_ENDED_ZH.search(sentence))
    return bool(
        _SPEAKER_ENDED_EN.match(sentence)
        or (_OFF_EN.match(sentence) and not re.match(r"^(?:it|that|this)\b", sentence, re.I))
    )
