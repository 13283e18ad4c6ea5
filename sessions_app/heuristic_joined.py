"""What a turn says beside the fact the offline gate keeps, joined to it, so that one turn's news is one fact:

- the name a child or an animal was given, said after it ("Tahnee and I got a kelpie pup at the weekend, we've called
  him Biscuit", "My sister had her baby on Tuesday, a boy. They've named him Odhiambo", "…had a baby girl last week,
  Tatiana", "领养了一只小猫，取名豆包");
- what took the place of a thing given up, said after it ("Sold my Honda CD 70 to a colleague. We've bought a
  second-hand Suzuki Alto instead.", "The scooter's gone, sold to a student. …, so we've bought a second-hand Toyota
  Prius", or what stands there now: "Gave up the pu'er. It's rooibos now"): the guardian takes back the lines that
  name the old thing, and the new one is written with it.

The gate keeps one fact a turn; without this the name, or the new car, was lost while the rest was written. A list
without a verb after the family or the things the user has ("I have three siblings. One older sister, …") joins the
fact too (``listed_after``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from sessions_app import heuristic_rules as rules
from sessions_app.heuristic_ended import ended_things
from sessions_app.heuristic_milestone import SPEAKER, milestone_whose
from sessions_app.heuristic_reading import Finding, is_chinese

_NAME = r"(?-i:[A-Z\u00c0-\u024f])[\w\u00c0-\u024f-]+(?:\s+(?:and|&)\s+(?-i:[A-Z])[\w-]+)?"
_NAMED_EN = re.compile(
    rf"\b(?:(?:I|we|they|she|he)(?:'ve|\u2019ve| have)?\s+(?:called|named)\s+(?:him|her|it|them)\s+|"
    rf"(?:his|her|its|their)\s+names?\s+(?:is|are)\s+|(?:called|named)\s+)(?P<name>{_NAME})|"
    # The name after the child, set off by a comma: "had a baby girl last week, Tatiana."
    rf"\b(?:baby|son|daughter|boy|girl|twins)\b[^.;!?]{{0,30}},\s+(?P<name2>{_NAME})\s*[.!]",
    re.I,
)
_NAMED_ZH = re.compile(r"(?:取名(?:叫)?|起名(?:叫)?|名字叫)(?P<name>[\u4e00-\u9fff]{1,4}|[A-Z][\w-]+)")
_BORN_OR_KEPT = re.compile(
    rf"\b(?:baby|son|daughter|boy|girl|twins|child|pup|puppy|{rules.PETS})\b|宝宝|儿子|女儿|孩子|小猫|小狗|猫|狗", re.I
)
# Where a clause starts inside a sentence: "It snows far too much up here, so we've bought …".
_CLAUSES = re.compile(r"[,;:]\s*(?:(?:and\s+)?so|and|but)?\s*")
_GOT = re.compile(r"\b(?:bought|got|purchased|adopted|rescued|leased)\b|买了|换了", re.I)
# What stands in its place now: "It's rooibos now", "so it's a second-hand Volkswagen Caddy now", "What's parked
# outside now is a used Toyota RAV4".
_NOW_IT_IS = re.compile(
    r"^(?:it['\u2019]s|it is|now it['\u2019]s)\s+.{2,60}?\bnow\b|^what['\u2019]s\s.{0,30}\bnow\s+is\s", re.I
)


def with_name(fact: str, message: str) -> str:
    """``fact`` about a child or an animal, with the name ``message`` gives it after, when the fact lacks it."""
    if not _BORN_OR_KEPT.search(fact):
        return fact
    named = _NAMED_ZH.search(message) if is_chinese(fact) else _NAMED_EN.search(message)
    name = named and (named.groupdict().get("name") or named.groupdict().get("name2"))
    if not name or name in fact:
        return fact
    if is_chinese(fact):
        return f"{fact.rstrip('。')}，取名{name}。"
    return f"{fact.rstrip('.')}, named {name}."


def with_replacement(fact: str, statements: Sequence[str], fact_of: Callable[[str], str]) -> str:
    """``fact`` that says a thing of the speaker's ended, with what they got in its place in ``statements``."""
    if not ended_things(fact):
        return fact
    clauses = [clause.strip() for statement in statements for clause in _CLAUSES.split(statement)]
    # What they got first ("we've bought a Suzuki Jimny"), else what stands there now ("it's rooibos now").
    got = [c for c in clauses if _GOT.search(c) and milestone_whose(c) == SPEAKER]
    new_one = next(iter(got or [c for c in clauses if _NOW_IT_IS.match(c)]), None)
    if new_one is None:
        return fact
    # "We've bought …": the household's, written as the user's.
    new = fact_of(re.sub(r"^we(?='ve|\u2019ve| have|\s)", "I", new_one, flags=re.I))
    if new.rstrip(".。") in fact:
        return fact
    joiner = "；" if is_chinese(fact) else "; "
    return f"{fact.rstrip('.。')}{joiner}{new[:1].lower()}{new[1:]}"


def listed_after(finding: Finding, text: str) -> Finding | None:
    """ "I have three siblings. One older sister, a younger brother and a younger sister": a list without a verb
    after the family or the things the user has says who or what they are; it joins the fact."""
    if finding.reason not in rules.LISTED_REASONS or not finding.fact or not rules.VERBLESS_LIST_EN.match(text):
        return None
    if not rules.LISTED_NOUNS.search(text):  # "I have two kids. A lovely day today.": not who they are.
        return None
    listed = text.strip().rstrip(".!")
    fact = f"{finding.fact.rstrip('.')}: {listed[:1].lower()}{listed[1:]}."
    return Finding(finding.decision, fact, finding.reason, finding.confidence)
