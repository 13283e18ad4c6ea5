"""The offline gate's rules for what the user tells about someone they know: "My friend Lara moved back to the
suburbs", "我朋友小林搬到了厦门" (``others_en``, ``others_zh``, for MEMORY.md), and a pronoun that stands for the
person named just before ("My colleague Ana called. She moved to Riga." → "The user's colleague Ana moved to
Riga."; ``resolve_pronoun``). The fact keeps the relation and the name, so the guardian keys it by that person
("friend lara:home") and the person's next move replaces it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sessions_app import heuristic_rules as rules
from sessions_app.heuristic_person import rewrite, rewrite_zh
from sessions_app.heuristic_reading import Finding, finish_en, finish_zh, write_finding

_NAME = rf"(?-i:{rules.UPPER}[\w-]+)"  # A name, with the capitals of other languages ("Üsame", "Štěpán").
_RELATIONS_EN = (
    r"friend|neighbou?r|colleague|co-?worker|roommate|flatmate|housemate|cousin|classmate|teammate|sister|brother|"
    r"aunt|uncle|niece|nephew|mentor|ex"
)
_CHANGES_EN = (
    rf"(?:{rules.LIFE_CHANGE_VERBS})|retired\b|got (?:married|engaged|divorced)\b|lives? (?:in|at|near)\b|"
    r"is (?:getting married|engaged|pregnant|expecting|having a baby|retiring)\b|turns \d+\b|"
    r"(?:now )?works? (?:at|for)\b|left\s+(?-i:[A-Z])|quit\s+(?-i:[A-Z])|"
    # A business, a baby, a degree, a home, a return to an old line of work.
    r"(?:opened|launched|set up|started)\s+(?:a|an|her|his|their)\s+(?:own\s+)?(?:[\w-]+\s+){0,2}?(?:"
    + rules.BUSINESSES
    + r")\b|"
    r"had (?:a|her|his|their) (?:first |second |third )?(?:baby|child|son|daughter|twins)\b|is (?:pregnant|expecting)\b|"
    r"(?:went|gone|is going|has gone) back to\s+\w|got (?:a new job|promoted|a job)\b|graduated\b|"
    r"bought (?:a|an) (?:[\w-]+\s+)?(?:house|flat|home|apartment|farm|cottage)\b|"
    # Who they are with: "Ruairí's been going out with Tahnee", "Lena is dating Omar".
    r"(?:(?:has|had) been |is |was |been )?(?:going out with|dating|engaged to|married to|in a relationship with)\s+"
    r"(?-i:[A-Z\u00c0-\u024f\u4e00-\u9fff])|"
    # A permit, a visa, a licence or a degree: "俊杰 got his Stamp 4 through", "Ana got her residency".
    r"got (?:his|her|their) (?:[\w-]+ ){0,2}?(?:visa|permit|stamp|residency|residence|licence|license|citizenship|"
    r"passport|green card|degree|phd|masters?)\b|"
    # A test passed: "浩然 passed his citizenship test on Tuesday", "Adwoa passed the licensing exam".
    r"passed (?:his|her|their|the|my) (?:[\w-]+ ){0,2}?(?:test|exams?|boards|viva|defen[cs]e|bar|finals)\b|"
    # A stay planned: "…'s mum is coming over from Harbin in June to stay with us", "is flying in to visit in May".
    r"(?:is|are) (?:coming|flying|moving) (?:over |out |down |up |in )?(?:from (?-i:[A-Z])[\w-]+ )?(?:(?:in|this|next) "
    rf"(?:{rules._MONTHS}|{rules._SEASONS}|week|month|year) )?to (?:stay|visit|live)\b|"
    r"(?:is|are) (?:coming|flying) (?:over |out |down |up |in )?(?:from (?-i:[A-Z])[\w-]+ )?in "
    rf"(?:{rules._MONTHS})\b"
)
_WHEN = r"(?:(?:actually|just|recently|finally|now|also|has|have|had|again)\s+)*"
OTHER_EN = re.compile(
    rf"^my\s+(?:(?:old|best|close|good|oldest|younger|older|little|big)\s+)?(?P<rel>{_RELATIONS_EN})\s+"
    rf"(?P<name>{_NAME})\s*,?\s+{_WHEN}(?P<rest>(?:{_CHANGES_EN}).*)$",
    re.I,
)
# News of someone, passed on: "Heard from Jonas: he finally left Wise and joined Monzo." → "Jonas finally left Wise
# and joined Monzo." (no relation is named, so the fact opens with the name and the guardian keys it by them).
_NEWS_EN = re.compile(
    rf"^(?:(?:just|finally)\s+)?(?:heard|news|word|a text|a message|an update)\s+from\s+(?P<name>{_NAME})\s*"
    rf"[:,\u2014\u2013-]\s*(?:he|she|they)\s+(?P<rest>{_WHEN}(?:{_CHANGES_EN}).*)$",
    re.I,
)
# The same, told by them: "My friend Arja told me she has just opened a bakery in Veltrusy." → "The user's friend
# Arja has just opened a bakery in Veltrusy."; "Jonas said he's moving to Oslo." → "Jonas is moving to Oslo.".
_TOLD_EN = re.compile(
    rf"^(?:my\s+(?:(?:old|best|close|good)\s+)?(?P<rel>{_RELATIONS_EN})\s+)?(?P<name>{_NAME})\s+"
    r"(?:told me|tells me|said|says|mentioned|wrote|texted(?: me)?|messaged(?: me)?|let me know|called to say)\s+"
    rf"(?:that\s+)?(?:she|he|they)(?:\s+|(?=['\u2019]s\s))(?P<rest>(?:is\s+|are\s+|['\u2019]s\s+)?{_WHEN}"
    rf"(?:{_CHANGES_EN}|moving\s+to\b).*)$",
    re.I,
)
# News of a named person's place or business: "Arja's bakery closed last month, she's gone back to nursing.", "Ravi
# sold the barbershop, he drives a taxi now."
_THEIR_NEWS_EN = re.compile(
    rf"^(?P<name>{_NAME})(?:'s\s+(?:new\s+|old\s+)?(?P<thing>{rules.BUSINESSES}|house|flat|farm)\s+"
    r"(?:(?:has|had|just|finally)\s+)*(?:closed|closed down|shut down|went bust|went under|was sold|burned down|"
    rf"moved to|relocated to|opened)\b|\s+(?:(?:has|had|just|finally)\s+)*(?:sold|closed|shut down|gave up)\s+"
    rf"(?:the|his|her|their)\s+(?:{rules.BUSINESSES})\b)",
    re.I,
)
# Something bought for a named person: "Bought Esme a second-hand violin yesterday." → "The user bought Esme a
# second-hand violin." (MEMORY.md: it is Esme's now).
_GIFT_EN = re.compile(
    rf"^(?:I\s+)?(?:(?:just|finally)\s+)?(?:bought|purchased)\s+(?P<name>{_NAME})\s+(?P<thing>(?:a|an)\s+[^.;,]{{2,60}}?)"
    r"(?:\s+(?:yesterday|today|last \w+|this \w+|for (?:his|her|their) \w+))?\s*[.!]*$",
    re.I,
)
# A named person's own lasting fact, told by the user: "Dana lives in Porto.", "美玲 is allergic to shellfish, so no
# shrimp …" (MEMORY.md; the fact opens with the name, so the guardian keys it by them). A word that opens sentences
# is not a name.
_NAMED_FACT_EN = re.compile(
    rf"^(?!(?:{rules.NOT_A_NAME_EN})\b)"
    # "浩然's mum is coming over …": someone of theirs.
    rf"(?P<name>(?:{_NAME}|[\u4e00-\u9fff]{{2,3}})(?:['\u2019]s (?:{rules.KIN_EN}))?)\s+(?:(?:still|now|also)\s+)?(?!works? (?:for|with) (?:me|us|you)\b)"
    rf"(?P<rest>(?:{_CHANGES_EN}|is allergic to\b|is (?:a |an )?(?:{rules.DIETS})(?=\s*(?:[.,;!]|$))|"
    r"was born in\b|grew up in\b|"
    # Who they were to the user, and where: "Kadri was my flatmate back in Tartu".
    r"was (?:my|our) (?:old |former |first )?[\w-]+ (?:back |when we were |while we were )?(?:in|at) (?-i:[A-Z])|speaks\s+(?-i:[A-Z])|(?:can't|cannot|can not) stand\b|hates\b|dislikes\b|"
    r"(?:doesn't|does not|won't|never) (?:eat|eats|drink|drinks)\b|is afraid of\b).*)$",
    re.I,
)
# Where the told fact ends and the user's own thoughts begin: "…moved back to the suburbs, so I was thinking …".
_TELLING_ENDS = re.compile(r",?\s+(?:so|and so|which|because|but|and I|and we)\b.*$|\s*[,;:\u2014\u2013-]\s+.*$", re.I)
# A later clause that still tells about them, kept: ", she's a paramedic over there", ", back home in Iloilo".
_TOLD_TOO = re.compile(
    r"^,\s*(?:(?:she|he|they)(?:'s|\u2019s| is| are| works| lives)\s+(?!(?:asked|told|going to|gonna)\b)[^,;.!?]*|"
    r"back (?:home )?in (?-i:[A-Z\u00c0-\u024f])[^,;.!?]*|in (?-i:[A-Z\u00c0-\u024f])[^,;.!?]*)",
    re.I,
)


def _told(rest: str) -> str:
    """``rest`` up to where the telling ends (``_TELLING_ENDS``), with the clauses after it that still tell about the
    person ("…for a year now, she's a paramedic over there"): a second fact in the same sentence is not lost."""
    kept = _TELLING_ENDS.sub("", rest)
    tail = rest[len(kept) :]
    while (more := _TOLD_TOO.match(tail)) and not re.search(r"\b(?:I|me|my)\b", more.group(0)):
        kept, tail = kept + more.group(0), tail[more.end() :]
    return kept


_PRONOUN_EN = re.compile(rf"^(?P<pron>she|he|they)\s+(?P<rest>{_WHEN}(?:{_CHANGES_EN}).*)$", re.I)
_MENTION_EN = re.compile(
    rf"\bmy\s+(?:(?:old|best|close|good|oldest|younger|older|little|big)\s+)?(?P<rel>{_RELATIONS_EN})\s+"
    rf"(?P<name>{_NAME})",
    re.I,
)

_RELATIONS_ZH = r"朋友|好朋友|同事|邻居|室友|舍友|同学|表姐|表妹|表哥|表弟|堂姐|堂妹|堂哥|堂弟|姐姐|妹妹|哥哥|弟弟"
_CHANGES_ZH = r"搬到|搬去|搬回|搬家到|移居|跳槽到|跳槽去|入职|加入|退休|结婚|离职|辞职|(?:也|开始)?吃素了|不再"
_WHEN_ZH = rf"(?:(?:{rules.ZH_TIME_WORDS}|前不久|又)[，,]?)*"
OTHER_ZH = re.compile(
    rf"^我的?(?P<rel>{_RELATIONS_ZH})(?P<name>[\u4e00-\u9fff]{{1,3}}?)(?P<rest>{_WHEN_ZH}(?:{_CHANGES_ZH}).*)$"
)
_PRONOUN_ZH = re.compile(rf"^(?:她|他)(?P<rest>{_WHEN_ZH}(?:{_CHANGES_ZH}).*)$")
_MENTION_ZH = re.compile(
    rf"我的?(?P<rel>{_RELATIONS_ZH})(?P<name>[\u4e00-\u9fff]{{1,3}}?)(?=(?:{rules.ZH_TIME_WORDS}|前不久|又|{_CHANGES_ZH}|住|在|是|怎么|呢|吗|的|说|和|跟|也|还|都|[，,。！？?!\s]|$))"
)


# A parent named by what the user calls them ("Mum turns 65 …"), and "'s" for "has" or "is" after a name or kin.
_PARENT_AS_NAME_EN = re.compile(r"^(?-i:(?:Mum|Mom|Mommy|Mummy|Mam|Mammy|Ma|Dad|Daddy|Da|Mama|Papa|Pa))\b")
_HAS_OR_IS_EN = re.compile(
    rf"^(?P<who>(?:my\s+)?(?:{rules.KIN_EN})|{_NAME}|[\u4e00-\u9fff]{{2,3}})['\u2019]s\s+(?=(?P<verb>been|got|getting|going|"
    r"moving|starting|having|expecting|pregnant|engaged|retiring)\b)",
    re.I,
)
# A date or a lasting thing of someone's: "雨桐's birthday is the 3rd of September", "Ana's office is in Leeds".
_THEIRS_EN = re.compile(
    rf"^(?P<name>{_NAME}|[\u4e00-\u9fff]{{2,3}})['\u2019]s\s+(?:birthday|anniversary|name day|due date|wedding|office|"
    r"school|job|favou?rite\s+[\w-]+)\s+(?:is|was|falls)\b",
    re.I,
)
# Something the user and someone did together: "Putri and I did the same master's in Lausanne".
_WITH_ME_EN = re.compile(
    rf"^(?P<name>{_NAME})\s+and\s+I\s+(?:(?:have|just|finally)\s+)*(?:did|studied|went to|grew up|met|worked|lived|shared|started|"
    r"founded|were|used to|got|adopted|bought|set the date|are getting married|are moving|"
    r"have known each other|have been friends|share)\b|"
    # Where the user met someone: "I met Seo-yeon at the climbing gym" (not a time: "I met Tom at 5").
    rf"^I\s+(?:first\s+)?met\s+(?P<met>{_NAME})\s+(?:at|in|through|during|on)\s+(?!\d|noon|lunch|dinner|breakfast)"
    r"(?!.*\b(?:today|yesterday|tonight|this (?:morning|afternoon|evening)|earlier|just now|last night)\b)",
    re.I,
)


def said_of_them(clause: str) -> str:
    """ "Mum turns 65" → "My mum turns 65", "my mom's been" → "my mom has been", "Putri's getting" → "Putri is getting"."""
    clause = _PARENT_AS_NAME_EN.sub(lambda m: f"My {m.group().lower()}", clause)
    return _HAS_OR_IS_EN.sub(
        lambda m: f"{m.group('who')} {'has' if m.group('verb').lower() in {'been', 'got'} else 'is'} ", clause
    )


def others_en(clause: str) -> Finding | None:
    """ "My friend Lara just moved back to the suburbs, so …" → "The user's friend Lara just moved back to the
    suburbs." (MEMORY.md)."""
    if _THEIRS_EN.match(clause) or _WITH_ME_EN.match(clause):
        told = re.sub(r"\bset the date\s*[:,\u2014\u2013-]\s*", "set the date for ", clause, flags=re.I)  # Keep when.
        told = re.sub(r"(?:\s*[;:\u2014\u2013]\s+|,\s+(?!in\s)|\s+(?:when|while|because|since)\s+).*$", "", told)
        fact = re.sub(r"^(\S+ and the user) has\b", r"\1 have", rewrite(told))
        return write_finding("UPDATE_MEMORY", finish_en(fact), "About someone the user knows.", 0.65)
    if gift := _GIFT_EN.match(clause):
        fact = finish_en(f"The user bought {gift.group('name')} {gift.group('thing')}")
        return write_finding("UPDATE_MEMORY", fact, "About someone the user knows: something given to them.", 0.65)
    if told := _TOLD_EN.match(clause):
        who = f"The user's {told.group('rel').lower()} " if told.group("rel") else ""
        rest = re.sub(
            r"^['\u2019]s\s+",
            "is " if re.match(r"^['\u2019]s\s+\w+ing\b", told.group("rest")) else "has ",
            told.group("rest"),
        )
        fact = finish_en(f"{who}{told.group('name')} {rewrite(_told(rest))}")
        return write_finding("UPDATE_MEMORY", fact, "About someone the user knows: a change in their life.", 0.7)
    if _THEIR_NEWS_EN.match(clause):
        return write_finding(
            "UPDATE_MEMORY", finish_en(rewrite(clause)), "About someone the user knows: a change in their life.", 0.65
        )
    if news := _NEWS_EN.match(clause):
        fact = finish_en(f"{news.group('name')} {rewrite(_told(news.group('rest')))}")
        return write_finding("UPDATE_MEMORY", fact, "About someone the user knows: a change in their life.", 0.7)
    match = OTHER_EN.match(clause)
    if match is None and (named := _NAMED_FACT_EN.match(clause)):
        fact = finish_en(f"{named.group('name')} {rewrite(_told(named.group('rest')))}")
        return write_finding("UPDATE_MEMORY", fact, "About someone the user knows.", 0.65)
    if match is None:
        return None
    rest = _told(match.group("rest"))
    fact = finish_en(f"The user's {match.group('rel').lower()} {match.group('name')} {rewrite(rest)}")
    return write_finding("UPDATE_MEMORY", fact, "About someone the user knows: a change in their life.", 0.7)


