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
from sessions_app.heuristic_ended import ended_things

_NOT_TAKEN_BACK = re.compile(r"\b(?:no longer|not|never|quit|left|sold|done with|stopped)\b|n't\b|不|没|戒|卖|辞", re.I)


def ended_thing_lines(fact: str, lines: list[str]) -> list[str]:
    """The lines of ``lines`` (bullets kept) of the same person as ``fact`` that name a thing the fact says ended."""
    keys = ended_things(BULLET.sub("", fact).strip())
    if not keys:
        return []
    who = person(fact)
    return [
        line
        for line in lines
        if (person(line) == who if who is not None else the_users(line))
        and any(key.casefold() in line.casefold() for key in keys)
        and not _NOT_TAKEN_BACK.search(line)
        and BULLET.sub("", line).strip() != fact.strip()
    ]
