"""Seed 001's ``## Retain`` bullets: typed, self-contained facts in a daily log.

    ## Retain
    - W @Peter: Currently in Marrakech (Nov 27 - Dec 1) for Andy's birthday.
    - B @warelay: I fixed the Baileys WS crash by wrapping connection.update in try/catch.
    - O(c=0.95) @Peter: Prefers short replies on WhatsApp (<1500 chars); long content goes into a file.
    - S Busy week; the migration dominated.

The type prefix is ``W`` (world), ``B`` (experience, biographical), ``O`` (opinion) or ``S`` (observation,
summary); ``@Name`` tags are entities (slugs of ``bank/entities/<Name>.md``); ``(c=0.0..1.0)`` is the
confidence, written for opinions. A bullet in the section without a type prefix is kept as plain text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KIND_FOR_PREFIX: dict[str, str] = {"W": "world", "B": "experience", "O": "opinion", "S": "observation"}
KINDS: tuple[str, ...] = ("world", "experience", "opinion", "observation")

# "## Retain", and "## 保留" as the seed's Chinese edition writes it.
RETAIN_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?:retain|保留)\s*#*\s*$", re.IGNORECASE)
_BULLET = re.compile(
    r"""^\s{0,3}[-*+]\s+
        (?P<prefix>[WBOS])
        (?:\((?P<params>[^)]*)\))?
        (?=[\s:@]|$)
        (?P<rest>.*)$""",
    re.VERBOSE,
)
ENTITY = re.compile(r"(?<![\w@])@([^\W_][\w.\-]*)")
_CONFIDENCE = re.compile(r"\bc\s*=\s*([01](?:\.\d+)?|\.\d+)\b")
_LEADING_TAGS = re.compile(r"^\s*((?:@[^\W_][\w.\-]*[\s,]*)*)\s*:?\s*")


@dataclass(frozen=True)
class RetainFact:
    kind: str
    content: str
    entities: list[str] = field(default_factory=list)
    confidence: float | None = None


def entity_name(raw: str) -> str:
    """``@The-Castle.`` -> ``The-Castle`` (a trailing full stop or hyphen ends the sentence, not the name)."""
    return raw.rstrip(".-")


def entity_key(name: str) -> str:
    """The form entities are compared in: ``The Castle`` and ``the-castle`` are the same entity."""
    return re.sub(r"[\s_]+", "-", name.strip().lstrip("@")).lower()


def mentioned_entities(text: str) -> list[str]:
    """Every ``@Name`` in the text, in order, once each."""
    seen: dict[str, str] = {}
    for raw in ENTITY.findall(text):
        name = entity_name(raw)
        if name and entity_key(name) not in seen:
            seen[entity_key(name)] = name
    return list(seen.values())


def parse_retain_bullet(text: str) -> RetainFact | None:
    """One bullet (its first line and any continuation lines) -> a typed fact, or None if it has no type prefix."""
    first, _, more = text.partition("\n")
    match = _BULLET.match(first)
    if match is None:
        return None
    confidence = None
    if match.group("params") is not None:
        found = _CONFIDENCE.search(match.group("params"))
        if found is not None:
            confidence = min(1.0, max(0.0, float(found.group(1))))
    rest = match.group("rest")
    tags = _LEADING_TAGS.match(rest)
    content = rest[tags.end() :] if tags else rest
    if more.strip():
        content = (content + "\n" + "\n".join(line.strip() for line in more.splitlines())).strip()
    if not content.strip():
        return None
    return RetainFact(
        kind=KIND_FOR_PREFIX[match.group("prefix")],
        content=content.strip(),
        entities=mentioned_entities(rest + "\n" + more),
        confidence=confidence,
    )


def is_retain_heading(line: str) -> bool:
    return RETAIN_HEADING.match(line) is not None