def others_zh(clause: str) -> Finding | None:
    """ "我朋友小林搬到了厦门" → "用户的朋友小林搬到了厦门。" (MEMORY.md)."""
    if relation := rules.RELATION_ZH.match(clause):
        fact = finish_zh(f"{relation.group('name')}是用户的{relation.group('rel')}")  # Who they are, not the rest.
        return write_finding("UPDATE_USER", fact, "About the user: who someone is to them.", 0.75)
    match = OTHER_ZH.match(clause)
    if match is None:
        return None
    fact = finish_zh(f"用户的{match.group('rel')}{match.group('name')}{rewrite_zh(match.group('rest'))}")
    return write_finding("UPDATE_MEMORY", fact, "About someone the user knows: a change in their life.", 0.7)


def resolve_pronoun(text: str, earlier: Sequence[str]) -> str:
    """``text`` with a leading "she"/"he"/"they" (她/他) replaced by the person the user named last in
    ``earlier`` (this message's sentences before it, then the user's previous message), when it opens a change
    in that person's life; else ``text`` unchanged."""
    english = _PRONOUN_EN.match(text)
    chinese = None if english else _PRONOUN_ZH.match(text)
    if english is None and chinese is None:
        return text
    for said in reversed(earlier):
        mentions = list((_MENTION_EN if english else _MENTION_ZH).finditer(said or ""))
        if not mentions:
            continue
        who = mentions[-1]
        if english:
            return f"My {who.group('rel').lower()} {who.group('name')} {english.group('rest')}"
        return f"我的{who.group('rel')}{who.group('name')}{chinese.group('rest')}"  # type: ignore[union-attr]
    return text


