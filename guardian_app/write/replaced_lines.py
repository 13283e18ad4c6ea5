"""What a write that replaces old lines keeps of them: a job that ended (or a home line that also said where one is
from) stays said as past, and the people a home was shared with stay as a line of their own. Pure text, Django-free.
"""

from __future__ import annotations

import re

from guardian_app.write.attribute_words import ORIGIN
from guardian_app.write.takeback import _EMPLOYER_LINE, _JOB_ENDED
from guardian_app.write.whose import BULLET as _BULLET


def with_past_job(fact: str, stale: list[str]) -> str:
    """The text that replaces a job that ended (or a home line that also said where one is from): the fact, with the
    old line kept as past ("Retired (previously: works at Acme Corp).", "Mei已经退休了（以前：Mei在华东物流上班）。")."""
    jobs = [line for line in stale if _EMPLOYER_LINE.search(line)] if _JOB_ENDED.search(fact) else []
    jobs = jobs or [line for line in stale if ORIGIN.search(line)]  # Where they are from stays said: "Baku".
    if not jobs:
        return fact
    old = _BULLET.sub("", jobs[0]).strip().rstrip(".。")
    if re.search(r"[\u4e00-\u9fff]", fact):
        return f"{fact.rstrip('。.')}（以前：{old}）。"
    return f"{fact.rstrip('.')} (previously: {old[:1].lower()}{old[1:]})."


# A home said with the people it is shared with: "Lives in Leeds with their wife and two kids.", "Dev lives in Oslo
# with his partner Ana." A move replaces the home; the household is kept as a line of its own.
_HOME_WITH = re.compile(
    r"^(?P<who>(?:(?-i:[A-Z])[\w' -]{0,40}?\s+)?)(?P<verb>lives?|is living|resides?)\s+in\s+[^,;]+?\s+with\s+"
    r"(?P<company>(?:(?:their|his|her|the user's|two|three|four|a|an)\s+)?"
    r"(?:partner|wife|husband|spouse|girlfriend|boyfriend|fianc\w*|kids?|children|daughters?|sons?|family|parents|"
    r"mother|father|mum|mom|dad|flatmates?|roommates?|housemates?|dogs?|cats?|(?-i:[A-Z])\w+)\b[^;]*?)\W*$",
    re.I,
)


def kept_household(stale: list[str]) -> list[str]:
    """What a replaced home line said besides the home: "Lives in Leeds with their wife and two kids." gives "Lives
    with their wife and two kids.", so a move does not take the household with it."""
    kept = []
    for line in stale:
        match = _HOME_WITH.match(_BULLET.sub("", line).strip())
        if match is None:
            continue
        verb = "Lives" if not match.group("who") else "lives"
        kept.append(f"{match.group('who')}{verb} with {match.group('company')}.")
    return kept
