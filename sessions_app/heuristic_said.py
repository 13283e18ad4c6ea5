"""How chat shortens a statement, and the plain statement the English rules read instead (the offline gate, issue 21).

"my phone's a Pixel 7", "Turns out I'm allergic to shellfish", "Got laid off from Orbis", "Tango's over for me",
"bus then metro to the office now": each is put with "I" and a verb the rules know ("The user's phone is …",
"I am allergic to shellfish", "I got laid off from Orbis", "I gave up Tango", "I take the bus then metro to the
office now"). Pure text: ``said_plainly(clause)`` runs every rewrite in order.
"""

from __future__ import annotations

import re

from sessions_app import heuristic_rules as rules

# A place named in any script: "Durban", "Đà Nẵng", "성남시", "怡保".
_PLACE_START = r"(?=(?-i:[A-Z\u00c0-\u024f\u1100-\u11ff\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]))"
_HEALTH = r"[a-z]+ intolerant|allergic|diabetic|colou?rblind|deaf|pregnant|dyslexic|autistic|c[o]?eliac|asthmatic|an(?:a)?emic"


def said_plainly(clause: str) -> str:
    """``clause`` as the rules read it (see the module docstring)."""
    return _ended_or_taken(_found_or_shared(_said_short(clause)))


# A device named by its line and a number ("Fairphone 5", "Pixel 8") or its kind.
_DEVICE_NAMED = rf"(?:(?-i:[A-Z])[\w-]+ \d+[a-z]?\b|(?:{rules.DEVICES})\b)"


def _said_short(clause: str) -> str:
    """Statements chat shortens: "my phone's a Pixel 7", "First week at Parker Inc", "No more evening naps for me",
    "I'm on a Fairphone 5 now", "Moved again, we're in Makati now", "so South Australia is officially home now",
    "I have been working on the French horn", "so I learned Fusion 360", put as the rules read them."""
    for pattern, replacement in _SHORT_EN:
        clause = pattern.sub(replacement, clause)
    return clause


_SHORT_EN: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), replacement)
    for pattern, replacement in (
        (r"^(my|our) ([\w-]+)(?:'s|\u2019s) (?=(?:a|an|the)\b)", r"\1 \2 is "),
        (r"^(?:(?:so|and) )?(?:my )?first (?:day|week|shift) (?:at|with) (?=(?-i:[A-Z0-9]))", "I started working at "),
        (r"^no more ((?:[a-z-]+ )?[a-z-]+(?<!s)s) for me\b", r"I gave up \1"),  # Habits, plural: not "wedding cake".
        (rf"^I am (?:now )?on (?:a|an|the) (?={_DEVICE_NAMED}[^.;]*\b(?:now|these days)\b)", "I use a "),
        (r"^(?:(?:just )?moved(?: again| house)?,?\s+)(?:we|I) (?:are|am) (?:now )?in (?=(?-i:[A-Z]))", "I live in "),
        (
            r"^(?:work|my (?:job|work|company|employer|boss))(?:'s|\u2019s| has| is)? (?:moved|transferred|relocated|sent|"
            r"posted) me (?:over |out |back )?to (?=(?-i:[A-Z]))",
            "I moved to ",
        ),
        (
            r"^(?:.*?,\s*so\s+)?(?P<p>(?-i:[A-Z])[\w' -]{1,40}?) is (?:officially |now )*(?:my )?home now\b",
            r"I live in \g<p> now",
        ),
        (r"^I have been (?:working on|practi[cs]ing|playing) (?=(?:the|a|an)\s)", "I am learning "),
        (r"^(?:.*?\bso )?I (?:learned|learnt|taught myself|picked up) (?=(?-i:[A-Z0-9]))", "I use "),
        (
            r"^(?:I )?(?:moved|migrated|ported|switched) (?:every|all|all of|everything)(?: [\w-]+){0,4}? (?:over )?to (?=(?-i:[A-Z]))",
            "I switched to ",
        ),
    )
)


