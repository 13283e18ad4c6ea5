"""Which stored line a new fact supersedes: one attribute, one current value.

A person's home, employer, diet, editor, name, schedule or relationship has one value at a time. When a new
fact states an attribute that a line of the file already states with another value ("Moved to Lisbon." and
"- Lives in Berlin."), or negates it ("No longer vegetarian.", "用户已经不吃素了。"), the guardian replaces that
line rather than appending beside it; the old value stays in the file's history (the write is audited like
any other and can be rolled back).

``attribute(text)`` reads ``(key, value, negated)`` from a fact in English or Chinese (first or third
person: "I live in", "Lives in", "The user lives in", "用户住在"); ``superseded_lines(fact, content)`` returns
the lines of ``content`` that the fact makes stale. Keys are deliberately coarse (``home``, ``employer``,
``diet``, ``tool:editor``, ``my:manager``…): a key that is too fine misses an update, one that is too coarse
would replace a line that still holds ("Speaks French" does not replace "Speaks German", so languages spoken
have no key; the language the agent answers in has one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from guardian_app.write.attribute_words import (
    ATTRIBUTE_PATTERNS,
    DIETS,
    DIETS_ZH,
    GAVE_UP,
    KIND_WORDS,
    TOOL_TO_CATEGORY,
    WEEKDAY_RE,
)
from guardian_app.write.ended_thing import ended_thing_lines
from guardian_app.write.similarity import liked_in_both_languages, preference_attribute, style_attribute
from guardian_app.write.takeback import content_lines, says_all, takeback_lines
from reflection_site import glossary, memory_files
from reflection_site.text import chinese_name, content_words, fold

_I = re.IGNORECASE
CJK_EVENT = re.compile(r"[\u4e00-\u9fff]+")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


_NEGATION_EN = re.compile(
    r"\bno longer\b|(?:\bnot\b|n't\b)[^.]{0,40}\b(?:anymore|any more|any longer)\b|\b(?:stopped|quit|gave up|given up|left|dropped|"
    r"ditched|cancell?ed|unsubscribed from|handed in (?:their|his|her|my) notice|laid off|let go|made redundant|fired from|sacked|(?:done|finished) at|"
    r"last day at)\b|\bnot (?:a |an )?(?=" + DIETS + r")|^(?:used to|i used to)\b",  # "Used to play volleyball."
    _I,
)
# A time in the past, not an ending: "… Mum bought them before they left China".
_PAST_CLAUSE = re.compile(
    r"\b(?:before|after|when|since|until|once)\s+(?:the user|they|he|she|i|we)\s+(?:left|quit)\b[^,.;]*", _I
)
_NEGATION_ZH = re.compile(r"不再|已经不|已不|不.{0,6}了|戒了|辞职|离职|离开了")
_SUBJECT = re.compile(r"^(?:the user(?:'s)?|user(?:'s)?|i|my|i'm|i am|he|she|they|their|his|her|用户的?|我的?)\s*", _I)
_TAIL = re.compile(r"[\s.。!！,，;；]+$")
_POSSESSIVE = re.compile(
    r"^(?:the user's|user's|my|their|his|her|用户的|我的|用户(?=[爸妈父母姐哥妹弟老婆公妻丈女男儿孩朋岳]))", _I
)
_OWN_PLACE = frozenset({"家", "家里", "home", "new home", "address", "new address", "住址", "地址"})
# "(previously Berlin)", "(since 2024)", "now", "these days": not part of the value.
_VALUE_NOISE = re.compile(
    r"\s*\((?:previously|formerly|before|since|was|以前|之前)[^)]*\)|\b(?:now|nowadays|these days|currently|"
    r"instead|anymore|any more|any longer|again|full-time|for good|recently)\b|现在|目前|了$",
    _I,
)


@dataclass(frozen=True)
class Attribute:
    key: str
    value: str
    negated: bool = False


def _clean(value: str) -> str:
    value = _VALUE_NOISE.sub(" ", value)
    value = re.split(r"[,;，；。]|\b(?:and|but|because|since|where|which|with)\b|(?:因为|但是|而且)", value)[0]
    value = re.sub(r"^(?:the|a|an)\s+", "", value.strip(), flags=_I)
    return _TAIL.sub("", " ".join(value.split()))


def _line_text(line: str) -> str:
    return _BULLET_RE.sub("", line).strip()


_K_NORMAL = {
    "replies": "answers",
    "responses": "answers",
    "gets up": "wake",
    "get up": "wake",
    "wake up": "wake",
    "wakes up": "wake",
    "起床": "wake",
    "goes to bed": "bed",
    "goes to sleep": "bed",
    "睡觉": "bed",
    "works out": "workout",
    "work out": "workout",
    "exercise": "workout",
    "exercises": "workout",
    "健身": "workout",
    "跑步": "workout",
}
_POSSESSIONS_NOT_KEYED = frozenset({"hobby", "hobbies", "friend", "friends"})


# A fact about a named person ("Marta lives in Madrid.", "Marta's manager is Tom.", "Marta住在马德里。"): the
# name qualifies the key, so one person's new home never replaces another's. A first word that itself looks
# like a verb ("Keeps", "Marcus") is not taken for a name.
_U = "[A-Z\u00c0-\u00de\u0100-\u017f]"  # A capital, accented too ("Réka", "Šimon").
_L = "[a-z\u00df-\u00ff\u0100-\u017f-]"
_NAMED = re.compile(
    r"^(?!(?:Now|Also|Still|Recently|Usually|Always|Never|No|Often|Just|Then|Today|Currently|Finally|Only|Rarely|"
    r"Sometimes|Nowadays|Mostly|Generally|Really|Actually|Once|Every|Each|Both|All|Most|Some|This|That|These|"
    r"Those|There|Here|When|While|Before|After|Since|Because|If|The|A|An|Her|His|Their|Our|Your|My|Its|"
    # Verbs in the past that end in neither s nor d ("Got hired by Monzo.", "Took a new job at Wise.").
    r"Got|Took|Left|Quit|Went|Sold|Bought|Became|Began|Made|Kept|Lost|Built|Ran|Met|Spent|Gave|Grew|Came|"
    r"Brought|Drove|Flew|Fell|Won|Wrote|Taught|Sat|Set|Put|Sent|Lent|Felt|Slept|Swam|Stuck|Struck|Split)\b)"
    rf"(?:(?P<n>{_U}{_L}+(?<![sd])(?: {_U}{_L}+)?)(?:'s\s|\s+(?:(?:recently|now|just|also|still|currently|finally|usually|has|have)\s+)?"
    r"(?=[a-z]{2,}(?:s|ed)\b|is\b|has\b|was\b|no longer\b|now\b|"
    r"(?:sold|left|quit|got|took|bought|became|went|gave|lost|kept|won|made|built|ran|began)\b)|"
    r"(?=[\u4e00-\u9fff]))|"
    # A name that ends in s or d ("Ines", "David") only before a verb: "Likes dogs" is a verb and its object.
    r"(?!(?:Has|Is|Was|Does|Did|Had|Said|Needs|Wants|Plays|Reads|Likes|Loves|Lives|Works|Uses|Owns|Speaks|Prefers|"
    r"Runs|Rides|Drives|Attends|Spends|Keeps|Takes|Makes|Goes|Teaches|Studies|Leads|Builds|Holds|Finds|Sends)\b)"
    rf"(?P<n2>{_U}{_L}+(?<!ed)[sd])(?:'s\s|\s+(?=(?:is|has|had|was|does|did|no longer|lives|works|moved|relocated|left|"
    r"joined|started|quit|runs|owns|teaches|studies|speaks|prefers|likes|loves|drives|rides)\b)))"
)


def _favourite(k: str) -> str:
    """ "favorite programming language" and "favourite language" are one key, "favorite language" (the last
    word); after 最喜欢的, "颜色" is "favorite color", and a noun the dictionary gives no one word for is its last two
    characters ("编程语言" and "语言": "favorite 语言")."""
    if k.startswith(("favorite ", "favourite ")):
        return "favorite " + k.split()[-1]
    if k.startswith("最喜欢的"):  # In English where the dictionary gives one word: 颜色 is "color".
        for noun in (k[4:], k[-2:]):  # "编程语言" is not in the dictionary; its head "语言" is.
            first = next(iter(glossary.senses(noun)), frozenset())
            if len(first) == 1:
                return "favorite " + next(iter(first))
        return "favorite " + k[-2:]
    return k


def _owned_by(text: str, before: str, key: str) -> str:
    """ "The user's friend moved to Rome." states the friend's home, not the user's: a possessed noun before the
    verb qualifies the key (``friend:home``), unless it is the user's own place ("用户的家住杭州") or stands in an
    earlier clause."""
    owner = " ".join(before.split()).strip(" ,")
    # A possessive opens the first clause only: "用户的公司改规定了，现在只有周三在家办公" keeps the user's own days.
    if not owner or not _POSSESSIVE.match(text) or owner.casefold() in _OWN_PLACE or re.search(r"[，,;；。]", owner):
        return key
    return f"{owner.casefold()}:{key}"


@lru_cache(maxsize=20_000)  # A file's lines are read again on every write to it.
def attribute(fact: str) -> Attribute | None:
    """The attribute a fact states, or None for a fact that has no single current value."""
    named = _NAMED.match(_line_text(fact))
    found = _attribute("my " + _line_text(fact)[named.end() :] if named and named.group(0).endswith("'s ") else fact)
    if found is None or named is None or found.key.startswith("who-is:"):
        return found
    name = (named.group("n") or named.group("n2")).casefold()
    if found.value == name:  # "Tom is the user's boss.": the name is the value.
        return found
    return Attribute(f"{name}:{found.key}", found.value, found.negated)


def _unnamed_place(key: str, groups: dict[str, str | None], raw: str, fact: str) -> bool:
    """Whether "a … resident" names no place ("a long-time resident"): a place is a name, capitalised in the fact."""
    place = re.compile(rf"(?-i:[A-Z])(?i:{re.escape(raw[1:])})")
    return key == "home" and bool(groups.get("v3")) and raw.isascii() and not place.search(fact)


# A person is no value: "晚上在用户上班的酒店当门童" is about where someone else works, not a workplace called 用户.
_PERSONS = frozenset({"用户", "我", "我们", "他", "她", "他们", "她们", "the user", "them", "him", "her"})


def _unnamed_employer(key: str, match: re.Match[str], raw: str, fact: str) -> bool:
    """Whether "quit …", "left …" or "does … at …" names no employer ("Has quit coffee.", "does kickboxing at a gym"):
    without "job" or "at", an employer is a name, capitalised in the fact ("Left Wise and joined Revolut.", "Does
    payroll at Lehtmets-Laane")."""
    said = match.group(0)
    if key != "employer" or not (
        re.match(r"(?:is |am )?(?:doing|does)\s", said)
        or re.match(r"(?:quit|left)\s+(?!(?:\w+\s+)?(?:job|position|role|work|company|firm)\b|at\b)", said)
    ):
        return False
    return not re.search(rf"(?-i:[A-Z0-9])(?i:{re.escape(raw[1:])})", fact)


def _attribute(fact: str) -> Attribute | None:
    # "The user's phone's a Huawei", "my car's the old Lada": the "'s" of "is" after a thing someone has.
    # A time in the past ("… before they left China") is no ending and no value: it is left out.
    text = re.sub(
        r"(\b(?:my|their|his|her|\w+['\u2019]s)\s+\w+)['\u2019]s (?=(?:a|an|the|still|now)\b)",
        r"\1 is ",
        _PAST_CLAUSE.sub("", _line_text(fold(fact))),
    )
    if style := style_attribute(text):
        return Attribute(style[0], style[1])
    if liked := preference_attribute(text):
        return Attribute(*liked)
    stripped = _SUBJECT.sub("", text, count=1)
    negated = bool(_NEGATION_EN.search(text) or _NEGATION_ZH.search(text))
    for key, pattern in ATTRIBUTE_PATTERNS:
        for candidate in (stripped, text):
            match = pattern.search(candidate)
            if not match:
                continue
            groups = match.groupdict()
            groups["k"] = groups.get("k") or groups.get("k2") or groups.get("k3")
            raw = next((groups[g] for g in ("v", "v2", "v3", "v4", "v5", "v6", "v7") if groups.get(g)), "")
            value = " ".join(WEEKDAY_RE.findall(raw)) if key.startswith("weekly:") else _clean(raw)
            value = DIETS_ZH.get(value, value) if key == "diet" else value  # 纯素 is vegan in either language.
            if (
                not value
                or value in _PERSONS
                or _unnamed_place(key, groups, raw, fact)
                or _unnamed_employer(key, match, raw, fact)
            ):
                continue  # "a long-time resident" names no place, "quit coffee" no employer: each is a name.
            if "{cat}" in key:
                key_name = key.format(cat=TOOL_TO_CATEGORY.get(value, value))
            elif key == "when:{ev}" and CJK_EVENT.fullmatch(groups["ev"]):
                key_name = f"when:{groups['ev']}"
            elif key == "when:{ev}":
                words = set(content_words(re.sub(r"^(?:the user's|user's|their|my|the)\s+", "", groups["ev"])))
                key_name = "when:" + " ".join(sorted(words))
            elif key == "who-is:{k}":
                org = _clean(groups.get("org") or "")
                key_name = f"who-is:{' '.join(groups['k'].split())}" + (f"@{org}" if org else "")
            elif "{k}" in key:
                k = _favourite(" ".join((groups.get("k") or "").split()))
                if k in _POSSESSIONS_NOT_KEYED:
                    continue  # Open-ended ("my hobby is…"): no single value. Plurals ("my kids are") never match.
                key_name = key.format(k=_K_NORMAL.get(k, k))
                if key == "my:{k}" and k in KIND_WORDS:  # "The user's phone is a Pixel 7" and "Uses a Fairphone 5".
                    key_name = f"tool:{KIND_WORDS[k]}"
            else:
                key_name = key
            if key.startswith("weekly:") and re.search(r"改成|改到|换成|换到", text):
                negated = False  # The old days said as "不去了" beside the new ones: a new value, not a negation.
            if candidate is stripped and not key.startswith("my:"):
                key_name = _owned_by(text, stripped[: match.start()], key_name)
            if key == "commute" and re.search(r"\b(?:now|instead|these days)\b", candidate[match.start() :], re.I):
                negated = False  # "Not driving to work anymore, hops on the S-Bahn now": the new way is the value.
            if key == "diet" and re.search(GAVE_UP, candidate, re.I):
                negated = True
            if key == "home" and (
                re.match(r"(?:moved|moving|relocated|relocating)\b", match.group(0), re.I)
                or re.search(r"\bleft\s+(?!" + re.escape(raw[:20]) + ")", candidate, re.I)
            ):
                negated = (
                    False  # "Has left Trofaiach, moved to / is renting in Schärding": the new place is not negated.
                )
            return Attribute(key_name, value, negated)
    return None


def superseded_lines(fact: str, content: str) -> list[str]:
    """The lines of ``content`` (exact text, bullet included) that ``fact`` makes stale: lines stating the same
    attribute with another value, or, for a negation ("no longer", "不再"), the same attribute and value."""
    taken_back = takeback_lines(fact, content)
    ended = ended_thing_lines(fact, content_lines(content))
    # A workplace left ("Has left the hotel"): the line that says the person works there, not every line that names
    # it ("Mandarin with the Chinese tourists at the hotel").
    at_work = [line for line in ended if (old := attribute(line)) is not None and old.key.endswith("employer")]
    taken_back += [line for line in at_work or ended if line not in taken_back]
    stale = _keyed_stale_lines(fact, content)
    return stale + [line for line in taken_back if line not in stale]


def _keyed_stale_lines(fact: str, content: str) -> list[str]:
    new = attribute(fact)
    if new is None:
        return negated_habit_lines(fact, content)
    stale: list[str] = []
    lines = content_lines(content)
    if (name := chinese_name(fact, lines)) is not None:  # "思琪…": only 思琪's lines state 思琪's attributes.
        lines = [line for line in lines if line.lstrip("-* ").startswith(name)]
    keyed = [(line, attribute(line)) for line in lines]
    same_role = [line for line, old in keyed if old and old.key.split("@")[0] == new.key]
    for line, old in keyed:
        # "Jeremy is now the lead." names no team: it replaces the one line that says who the lead is.
        unqualified = new.key.startswith("who-is:") and "@" not in new.key and len(same_role) == 1
        if old is None or old.negated or not (old.key == new.key or (unqualified and line in same_role)):
            continue
        same_value = old.value in new.value or new.value in old.value or _translates(old.value, new.value)
        if new.negated:
            if same_value or new.key.rsplit(":", 1)[-1] in {"diet", "employer"}:  # Also someone's ("jiahui:employer").
                stale.append(line)
        elif not same_value:
            stale.append(line)
    return stale + _old_addresses(new, fact, keyed)


def _old_addresses(new: Attribute, fact: str, keyed: list[tuple[str, Attribute | None]]) -> list[str]:
    """A move to another place takes back the street address of the old home ("Moved to Valtice." and "The user's
    new address is ulica Pszenna 38, Gdynia."), unless the address is in the new place or the fact gives one; a
    home said to be no longer ("Doesn't live in Gdynia anymore") takes back an address in that place."""
    if new.key.rsplit(":", 1)[-1] != "home":
        return []
    owner = new.key[: -len("home")]
    addresses = {f"{owner}my:address", f"{owner}my:地址", f"{owner}my:住址"}

    def old_address(line: str) -> bool:
        in_place = new.value.casefold() in line.casefold()
        return in_place if new.negated else not in_place

    return [
        line
        for line, old in keyed
        if old is not None and old.key in addresses and old.value not in fact.casefold() and old_address(line)
    ]


def _translates(a: str, b: str) -> bool:
    """Whether one value is the other in the other language ("柏林" and "berlin"; ``reflection_site.glossary``)."""
    chinese, latin = (a, b) if CJK_EVENT.search(a) else (b, a)
    return bool(CJK_EVENT.fullmatch(chinese)) and latin.isascii() and glossary.english_at(chinese, latin) == 0


_NEGATION_WORDS = frozenset(
    {"no", "longer", "not", "anymore", "more", "any", "doesn't", "don't", "does", "do", "used", "use"}
)


_SAYS_NOT = re.compile(
    r"\b(?:not|never)\b|n't\b|不|没", re.I
)  # A line that itself says not ("Doesn't ride it on weekdays").


def negated_habit_lines(fact: str, content: str) -> list[str]:
    """A negation without an attribute ("Doesn't drink coffee anymore.") takes back the lines that say all it
    names ("Drinks two coffees every morning.", "用户每天早上喝咖啡。"): at least two content words, every one of them
    in the line (in a Chinese line, a word the dictionary gives for it, ``reflection_site.glossary``)."""
    if not (_NEGATION_EN.search(fact) or _NEGATION_ZH.search(fact)) or attribute(fact) is not None:
        return []
    # The clause that holds the negation: "Is not doing the morning swims any more, it's a spin class now."
    negated = next((c for c in re.split(r"[,;，；]", fact) if _NEGATION_EN.search(c) or _NEGATION_ZH.search(c)), fact)
    named = {w for w in content_words(negated) if w not in _NEGATION_WORDS}
    if len(named) < 2:
        return []

    bridged = not CJK_EVENT.search(fact)  # An English fact reads a Chinese line by the dictionary.
    return [
        line
        for line in (content or "").splitlines()
        if line.strip()
        and not memory_files.is_heading(line)
        and says_all(named, line, bridged=bridged)
        and not (_NEGATION_EN.search(line) or _NEGATION_ZH.search(line) or _SAYS_NOT.search(line))
    ]


def _liked_most(found: Attribute, text: str) -> bool:  # "The user's favorite color is blue.", "用户最喜欢蓝色".
    return found.key.startswith("my:favo") or (found.key.startswith("prefers:") and "最" in text)


def restated_line(fact: str, content: str) -> str | None:
    """The line of ``content`` that already states ``fact``'s attribute with the same value ("Likes concise answers."
    after "Prefers concise answers.", "用户住在柏林。" after "Lives in Berlin."; a favourite, or what is liked most), or None."""
    new = attribute(fact)
    liked = next((line for line in (content or "").splitlines() if liked_in_both_languages(fact, line)), None)
    if liked is not None or new is None or new.negated:
        return liked
    for line in (content or "").splitlines():
        old = None if not line.strip() or memory_files.is_heading(line) else attribute(line)
        if old is None or old.negated:
            continue
        same = old.key == new.key or (_liked_most(old, line) and _liked_most(new, fact))
        if same and (old.value == new.value or _translates(old.value, new.value)):
            return line
    return None
