"""First and second person into the third, as a fact about the user or the agent is written: "I like your
style" → "the user likes the agent's style", "我喜欢你的风格" → "用户喜欢助手的风格". Code spans and URLs are
never rewritten (``heuristic_reading.protect``). The word lists are in ``heuristic_rules``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reflection_site.text import is_cjk
from sessions_app import heuristic_rules as rules
from sessions_app.heuristic_reading import protect, restore


# --- English ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Person:
    subject: str
    object: str
    possessive: str
    reflexive: str
    # Once the sentence has named its subject, "my coffee" is "their coffee", not "the user's coffee".
    pronoun_object: str
    pronoun_possessive: str


USER = Person("the user", "the user", "the user's", "themselves", "them", "their")
AGENT = Person("the agent", "the agent", "the agent's", "itself", "it", "its")
# Inside a sentence whose subject is already the agent: "keep your answers short" → "its answers".
AGENT_IT = Person("it", "it", "its", "itself", "it", "its")
TEAM = Person("the team", "the team", "the team's", "themselves", "them", "their")


def expand(text: str) -> str:
    """Contractions spelled out ("I'm" → "I am") and a lone "i" made "I"."""
    for pattern, replacement in rules.CONTRACTIONS:
        text = re.sub(pattern, replacement, text, flags=re.I)
    return re.sub(r"\bi\b", "I", text)


def _third_person_verb(word: str) -> str:
    lower = word.lower()
    if lower in rules.IRREGULAR:
        return rules.IRREGULAR[lower]
    if lower in rules.MODALS or lower in rules.PAST or lower.endswith(("ed", "n't")) or not lower.isalpha():
        return word
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return f"{word}es"
    if re.search(r"[^aeiou]y$", lower):
        return f"{word[:-1]}ies"
    return f"{word}s"


def _pronoun(person: Person, kind: str, named: set[int]) -> str:
    """The noun ("the user's") the first time, the pronoun ("their") once the subject is named."""
    if kind == "reflexive":
        return person.reflexive
    if id(person) in named:
        return person.pronoun_object if kind == "object" else person.pronoun_possessive
    return person.object if kind == "object" else person.possessive


# What "our" owns in a person's life rather than a team's: "our daughter", "our two cats", "our new flat".
HOUSEHOLD = frozenset(
    "daughter daughters son sons kid kids child children baby babies twins girl boy dog dogs cat cats pet pets puppy kitten "
    "house home flat apartment garden family parents wedding anniversary marriage car neighbours neighbors address "
    "landlord landlady neighbourhood neighborhood".split()
)


_PET = re.compile(rf"^(?:{rules.PETS})$", re.I)


def is_household(word: str) -> bool:
    """ "daughter", "flat", "parrot": a word of the household, so "our" before it is the user's, not a team's."""
    return word.lower() in HOUSEHOLD or bool(_PET.match(word))


def _owns_household(tokens: list[str], index: int) -> bool:
    """Whether one of the three words after ``tokens[index]`` ("our two cats", "our new flat") is of the household."""
    following = [re.sub(r"[^\w'-]", "", token).lower() for token in tokens[index + 1 :] if token.strip()]
    return any(is_household(word) for word in following[:3])


def rewrite(
    text: str,
    *,
    first: Person | None = USER,
    second: Person | None = AGENT,
    plural: Person | None = TEAM,
) -> str:
    """Put first and second person into the third: "I like your style" → "the user likes the agent's style"."""
    protected, spans = protect(expand(text))
    out: list[str] = []
    named: set[int] = set()  # ids of the persons already named as a subject in this text
    conjugate_next = False
    previous: str | None = None
    previous_ended_clause = True
    tokens = re.split(r"(\s+)", protected)
    for index, token in enumerate(tokens):
        if not token or token.isspace():
            out.append(token)
            continue
        lead, core, trail = re.match(r"^([^\w']*)([\w'-]*)(.*)$", token).groups()
        lower = core.lower()
        replacement: str | None = None
        if conjugate_next and core:
            if lower not in rules.ADVERBS:
                replacement = _third_person_verb(core)
                conjugate_next = False
        elif first and core == "I":
            replacement, conjugate_next = first.subject, True
            named.add(id(first))
        elif first and lower in ("me", "my", "mine", "myself"):
            replacement = _pronoun(first, rules.FIRST_PERSON_KIND[lower], named)
        elif second and lower == "you":
            is_subject = previous_ended_clause or previous in rules.SUBJECT_LEADERS
            replacement = second.subject if is_subject else _pronoun(second, "object", named)
            conjugate_next = is_subject
            if is_subject:
                named.add(id(second))
        elif second and lower in ("your", "yours", "yourself"):
            replacement = second.reflexive if lower == "yourself" else _pronoun(second, "possessive", named)
        elif plural and lower == "we":
            replacement, conjugate_next = plural.subject, True
            named.add(id(plural))
        elif first and lower == "our" and _owns_household(tokens, index):
            # "our daughter", "our flat": the user's household, not the team's.
            replacement = _pronoun(first, "possessive", named)
        elif plural and core in ("us", "our", "ours", "ourselves", "Our"):
            kind = {"us": "object", "ourselves": "reflexive"}.get(lower, "possessive")
            replacement = _pronoun(plural, kind, named)
        out.append(f"{lead}{replacement if replacement is not None else core}{trail}")
        if core:
            previous = lower
        previous_ended_clause = bool(re.search(r"[,;:(]$", trail)) or (not core and bool(lead))
    return restore("".join(out), spans)


# --- Chinese ----------------------------------------------------------------------------------------------------------
def rewrite_zh(text: str, *, first: str = "用户", second: str = "助手") -> str:
    """我 → ``first``, 你 (and 您) → ``second``; 我们 and 你们 stay; "我女儿" is "我的女儿" first."""
    protected, spans = protect(text)
    # Not after a verb or preposition: in "别叫我老板" the 我 is an object, "boss" is what to call them.
    protected = re.sub(rf"(?<![叫称喊让给帮对和跟把被向])我(?=(?:{rules.ZH_KIN}))", "我的", protected)
    protected = protected.replace("我们", "\x01").replace("你们", "\x02").replace("您", "你")
    protected = protected.replace("我", first).replace("你", second)
    protected = protected.replace("\x01", "我们").replace("\x02", "你们")
    return restore(protected, spans)


# How a fact says "the user" as its subject: "The user's wife is Clara.", "用户住在马德里。".
EN_SUBJECT = re.compile(r"^(?:the user|user)(?P<poss>'s)?\b\s*", re.I)
ZH_SUBJECT = re.compile(r"^用户")


def name_the_person(fact: str, name: str) -> str:
    """``fact`` as a statement about ``name``: "Lives in Madrid." → "Marta lives in Madrid.",
    "The user's wife is Clara." → "Marta's wife is Clara.", "用户住在马德里。" → "Marta住在马德里。"."""
    text = fact.strip()
    if text.startswith(name):
        return text
    if ZH_SUBJECT.match(text):
        return ZH_SUBJECT.sub(name, text, count=1)
    match = EN_SUBJECT.match(text)
    if match:
        rest = text[match.end() :]
        return f"{name}'s {rest}" if match.group("poss") else f"{name} {rest}"
    if is_cjk(text):
        return f"{name}{text}"
    if _OWN_SUBJECT.match(text):
        # The fact has a subject of its own ("The wine academy has certified …", "Fortnite's gone"): what they said.
        opener = text.split()[0]
        keep = opener not in _SENTENCE_OPENERS
        return f"{name} says {text if keep else text[:1].lower() + text[1:]}"
    return f"{name} {text[:1].lower()}{text[1:]}"


_SENTENCE_OPENERS = frozenset("The A An This That These Those It Its There".split())
# A subject of its own: an article or a demonstrative, or a name with "'s" ("Fortnite's gone").
_OWN_SUBJECT = re.compile(r"^(?:(?:The|A|An|This|That|These|Those|It|Its|There)\s|[A-Z][\w-]*['\u2019](?:s|re)\s)")