def _found_or_shared(clause: str) -> str:
    """What the person found out about themselves, a home or a tie shared with someone, and a statement with its
    hedge after it, put as the plain statement with "I" ("I am allergic to shellfish", "I live in Desa Maluri")."""
    # "Turns out I'm allergic to shellfish", "I just found out I'm lactose intolerant": the finding is the fact.
    clause = re.sub(
        r"^(?:so |and )?(?:it )?(?:turns out|turned out|I (?:just |recently )?(?:found out|discovered|learned|learnt|"
        r"reali[sz]ed)) (?:that )?(?=I (?:am|have)\b)",
        "",
        clause,
        flags=re.I,
    )
    # "I had to start drinking it when I discovered I was lactose intolerant": a finding about one's health.
    clause = re.sub(
        rf"^.*?\b(?:when|after|once|since) I (?:discovered|found out|learned|learnt|reali[sz]ed) (?:that )?I (?:was|am) "
        rf"(?P<x>(?:{_HEALTH})\b.*)$",
        lambda m: f"I am {m.group('x')}",
        clause,
        flags=re.I,
    )
    # "I have the iPhone 6 I think": the hedge said after the statement.
    clause = re.sub(r",?\s+I (?:think|guess|believe|reckon)\W*$", "", clause, flags=re.I)
    # "Aisyah and I are engaged": the person's own tie, to the one named.
    clause = re.sub(
        r"^(?P<n>(?-i:[A-Z])[\w'-]+) and I (?:are|just got|got) (?P<s>engaged|married)\b",
        lambda m: f"I am {m.group('s').lower()} to {m.group('n')}",
        clause,
        flags=re.I,
    )
    # A home of one's own, or the new one, said of the home: "got my own place in Desa Maluri", "Aisyah and I are in
    # the new flat in Bandar Tasik Puteri now"; and back in a place: "Back in 성남시 since last week".
    if re.search(
        r"\b(?:for (?:the|a|an|two|three|a few|a couple)\b|visit|trip|holiday|vacation|conference)", clause, re.I
    ):
        return clause  # "Back in Paris for the weekend": a visit, not a home.
    return re.sub(
        r"^(?:I )?(?:(?:finally|just) )?(?:got (?:my|our) own (?:place|flat|apartment|house) in |(?:(?-i:[A-Z])[\w'-]+ and )?I "
        r"(?:am|are) (?:now )?in (?:the|a|our|my) new (?:place|flat|apartment|house|home) in |(?:I am )?back (?:home )?"
        rf"in ){_PLACE_START}",
        "I live in ",
        clause,
        flags=re.I,
    )


def _ended_or_taken(clause: str) -> str:
    """A job ended, a thing given up, or the way to work, said without "I": put with "I" so the rules read them."""
    # A job that ended without the person's choosing: "that's me done at Acme", "Acme let me go", "got laid off
    # from Acme" are the person's job ended there, said with "I" ("I was laid off by Acme").
    clause = re.sub(
        r"^(?:so |well |and )?(?:that is|that's|that was) me (?:done|finished) at (?=(?-i:[A-Z0-9]))",
        "I am done at ",
        clause,
        flags=re.I,
    )
    clause = re.sub(
        r"^(?!(?:My|Our|The|They|He|She|It|We|You|Mum|Mom|Dad|Then|So)\b)(?P<org>(?-i:[A-Z0-9])[\w&.' -]{0,40}?) "
        r"(?:laid me off|let me go|made me redundant|fired me|sacked me)\b(?! (?:early|home|for|to|out|off|with|first))",
        lambda m: f"I was laid off by {m.group('org')}",
        clause,
    )
    clause = re.sub(
        r"^(?=(?:just |recently )?(?:got|was|been) (?:laid off|let go|made redundant|fired|sacked)\b)",
        "I ",
        clause,
        flags=re.I,
    )
    # "retired the old iPhone", "It's a Galaxy S24 now": a device stopped being used, and the one after it.
    clause = re.sub(
        r"^(?:I )?(?:(?:finally|just) )?retired (?=(?:my|the|our) (?:old )?)", "I got rid of ", clause, flags=re.I
    )
    clause = re.sub(
        rf"^(?:it is|it's|now it is|now it's) (?:a |an |the )?(?=(?:[\w-]+ )?(?:{rules.DEVICES})\b[^.;]*\bnow\b)",
        "I have a ",
        clause,
        flags=re.I,
    )
    # "everything out of Notion into Obsidian": a tool left for another.
    clause = re.sub(
        r"^(?:I )?(?:spent [\w ]{1,20}? )?(?:dragging|moving|moved|migrating|migrated|porting|ported|exporting|exported)"
        r" (?:everything|all (?:of )?my [\w-]+|my [\w-]+) (?:out of|from|off) (?P<a>(?-i:[A-Z])[\w.+-]*(?: (?-i:[A-Z])"
        r"[\w.+-]*)?) (?:into|to|onto) (?P<b>(?-i:[A-Z])[\w.+-]*(?: (?-i:[A-Z])[\w.+-]*)?)",
        lambda m: f"I switched from {m.group('a')} to {m.group('b')}",
        clause,
        flags=re.I,
    )
    # "The office is across town, so it's the train now": the way to work, said of the day.
    clause = re.sub(
        rf"^(?:.*\b(?:office|work|commute)\b.*?,\s*so\s+)?(?:it is|it's) (?:the )?(?P<way>{rules.COMMUTE_WAYS})"
        r"(?= (?:now|these days)\b)",
        lambda m: f"I take the {m.group('way')} to work",
        clause,
        flags=re.I,
    )
    # "Tango's over for me", "climbing is done for me": something given up, said of the thing.
    clause = re.sub(
        r"^(?P<x>[a-z][\w -]{1,30}?)(?:'s| is) (?:(?:over|done|finished) for me|off the (?:list|table|cards))\b",
        lambda m: f"I gave up {m.group('x')}",
        clause,
        flags=re.I,
    )
    # "bus then metro to the office now", "train to work these days": the way to work, said without a verb.
    clause = re.sub(
        rf"^(?=(?:the )?(?:{rules.COMMUTE_WAYS})(?: (?:then|and|or|\+) (?:the )?(?:{rules.COMMUTE_WAYS}))? (?:to|into) "
        r"(?:work|the office|school|campus)\b)",
        "I take the ",
        clause,
        flags=re.I,
    )
    return clause
