"""A thing given up that a line states as one item of a list: "No longer climbs." and "Loves to cook, go rock
climbing, watch Netflix and travel." The line is not stale as a whole (cooking, Netflix and travel still hold), so
the item is taken out of it ("Loves to cook, watch Netflix and travel.") and the negation is written beside it.
Pure text, Django-free.
"""

from __future__ import annotations

import re

from guardian_app.write.whose import BULLET
from reflection_site.text import content_words, stem

_GIVEN_UP = re.compile(
    r"\bno longer\b|\b(?:anymore|any more|any longer)\b|\b(?:gave up|quit|stopped|dropped)\b", re.IGNORECASE
)
# The words of a negation that say it ended, not what ended.
_ENDING_WORDS = frozenset({"longer", "anymore", "more", "gave", "give", "quit", "stop", "drop", "up"})
# One item of a list: between commas, or after the last ", and" / " and".
_SPLIT = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
_OPENING = re.compile(
    r"^(?P<head>(?:[A-Z][\w' -]*?\s+)?(?:loves?|likes?|enjoys?|hobbies are|is into)\s+(?:to\s+)?)", re.I
)


# How a line about the user opens (the user is not named in their own lines).
_USERS_OPENINGS = frozenset(
    "Loves Love Likes Like Enjoys Enjoy Is No Doesn't Does Has Quit Stopped Gave Dropped Hobbies The User".split()
)


def _root(word: str) -> str:
    """A word's stem without a doubled last letter: "swimming" and "swims" are both "swim"."""
    return re.sub(r"(.)\1$", r"\1", stem(word))


def _subject(line: str) -> str:
    """A name the line opens with ("Seo-yeon likes …"), or "" for the user's own ("Loves …")."""
    match = re.match(r"^[A-Z][\w'-]+(?=\s)", line)
    return match.group(0) if match and match.group(0) not in _USERS_OPENINGS else ""


def dropped_item(fact: str, content: str) -> tuple[str, str] | None:
    """The one list line of ``content`` that holds what ``fact`` gives up as one of three or more items, and the
    line without that item; None when no single line and item are found (a plain line is the supersede rules')."""
    if not _GIVEN_UP.search(fact):
        return None
    wanted = {_root(word) for word in content_words(fact)} - _ENDING_WORDS
    who = _subject(BULLET.sub("", fact).strip())
    found: list[tuple[str, str]] = []
    for line in content.splitlines():
        bullet = BULLET.match(line)
        body = line[bullet.end() :] if bullet else ""
        opening = _OPENING.match(body)
        if opening is None or _subject(body) != who or _GIVEN_UP.search(body):
            continue
        items = _SPLIT.split(body[opening.end() :].rstrip(" ."))
        hits = [item for item in items if wanted & {_root(word) for word in content_words(item)}]
        if len(items) < 3 or len(hits) != 1:
            continue
        kept = [item for item in items if item is not hits[0]]
        listed = ", ".join(kept[:-1]) + f" and {kept[-1]}"
        found.append((line, f"{bullet.group(0)}{opening.group('head')}{listed}."))
    return found[0] if len(found) == 1 else None
