"""What a write that replaces old lines keeps of them: a job that ended (or a home line that also said where one is
from) stays said as past, and the people a home was shared with stay as a line of their own. Pure text, Django-free.
"""

from __future__ import annotations

import re

from guardian_app.write.attribute_words import ORIGIN
from guardian_app.write.takeback import _EMPLOYER_LINE, _JOB_ENDED
from guardian_app.write.whose import BULLET as _BULLET

_NEW_JOB_ZH = re.compile(r"换了?(?:份|个)?(?:工作|公司)|跳槽|入职|新公司|新工作")
# A role named with the place ("Is a pharmacist at Gole, Dutt and Chakraborty"): what the person is outlives the job.
_ROLE_AT = re.compile(r"\b(?:is|was)\s+an?\s+[\w-]+(?:\s+[\w-]+)?\s+(?:at|for|with)\b", re.I)


def with_past_job(fact: str, stale: list[str]) -> str:
    """The text that replaces a job that ended (or a home line that also said where one is from): the fact, with the
    old line kept as past ("Retired (previously: works at Acme Corp).", "Mei已经退休了（以前：Mei在华东物流上班）。")."""
    # A job that ended; or one that another took the place of, where the old line named a role ("用户换工作了，现在在…
    # 当药剂师" after "Is a pharmacist at Gole, Dutt and Chakraborty"): the old job stays said as past, with its role.
    jobs = [line for line in stale if _EMPLOYER_LINE.search(line)] if _JOB_ENDED.search(fact) else []
    if not jobs and (_EMPLOYER_LINE.search(fact) or _NEW_JOB_ZH.search(fact)):
        jobs = [line for line in stale if _EMPLOYER_LINE.search(line) and _ROLE_AT.search(line)]
    jobs = jobs or [line for line in stale if ORIGIN.search(line)]  # Where they are from stays said: "Baku".
    if not jobs:
        return fact
    old = _BULLET.sub("", jobs[0]).strip().rstrip(".。")
    old = re.sub(r"\s*[(（](?:previously|以前)[:：][^)）]*[)）]", "", old).rstrip(".。")  # One job back, not a chain.
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
