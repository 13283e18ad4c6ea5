"""Lines a fact takes back because it says that the thing they name has ended for the person: left, sold, swapped,
given up, done with, no longer taught, handed on ("Left the district hospital.", "Sold their Honda CD 70 to a
colleague.", "Has swapped the Huawei for a Garmin.", "Is done with tape-ball on Sundays.", "早上的paratha用户戒了",
"网上的英语口语课用户不教了", "培训班欣然转给一个朋友了", "孔子学院的合同到期…"; ``sessions_app.heuristic_ended`` reads them).

``takeback`` reads the old value where an attribute or a relation names it ("not at Halvorsen Ltd anymore"). A line
written in the person's own words ("Sunday mornings the user opens the batting for a tape-ball cricket side …") has
no attribute to key, so here the thing itself is the key: every line of the same person that names it, and does
not itself say it ended, is taken back.
"""

from __future__ import annotations

import re

from guardian_app.write.whose import BULLET, person, the_users
from reflection_site.text import leading_chinese_name
from sessions_app.heuristic_ended import ended_things

# A line that itself says the thing ended is not taken back ("Sold the old Honda in May", "paratha用户戒了").
_NOT_TAKEN_BACK = re.compile(
    r"\b(?:no longer|not|never|quit|left|sold|done with|stopped|no more)\b|n't\b|"
    r"不再|已经不|不[\u4e00-\u9fff]了|没再|戒了|戒掉|卖了|卖掉|辞了|辞职|转给|交给",
    re.I,
)


def _names_as_current(line: str, keys: list[str]) -> bool:
    """Whether a clause of ``line`` names one of ``keys`` without saying it ended ("旅行社的工作春燕辞了，自己开了个网店"
    names 网店 as current, 旅行社 not)."""
    clauses = re.split(r"[,;，；。]|\.\s", line)
    # A Chinese thing of four characters or more is found by its first three too ("说明书翻译" in "…产品说明书…").
    keys = keys + [k[:3] for k in keys if len(k) >= 4 and re.fullmatch(r"[\u4e00-\u9fff]+", k)]
    # A kind after the thing is found without it: "点心课" in "…教做中式点心".
    keys = keys + [k[:-1] for k in keys if len(k) >= 3 and re.fullmatch(r"[\u4e00-\u9fff]+[课班店活]", k)]
    return any(k.casefold() in c.casefold() and not _NOT_TAKEN_BACK.search(c) for c in clauses for k in keys)


def _named_in_chinese(fact: str, lines: list[str]) -> str | None:
    """The person a Chinese fact not of the user's names anywhere in it, among those whose lines the file holds."""
    if "用户" in fact or not re.search(r"[\u4e00-\u9fff]", fact):
        return None
    named = {name for line in lines if (name := leading_chinese_name(BULLET.sub("", line).strip()))}
    return next((name for name in sorted(named, key=len, reverse=True) if name in fact), None)


def ended_thing_lines(fact: str, lines: list[str]) -> list[str]:
    """The lines of ``lines`` (bullets kept) of the same person as ``fact`` that name a thing the fact says ended."""
    keys = ended_things(BULLET.sub("", fact).strip())
    if not keys:
        return []
    if (name := _named_in_chinese(fact, lines)) is not None:  # "春燕旅行社的工作春燕辞了": 春燕's lines only.
        lines = [line for line in lines if BULLET.sub("", line).strip().startswith(name)]
        keys = [k for key in keys if len(k := key.removeprefix(name)) >= 2]
        return [line for line in lines if _names_as_current(line, keys)]
    who = person(fact)
    return [
        line
        for line in lines
        if (person(line) == who if who is not None else the_users(line))
        and _names_as_current(line, keys)
        and BULLET.sub("", line).strip() != fact.strip()
    ]