# A pet or person of the user's who is gone: "Sadly, Biscuit passed away in June.", "我的猫咪咪去世了。". The guardian
# takes back the lines that name them (``guardian_app.write.takeback``).
LOSS_REASON = "About the user: a pet or person they named is gone."
_LOSS_EN = re.compile(
    r"^(?:(?:sadly|unfortunately|so|well|but)\s*,?\s*)*(?:(?:my|our)\s+(?:[\w-]+\s+){0,2}?)?(?P<name>(?-i:[A-Z][a-z]+))\s+"
    r"(?:passed away|died|was put down|was put to sleep|ran away|went missing)\b(?P<rest>.*)$",
    re.I,
)
_LOSS_ZH = re.compile(
    r"^(?:我的?|我们的?)?(?:猫|狗|宠物|小狗|小猫)?(?P<name>[\u4e00-\u9fff]{1,3}?)(?:上个月|去年|前几天|最近)?"
    # "困死了", "累死了": 死了 after a feeling says how much, not that someone died.
    r"(?:去世了|(?<![困累饿热冷气笑烦忙渴吵疼痛急闷撑吓冻丑美臭晒挤聊慌躁乏晕怕懒馋])死了|走丢了)"
)


# Said by what they were: "My dog got hit by a car and he died." → "The user's dog died."
_LOSS_KIND_EN = re.compile(
    rf"^(?:(?:sadly|unfortunately|so|well|but)\s*,?\s*)*(?:my|our)\s+(?:old\s+|little\s+)?(?P<kind>{rules.PETS})\b"
    r"[^.;!?]{0,60}?\b(?:passed away|died|was put down|was put to sleep|ran away|went missing)\b",
    re.I,
)


def loss(clause: str) -> Finding | None:
    """ "Sadly, Biscuit passed away in June." → "Biscuit passed away in June."; "My dog got hit by a car and he
    died." → "The user's dog died."."""
    if match := _LOSS_EN.match(clause):
        return write_finding("UPDATE_USER", finish_en(clause[match.start("name") :]), LOSS_REASON, 0.7)
    if match := _LOSS_KIND_EN.match(clause):
        return write_finding("UPDATE_USER", f"The user's {match.group('kind').lower()} died.", LOSS_REASON, 0.7)
    if match := _LOSS_ZH.match(clause):
        return write_finding("UPDATE_USER", finish_zh(rewrite_zh(clause)), LOSS_REASON, 0.7)
    return None
