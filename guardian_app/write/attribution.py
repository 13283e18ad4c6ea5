"""Whose fact it is: a gate decision's fact is routed by who said it (issue 21).

USER.md describes the workspace's owner only (``sessions_app.speakers``). A fact that another person states
about themselves ("I live in Madrid", from a second sender) is written to MEMORY.md with the person named
("Marta lives in Madrid."), never as the user's; a rule for the agent's manner or identity (SOUL.md,
IDENTITY.md) from someone who is not the owner is held for the owner to review. Facts from the owner, or from
a turn without a sender, go where the gate sent them, unless the owner's other file (USER.md or the tools file)
is where the attribute they update is stated (``where_stated``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from guardian_app.errors import UnsafeFile
from guardian_app.write import workspace
from guardian_app.write.supersede import superseded_lines
from reflection_site import memory_files
from reflection_site.text import is_cjk
from sessions_app.heuristic_person import EN_SUBJECT as _EN_SUBJECT
from sessions_app.heuristic_person import ZH_SUBJECT as _ZH_SUBJECT
from sessions_app.heuristic_person import name_the_person
from sessions_app.models import MemoryGateDecision
from sessions_app.speakers import Speaker, speaker_of

# Files whose content instructs the agent: only the owner changes them without a review.
OWNER_ONLY = frozenset({"SOUL.md", "IDENTITY.md"})


@dataclass(frozen=True)
class Route:
    target_file: str
    fact: str
    hold_reason: str | None = None
    speaker: str | None = None


def _speaker_throughout(fact: str, name: str) -> str:
    """The gate wrote the speaker's "I" as "the user" wherever it stood; past the subject it is the speaker too:
    "Dev is not at Halvorsen anymore, the user joined Brightwave." → "…, Dev joined Brightwave."."""
    fact = re.sub(r"\b[Tt]he user's\b", f"{name}'s", fact)
    fact = re.sub(r"\b[Tt]he user\b", name, fact)
    return fact.replace("用户", name)


def route(decision: MemoryGateDecision, target_file: str, fact: str) -> Route:
    """Where ``fact`` from ``decision`` goes, as which text, or why it is held (see the module docstring)."""
    speaker: Speaker = speaker_of(decision.turn)
    if speaker.is_owner or speaker.name is None:
        return Route(where_stated(target_file, fact), fact, speaker=speaker.name)
    if target_file in OWNER_ONLY:
        return Route(
            target_file,
            fact,
            hold_reason=f"a rule for the agent from {speaker.name}, who is not the workspace's owner",
            speaker=speaker.name,
        )
    if target_file == "USER.md" or (
        target_file == "MEMORY.md" and (_EN_SUBJECT.match(fact) or _ZH_SUBJECT.match(fact))
    ):
        return Route(
            "MEMORY.md", _speaker_throughout(name_the_person(fact, speaker.name), speaker.name), speaker=speaker.name
        )
    return Route(target_file, fact, speaker=speaker.name)


def where_stated(target_file: str, fact: str) -> str:
    """The owner's other file (USER.md or the tools file) when it, and not ``target_file``, holds the line ``fact``
    updates or takes back: "I'm on macOS now" for USER.md, when the tools file says "Uses Windows". One attribute
    has one place, so the new value replaces the old one there rather than standing beside it in another file."""
    mapping = memory_files.active().file_for_decision
    pair = (mapping["UPDATE_USER"], mapping["UPDATE_TOOLS"])
    if target_file not in pair:
        return target_file
    other = pair[1] if target_file == pair[0] else pair[0]
    try:
        if superseded_lines(fact, workspace.read_file(target_file) or ""):
            return target_file
        return other if superseded_lines(fact, workspace.read_file(other) or "") else target_file
    except (OSError, UnsafeFile):  # Not a regular file: the guarded write says so for the target; nothing moves.
        return target_file


OWNER = "owner"  # What a correction says to give a fact back to the workspace's owner.


def about_the_owner(fact: str, name: str | None) -> str:
    """``fact`` as USER.md states it, the person ``name`` taken out: "Marta lives in Madrid." → "Lives in Madrid.",
    "Marta's wife is Clara." → "The user's wife is Clara.", "Marta住在马德里。" → "用户住在马德里。"."""
    text = fact.strip()
    if not name or not text.startswith(name):
        return text
    rest = text[len(name) :]
    if is_cjk(rest):
        return f"用户{rest}"
    if rest[:2] in ("'s", "’s"):
        return f"The user's {rest[2:].lstrip()}"
    rest = rest.lstrip()
    return rest[:1].upper() + rest[1:]


def reattribute(fact: str, *, said_by: str | None, about: str) -> tuple[str, str]:
    """``(target file, fact)`` for a fact an operator says is about ``about`` (a person's name, or ``OWNER``)
    rather than whom the guardian took it for; ``said_by`` is the name the written fact carries, if any (the
    turn's sender). The owner's facts go to USER.md, another person's to MEMORY.md with the person named."""
    plain = about_the_owner(fact, said_by)
    if about.strip().casefold() == OWNER:
        return "USER.md", plain
    return "MEMORY.md", name_the_person(plain, about.strip())
