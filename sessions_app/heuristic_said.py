"""How chat shortens a statement, and the plain statement the English rules read instead (the offline gate, issue 21).

"my phone's a Pixel 7", "Turns out I'm allergic to shellfish", "Got laid off from Orbis", "Tango's over for me",
"bus then metro to the office now": each is put with "I" and a verb the rules know ("The user's phone is …",
"I am allergic to shellfish", "I got laid off from Orbis", "I gave up Tango", "I take the bus then metro to the
office now"). Pure text: ``said_plainly(clause)`` runs every rewrite in order.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sessions_app import heuristic_rules as rules

# A place named in any script: "Durban", "Đà Nẵng", "성남시", "怡保".
_PLACE_START = r"(?=(?-i:[A-Z\u00c0-\u024f\u1100-\u11ff\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]))"
_HEALTH = r"[a-z]+ intolerant|allergic|diabetic|colou?rblind|deaf|pregnant|dyslexic|autistic|c[o]?eliac|asthmatic|an(?:a)?emic"


def said_plainly(clause: str) -> str:
    """``clause`` as the rules read it: every rewrite of ``_REWRITES``, in order (see the module docstring)."""
    for pattern, replacement in _REWRITES:
        clause = pattern.sub(replacement, clause)
    return clause


# A device named by its line and a number ("Fairphone 5", "Pixel 8") or its kind.
_DEVICE_NAMED = (
    rf"(?:(?:(?-i:[A-Z])[\w-]+ )*(?-i:[A-Z])[\w-]+ (?-i:[A-Z])?\d+[a-z]?\b|(?:[\w-]+ )?(?:{rules.DEVICES})\b)"
)
_I = re.IGNORECASE
_Rewrite = tuple[re.Pattern[str], "str | Callable[[re.Match[str]], str]"]

_REWRITES: tuple[_Rewrite, ...] = (
    # Statements chat shortens: "my phone's a Pixel 7", "First week at Parker Inc", "No more evening naps for me".
    (re.compile(r"^(my|our) ([\w-]+)(?:'s|\u2019s) (?=(?:a|an|the)\b)", _I), r"\1 \2 is "),
    (
        re.compile(r"^(?:(?:so|and) )?(?:my )?first (?:day|week|shift) (?:at|with) (?=(?-i:[A-Z0-9]))", _I),
        "I started working at ",
    ),
    (re.compile(r"^no more ((?:[a-z-]+ )?[a-z-]+(?<!s)s) for me\b", _I), r"I gave up \1"),  # Plural habits only.
    (re.compile(rf"^I am (?:now )?on (?:a|an|the) (?={_DEVICE_NAMED}[^.;]*\b(?:now|these days)\b)", _I), "I use a "),
    (
        re.compile(r"^(?:(?:just )?moved(?: again| house)?,?\s+)(?:we|I) (?:are|am) (?:now )?in (?=(?-i:[A-Z]))", _I),
        "I live in ",
    ),
    (
        re.compile(
            r"^(?:[^:]{1,25}:\s*)?(?:work|my (?:job|work|company|employer|boss)|(?:the|my|our) (?:[\w-]+ ){0,3}?(?:board|"
            r"company|firm|ministry|department|agency|employer|bank|hospital|school|university|army|government|council|"
            r"authority|service|office))(?:'s|\u2019s| has| is| have)? (?:moved|transferred|relocated|sent|posted) me (?:over "
            r"|out |back )?to (?=(?-i:[A-Z]))",
            _I,
        ),
        "I moved to ",
    ),
    # The languages spoken, by whom: "With my parents it's Darija and French, with 佳怡 it's Mandarin".
    (
        re.compile(r"^with (?P<who>[^,]{1,30}?),? it(?:'s| is) (?P<lang>(?-i:[A-Z])\w+(?: and (?-i:[A-Z])\w+)?)\b", _I),
        r"I speak \g<lang> with \g<who>",
    ),
    # "pencil drawing is my thing", "jazz is really my jam": what one loves.
    (
        re.compile(
            r"^(?:but |and |so )?(?P<x>[a-z][\w -]{1,30}?) is (?:really |totally |definitely )?my (?:thing|jam|passion)\b",
            _I,
        ),
        r"I love \g<x>",
    ),
    # "These days it's Oum Kalthoum in the car rather than Mozart": a liking that changed.
    (
        re.compile(
            r"^(?:(?:these days|nowadays|now),? )?it(?:'s| is) (?:now |all )?(?!(?:mon|tues|wednes|thurs|fri|satur|sun)day\b)(?P<x>(?-i:[A-Z])[\w' -]{1,30}?)(?: in the car| at home| these days| now)? "
            r"(?:rather than|instead of|not) (?P<y>(?-i:[A-Z])[\w' -]{1,30}?)\b",
            _I,
        ),
        r"I switched from \g<y> to \g<x>",
    ),
    # "I've been at Bakhouche & Rahal since Sunday, doing …": where one works now.
    (
        re.compile(r"^I (?:have|'ve) been at (?=(?-i:[A-Z])[^,.;]*(?:,\s*(?:doing|working)\b|\bsince\b))", _I),
        "I work at ",
    ),
    # "Three espressos a day, minimum": a count a day, said without a verb.
    (
        re.compile(
            r"^(?=(?:one|two|three|four|five|six|seven|eight|nine|ten|\d+) (?:[\w-]+ ){0,2}?(?:espressos?|coffees?|cups|teas?|"
            r"glasses|litres|liters|cigarettes|beers|pints|hours|kilometres|kilometers|km|miles|pages|laps) (?:of [\w-]+ )?"
            r"(?:a|per|each) (?:day|week|night)\b)(?P<n>\w)",
            _I,
        ),
        lambda m: f"I have {m.group('n').lower()}",
    ),
    (
        re.compile(
            r"^(?:.*?,\s*so\s+)?(?P<p>(?-i:[A-Z])[\w' -]{1,40}?) is (?:officially |now )*(?:my )?home now\b", _I
        ),
        r"I live in \g<p> now",
    ),
    # "so home is Cantagallo for now", "home's Kumasi these days": where one lives, said of the home.
    (
        re.compile(
            r"^(?:.*?,\s*so\s+)?(?:my |our )?home(?:'s| is) (?:now )?(?P<p>(?-i:[A-Z])[\w'-]+(?: (?-i:[A-Z])[\w'-]+){0,3})"
            r"(?= (?:for now|now|these days|for the time being)\b|[.!]*$)",
            _I,
        ),
        r"I live in \g<p>",
    ),
    # A thing handed down: "My father-in-law gave me his old iPhone for free" (the user has it now).
    (
        re.compile(
            r"^(?P<who>(?:my|our) [\w-]+|(?-i:[A-Z])[\w'-]+) (?:gave|handed|passed|sold) me (?:down )?"
            rf"(?:his|her|their|its|a|an|the) (?P<t>(?:old |spare |used |second-hand )?{_DEVICE_NAMED})",
            _I,
        ),
        r"I have the \g<t> from \g<who>",
    ),
    (re.compile(r"^I have been (?:working on|practi[cs]ing|playing) (?=(?:the|a|an)\s)", _I), "I am learning "),
    (re.compile(r"^(?:.*?\bso )?I (?:learned|learnt|taught myself|picked up) (?=(?-i:[A-Z0-9]))", _I), "I use "),
    (
        re.compile(
            r"^(?:I )?(?:moved|migrated|ported|switched) (?:every|all|all of|everything)(?: [\w-]+){0,4}? (?:over )?to "
            r"(?=(?-i:[A-Z]))",
            _I,
        ),
        "I switched to ",
    ),
    # A finding about oneself: "Turns out I'm allergic to shellfish", "I just found out I'm lactose intolerant".
    (
        re.compile(
            r"^(?:so |and )?(?:it )?(?:turns out|turned out|I (?:just |recently )?(?:found out|discovered|learned|learnt|"
            r"reali[sz]ed)) (?:that )?(?=I (?:am|have)\b)",
            _I,
        ),
        "",
    ),
    # "I had to start drinking it when I discovered I was lactose intolerant": a finding about one's health.
    (
        re.compile(
            rf"^.*?\b(?:when|after|once|since) I (?:discovered|found out|learned|learnt|reali[sz]ed) (?:that )?I (?:was|am) "
            rf"(?P<x>(?:{_HEALTH})\b.*)$",
            _I,
        ),
        r"I am \g<x>",
    ),
    # "I have the iPhone 6 I think": the hedge said after the statement.
    (re.compile(r",?\s+I (?:think|guess|believe|reckon)\W*$", _I), ""),
    # "Aisyah and I are engaged": the person's own tie, to the one named.
    (
        re.compile(r"^(?P<n>(?-i:[A-Z])[\w'-]+) and I (?:are|just got|got) (?P<s>engaged|married)\b", _I),
        lambda m: f"I am {m.group('s').lower()} to {m.group('n')}",
    ),
    # A home of one's own, or the new one, said of the home ("got my own place in Desa Maluri", "Aisyah and I are in
    # the new flat in … now"), and back in a place ("Back in 성남시 since last week"); not a visit ("… for the weekend").
    (
        re.compile(
            r"^(?!.*\b(?:for (?:the|a|an|two|three|a few|a couple)\b|visit|trip|holiday|vacation|conference))"
            r"(?:I )?(?:(?:finally|just) )?(?:got (?:my|our) own (?:place|flat|apartment|house) in |(?:(?-i:[A-Z])[\w'-]+ "
            r"and )?I (?:am|are) (?:now )?in (?:the|a|our|my) new (?:place|flat|apartment|house|home) in |(?:I am )?back "
            rf"(?:home )?in ){_PLACE_START}",
            _I,
        ),
        "I live in ",
    ),
    # A job that ended without the person's choosing: "that's me done at Acme", "Acme let me go", "got laid off".
    (
        re.compile(r"^(?:so |well |and )?(?:that is|that's|that was) me (?:done|finished) at (?=(?-i:[A-Z0-9]))", _I),
        "I am done at ",
    ),
    (
        re.compile(
            r"^(?!(?:My|Our|The|They|He|She|It|We|You|Mum|Mom|Dad|Then|So)\b)(?P<org>(?-i:[A-Z0-9])[\w&.' -]{0,40}?) "
            r"(?:laid me off|let me go|made me redundant|fired me|sacked me)\b(?! (?:early|home|for|to|out|off|with|first))"
        ),
        r"I was laid off by \g<org>",
    ),
    (
        re.compile(r"^(?=(?:just |recently )?(?:got|was|been) (?:laid off|let go|made redundant|fired|sacked)\b)", _I),
        "I ",
    ),
    # "retired the old iPhone", "It's a Galaxy S24 now": a device stopped being used, and the one after it.
    (re.compile(r"^(?:I )?(?:(?:finally|just) )?retired (?=(?:my|the|our) (?:old )?)", _I), "I got rid of "),
    (
        re.compile(
            rf"^(?:it is|it's|now it is|now it's) (?:a |an |the )?(?=(?:[\w-]+ )?(?:{rules.DEVICES})\b[^.;]*\bnow\b)",
            _I,
        ),
        "I have a ",
    ),
    # "everything out of Notion into Obsidian": a tool left for another.
    (
        re.compile(
            r"^(?:I )?(?:spent [\w ]{1,20}? )?(?:dragging|moving|moved|migrating|migrated|porting|ported|exporting|"
            r"exported) (?:everything|all (?:of )?my [\w-]+|my [\w-]+) (?:out of|from|off) (?P<a>(?-i:[A-Z])[\w.+-]*"
            r"(?: (?-i:[A-Z])[\w.+-]*)?) (?:into|to|onto) (?P<b>(?-i:[A-Z])[\w.+-]*(?: (?-i:[A-Z])[\w.+-]*)?)",
            _I,
        ),
        r"I switched from \g<a> to \g<b>",
    ),
    # "The office is across town, so it's the train now": the way to work, said of the day.
    (
        re.compile(
            rf"^(?:.*\b(?:office|work|commute)\b.*?,\s*so\s+)?(?:it is|it's) (?:the )?(?P<way>{rules.COMMUTE_WAYS})"
            r"(?= (?:now|these days)\b)",
            _I,
        ),
        r"I take the \g<way> to work",
    ),
    # "Tango's over for me", "Pilates is off the list": something given up, said of the thing.
    (
        re.compile(
            r"^(?P<x>[a-z][\w -]{1,30}?)(?:'s| is) (?:(?:over|done|finished) for me|off the (?:list|table|cards))\b", _I
        ),
        r"I gave up \g<x>",
    ),
    # "bus then metro to the office now", "train to work these days": the way to work, said without a verb.
    (
        re.compile(
            rf"^(?=(?:the )?(?:{rules.COMMUTE_WAYS})(?: (?:then|and|or|\+) (?:the )?(?:{rules.COMMUTE_WAYS}))? (?:to|"
            r"into) (?:work|the office|school|campus)\b)",
            _I,
        ),
        "I take the ",
    ),
)
