"""A second fact in the same sentence, about someone else: "诗涵是我太太，结婚快三年了，她是广州人。" tells who 诗涵 is to the
user (USER.md) and where she comes from (MEMORY.md); "Nesrine is my little sister; she's doing her master's in Oran."
the same in English. The gate keeps one fact a turn for its decision and gives these as ``also`` (issue 21).

Who: the person the sentence names as someone in the user's life ("X是我太太", "我和X", "认识了X", "X is my sister",
"my sister X", "met X", "my mother"), a name the memory files already hold, or, when the sentence names no one, the
person the sentence before named. What: a later clause that opens with them or with 她/他/she/he, read as the user's
own would be ("她是广州人" is read as "我是广州人"), then said of them ("诗涵是广州人。"). A clause that says "I" or "me"
again is left alone (whose is "比我大两岁" or "she lent me her car"?), and so is one that states a relation (that is
the sentence's main fact), one after a clause that sets it in the past ("我读硕士那几年，她在书店打工": then, not now),
and any in a sentence that names two people. Where the user grew up, said of such a person's place ("…lives in
Nyeri, on the farm where I grew up"), is the user's own and goes the same way (``where_i_grew_up``).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from sessions_app import heuristic_rules as rules
from sessions_app.heuristic_chinese import user_zh
from sessions_app.heuristic_english import user_en
from sessions_app.heuristic_person import name_the_person
from sessions_app.heuristic_reading import Finding, is_chinese, write_finding

REASON = "About someone the user knows: said with a fact about the user."

_ZH_NAME = r"[\u4e00-\u9fff]{2,3}"
_EN_NAME = rf"(?-i:{rules.UPPER}[a-z\u00e0-\u024f'-]+)"

# Where a sentence names someone in the user's life.
_WHO_ZH = (
    re.compile(rf"(?:^|[，,；;])(?P<name>{_ZH_NAME}|{_EN_NAME})是我的?(?:{rules.ZH_RELATIONS})"),
    re.compile(rf"我的?(?:{rules.ZH_RELATIONS})(?P<name>{_ZH_NAME}?)(?=[是在也还和，,]|老家)"),
    re.compile(rf"认识(?:了)?(?![她他了一二三四五六七八九十两几多好很的])(?P<name>{_ZH_NAME}?)(?=的|[，,。]|$)"),
    re.compile(rf"^我和(?P<name>{_ZH_NAME}?)(?=[住在是一都])"),
)
_WHO_EN = (
    re.compile(
        rf"(?:^|[,;]\s*|\band\s+)(?P<name>{_EN_NAME})\s+(?:is|was)\s+my\s+(?:[\w-]+\s+){{0,2}}?(?:{rules.KIN_EN})\b",
        re.I,
    ),
    re.compile(rf"\bmy\s+(?:[\w-]+\s+){{0,2}}?(?:{rules.KIN_EN})\s*,?\s+(?P<name>{_EN_NAME})\b", re.I),
    re.compile(rf"\bmet\s+(?P<name>{_EN_NAME})\b", re.I),
    re.compile(rf"^(?P<name>{_EN_NAME})\s+and\s+I\b", re.I),
    # A relative said by kinship alone, when the sentence names no one: "My mother still lives in Nyeri."
    re.compile(
        rf"^my\s+(?:(?:old|older|younger|little|big|late)\s+)?(?P<kin>{rules.KIN_EN})\b(?!\s*,?\s+{_EN_NAME})", re.I
    ),
)
# A later clause that opens with them (``{name}``: the person, filled in by ``about_them``).
_CLAUSE_ZH = r"(?:^|[，,；;])\s*(?P<who>她|他|{name})(?:也|还|现在)?(?P<rest>[^，,；;。！!？?]+)"
_CLAUSE_EN = (
    r"(?i:(?:^|[;,]\s*(?:and\s+|but\s+)?|\s+and\s+)(?P<who>she|he|{name})"
    r"(?P<rest>(?:['\u2019]s|\s)(?:(?!\s+and\s)[^;,.!?])+))"
)
# A clause that sets a time in the past for the one after it: "我在杨凌读硕士那几年，", "when I was at uni, ".
_THEN = re.compile(
    r"(?:那几年|那些年|那时候?|当时|那会儿?|的时候|期间|以前|小时候|当年)[，,]?\s*$|"
    r"(?:^|[,;]\s*)(?:back\s+)?(?:when|while|before|back then)\b[^,;]*,?\s*$",
    re.I,
)
_OTHER_PERSON_EN = re.compile(r"\b(?:I|me|my|mine|we|us|our|you|your)\b", re.I)
_BE_HAVE = {"is": "am", "was": "was", "has": "have", "does": "do"}
_PAST = {"got", "went", "became", "left", "took", "began", "won", "found", "bought", "sold", "had", "was", "made"}
_NOT_A_VERB = {"this", "his", "is", "was", "has", "does", "always", "also", "still", "just"}


def _first_person_en(rest: str) -> str | None:
    """ "'s doing her master's in Oran" → "I'm doing my master's in Oran", " lives in Kumasi" → "I live in Kumasi"."""
    if _OTHER_PERSON_EN.search(rest):
        return None
    rest = re.sub(r"\b(?:her|his)\b(?=\s+[\w-])", "my", rest.strip() if rest[:1].isspace() else rest, flags=re.I)
    rest = re.sub(r"\b(?:herself|himself)\b", "myself", rest, flags=re.I)
    if rest.startswith(("'s ", "\u2019s ")):
        return f"I'm {rest[3:]}"
    verb, _, tail = rest.partition(" ")
    lower = verb.lower()
    if lower in _BE_HAVE:
        verb = _BE_HAVE[lower]
    elif lower.endswith("ies") and len(lower) > 4:
        verb = verb[:-3] + "y"
    elif lower.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        verb = verb[:-2]
    elif lower.endswith("s") and not lower.endswith("ss") and lower not in _NOT_A_VERB:
        verb = verb[:-1]
    elif not (lower.endswith("ed") or lower in _PAST or lower in {"still", "also", "just", "always"}):
        return None
    return f"I {verb} {tail}".strip()


def _who(text: str, patterns: tuple[re.Pattern[str], ...], people: Collection[str]) -> list[str]:
    found = [m for p in patterns for m in p.finditer(text)]
    names = [m.group("name") for m in found if "name" in m.re.groupindex and m.group("name")]
    names += [f"The user's {m.group('kin').lower()}" for m in found if "kin" in m.re.groupindex and not names]
    names += [p for p in people if p in text and p not in names]
    return names


def named_in(texts: Collection[str]) -> set[str]:
    """The people ``texts`` (the user's earlier message) name as someone in the user's life."""
    return {n for t in texts if t for n in _who(t, _WHO_ZH if is_chinese(t) else _WHO_EN, ())}


@dataclass(frozen=True)
class Theirs:
    """A fact about ``name`` (for MEMORY.md) and the clause of the sentence that said it ("她是广州人")."""

    finding: Finding
    said: str
    name: str


def about_them(text: str, people: Collection[str] = (), named_before: Collection[str] = ()) -> list[Theirs]:
    """The facts ``text`` states about someone else in a clause after the one that names them (see the module
    docstring); ``people``: names the memory files hold; ``named_before``: the people the sentences before this one
    named (``named_in``), whom a clause opening with 她/他/she/he is about when this sentence names no one."""
    chinese = is_chinese(text)
    names = _who(text, _WHO_ZH if chinese else _WHO_EN, people) or list(named_before)
    if len(set(names)) != 1:  # Nobody, or two people: whose is "she"?
        return []
    name = names[0]
    clause_re = re.compile((_CLAUSE_ZH if chinese else _CLAUSE_EN).replace("{name}", re.escape(name)))
    found: list[Theirs] = []
    for clause in clause_re.finditer(text):
        rest = clause.group("rest")
        if _THEN.search(text[: clause.start()]):  # "我读硕士那几年，她在书店打工": then, not now.
            continue
        if chinese:
            if "我" in rest or rules.RELATION_ZH.match(name + rest):
                continue
            read = user_zh("我" + rest)
            fact = name_the_person(read.fact, name) if read and read.fact and read.fact.startswith("用户") else None
        else:
            first = _first_person_en(rest)
            read = user_en(first, greeted=False) if first else None
            fact = name_the_person(read.fact, name) if read and read.fact and read.decision == "UPDATE_USER" else None
        if read is None or read.decision != "UPDATE_USER" or not fact:
            continue
        finding = write_finding("UPDATE_MEMORY", fact, REASON, 0.6)
        said = text[clause.start("who") : clause.end("rest")].strip()
        if finding is not None and all(t.finding != finding for t in found):
            found.append(Theirs(finding, said, name))
    return found


_BEFORE_CLAUSE = re.compile(r"(?:\s*[,;，；]\s*(?:and\s+|but\s+)?|\s+and\s+)$", re.I)


# Where the user grew up, said of a place a sentence about someone else names: "My mother still lives in Nyeri, on
# the farm where I grew up" (the user's own fact, beside the mother's).
_GREW_UP_THERE = re.compile(
    rf"\b(?:in|at|near)\s+(?P<place>{_EN_NAME}(?:\s+{_EN_NAME}){{0,2}}),?\s+(?:(?:on|in|at)\s+the\s+[\w-]+\s+)?"
    r"where\s+I\s+(?P<verb>grew up|was born|was raised)\b",
    re.I,
)


def where_i_grew_up(text: str) -> Theirs | None:
    """ "…lives in Nyeri, on the farm where I grew up" → "Grew up in Nyeri." (USER.md), for the gate's ``also``."""
    if (match := _GREW_UP_THERE.search(text)) is None:
        return None
    fact = f"{match.group('verb').capitalize()} in {match.group('place')}."
    finding = write_finding("UPDATE_USER", fact, "About the user: where they grew up or were born.", 0.6)
    return Theirs(finding, "", "") if finding is not None else None


def without_theirs(fact: str, theirs: Theirs) -> str:
    """The user's ``fact`` less the clause ``theirs`` came from, which is written for them: "Marek is the user's
    brother-in-law and he works as a paramedic in Brno." → "Marek is the user's brother-in-law.", "佳怡是大理人，用户在
    昆明…认识了她。" → "用户在昆明…认识了佳怡。" ("她" would lose whom it meant)."""
    at = fact.find(theirs.said)
    if at < 0 or not theirs.said:
        return fact
    end = at + len(theirs.said)
    if at == 0:
        rest = fact[end:].lstrip(" ,;，；")
        if "用户" not in rest and not rest.startswith("Is "):
            return fact
        return re.sub(r"[她他](?=[。，]|$)", theirs.name, rest, count=1)
    before = _BEFORE_CLAUSE.search(fact[:at])
    if before is None:
        return fact
    return fact[: before.start()] + fact[end:]
