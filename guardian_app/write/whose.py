"""Whose a line or a fact is: the person it opens with (a name, in Latin letters or in Chinese), or the user's own
when it names no one ("Works at Acme." is the user's, "Dana works at Acme." Dana's). Pure text, Django-free.
"""

from __future__ import annotations

import re

from sessions_app.heuristic_rules import KIN_FACT_EN, KIN_FACT_ZH

BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_NAMED_SUBJECT = re.compile(
    r"^(?P<n>(?-i:[A-Z\u00c0-\u00de\u0100-\u017f][a-z\u00df-\u00ff\u0100-\u017f-]+))(?:'s\s|\s+(?:is|has|was|no|does|doesn't|did)\b|(?=[\u4e00-\u9fff]))"
)


def subject(text: str) -> str | None:
    """The person a fact or line opens with ("Dev's …", "Dev is …", "Zhou的…"), or None for the user."""
    match = _NAMED_SUBJECT.match(BULLET.sub("", text).strip())
    if match is None or match.group("n") in {"The", "User", "Is", "Has", "Was", "Does", "Doesn't", "No"}:
        return None
    return match.group("n")


# "Dana works at Acme." is Dana's; "Works at Acme." and "Has been a nurse at …" are the user's.
_NAME_AND_VERB = re.compile(
    r"^(?!(?:Just|Now|Also|Still|Finally|Recently|Then|Today|Yesterday|Often|Usually|Already|Only|Never|Loves|Likes|"
    r"Enjoys|Hates|Has|Is|Uses|Owns|Lives|Works|Plays|Speaks|Prefers|Drinks|Eats|Takes|Goes|Does|Runs|Reads|Keeps|"
    r"Wants|Needs|Makes|Gets|Teaches|Studies|Rides|Drives|Cooks|Bakes|Grows|Collects|Attends|Visits|"
    # An adverb opens the user's line as well: "Really likes running.", "Mostly works from home."
    r"Really|Actually|Honestly|Definitely|Mostly|Generally|Truly|Absolutely|Certainly|Probably|Especially|Seriously|"
    r"Totally|Genuinely|Currently|Occasionally|Regularly|Rarely|Normally|Typically|Basically|Simply|Strongly|Deeply|"
    r"Secretly|Happily|Officially|Mainly|Primarily|Personally|Increasingly|Always|Sometimes|Even|Almost|Once|Since)\b)"
    r"(?P<n>(?-i:[A-Z\u00c0-\u00de\u0100-\u017f][a-z\u00df-\u00ff\u0100-\u017f-]+))\s+(?:(?:now|also|still|just)\s+)?(?:[a-z]{2,}(?:s|ed)|sold|left|quit|got|bought|gave|took|lost|made|can|could|is|has|was|no)\b"
)


# "美玲在一家牙科诊所做护士", "美玲从牙科诊所辞职了": a Chinese name before what they do.
_NAME_ZH = re.compile(
    r"^(?!用户)(?P<n>[\u4e00-\u9fff]{2,3}?)(?=在[^，。；]{1,20}?(?:工作|上班|做|当)|从[^，。；]{1,20}?(?:辞职|离职))"
)


def person(text: str) -> str | None:
    match = _NAME_AND_VERB.match(BULLET.sub("", text).strip())
    return match.group("n") if match else subject(text)


def worker(text: str) -> str | None:
    """Whose job a line or fact states: a person as ``person`` reads them, or a Chinese name before where they work."""
    match = _NAME_ZH.match(BULLET.sub("", text).strip())
    return match.group("n") if match else person(text)


_OPENS_WITH_NAME_ZH = re.compile(r"^\s*(?:[-*+]\s+)?(?!用户)[\u4e00-\u9fff]{2,3}(?:在|是|的|从|和|跟|把|已经|现在)")


def the_users(line: str) -> bool:
    """Whether a line is the user's: it opens with no one's name, or it says "the user" ("Sunday mornings the user
    opens …" and "Breakfast is a paratha …; the user's mother made it …" are the user's, though ``person`` reads
    "Sunday" and "Breakfast" as names; "Dilnoza is a paediatrician in Parkent" is Dilnoza's)."""
    said = BULLET.sub("", line).strip()
    if KIN_FACT_EN.match(said) or KIN_FACT_ZH.match(said):  # "The user's sister is learning Portuguese.": hers.
        return False
    if re.search(r"\bthe user\b|用户", line, re.I):
        return True
    return subject(line) is None and person(line) is None and not _OPENS_WITH_NAME_ZH.match(line)
