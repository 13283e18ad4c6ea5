"""The memory files the agent reads, by workspace profile: their names, which gate decision writes which
file (and under which heading), how many characters the agent loads of each, and where reflect's pages go.

``WORKSPACE_PROFILE`` picks one profile:

- ``seed``: the seed's five files at the root of the workspace (MEMORY.md, USER.md, SOUL.md, IDENTITY.md,
  TOOLS.md), reflect's pages under ``bank/``, no size limits.
- ``openclaw``: the files current OpenClaw (npm ``openclaw@2026.9.6``) loads into the agent's prompt. Its
  bootstrap set is AGENTS.md, SOUL.md, IDENTITY.md, USER.md, BOOTSTRAP.md and MEMORY.md
  (``WORKSPACE_BOOTSTRAP_FILENAMES`` in its dist); it no longer reads TOOLS.md (``openclaw doctor --fix``
  merges TOOLS.md into AGENTS.md ``## Tools``), so tool facts go under that heading. Each bootstrap file
  is cut at ``bootstrapMaxChars`` (default 20,000) and USER.md at 4,000 whatever that setting says
  (``USER_BOOTSTRAP_MAX_CHARS``), counted as JavaScript counts ``content.trimEnd().length`` (UTF-16 code
  units). OpenClaw indexes ``MEMORY.md``, ``USER.md`` and ``memory/**/*.md`` and never reads ``bank/``,
  so reflect's pages live under ``memory/bank/``. OpenClaw writes MEMORY.md and ``memory/`` itself
  (its "dreaming" consolidation): a change there that Reflection did not make is the agent's.

A page keeps its name (``bank/entities/Peter.md``) in the database, the API and the admin in both profiles;
only its place on disk (``disk_path``) follows the profile. Django-free but for ``active()``, which reads
the two settings. ``parse_heading`` reads a Markdown heading line, the one way every app does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

SEED = "seed"
OPENCLAW = "openclaw"

# The seed's vocabulary (DESIGN §3): each UPDATE_* decision names one of the five files.
SEED_FILES: tuple[str, ...] = ("MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "TOOLS.md")
SEED_FILE_FOR_DECISION: Mapping[str, str] = MappingProxyType(
    {
        "UPDATE_MEMORY": "MEMORY.md",
        "UPDATE_USER": "USER.md",
        "UPDATE_SOUL": "SOUL.md",
        "UPDATE_IDENTITY": "IDENTITY.md",
        "UPDATE_TOOLS": "TOOLS.md",
    }
)
OPENCLAW_FILE_FOR_DECISION: Mapping[str, str] = MappingProxyType(
    {**SEED_FILE_FOR_DECISION, "UPDATE_TOOLS": "AGENTS.md"}
)
OPENCLAW_FILES: tuple[str, ...] = ("MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "AGENTS.md")
# Every memory file name any profile has: what the database accepts (a file keeps its history when the
# profile changes).
ALL_FILES: tuple[str, ...] = (*SEED_FILES, "AGENTS.md")
# A file name (any profile) to its decision: a correction or an audit naming a file maps back to one.
DECISION_FOR_FILE: Mapping[str, str] = MappingProxyType(
    {
        name: decision
        for mapping in (SEED_FILE_FOR_DECISION, OPENCLAW_FILE_FOR_DECISION)
        for decision, name in mapping.items()
    }
)

# OpenClaw 2026.9.6, dist/bootstrap-*.mjs: DEFAULT_BOOTSTRAP_MAX_CHARS = 2e4, USER_BOOTSTRAP_MAX_CHARS = 4e3.
OPENCLAW_BOOTSTRAP_MAX_CHARS = 20_000
OPENCLAW_USER_MAX_CHARS = 4_000
TOOLS_SECTION = "Tools"


@dataclass(frozen=True)
class Profile:
    """Where a workspace's agent reads its memory."""

    name: str
    files: tuple[str, ...]  # the memory files at the root, in the order people see them
    file_for_decision: Mapping[str, str]
    sections: Mapping[str, str] = field(default_factory=dict)  # a file Reflection writes only under this heading
    max_chars: Mapping[str, int] = field(default_factory=dict)  # what the agent loads of a file, at most
    pages_dir: str = ""  # the folder (relative, with a trailing "/") that holds reflect's bank/ pages
    agent_written: tuple[str, ...] = ()  # names (or "prefix/") that the agent itself writes

    def section_for(self, name: str) -> str | None:
        """The one heading Reflection writes under in ``name`` (AGENTS.md: ``Tools``), or None."""
        return self.sections.get(name)

    def limit_for(self, name: str) -> int | None:
        return self.max_chars.get(name)

    def disk_path(self, name: str) -> str:
        """Where the file called ``name`` (a checked memory file or bank page name) lives, relative to the
        workspace: a bank page moves under ``pages_dir``, a memory file stays at the root."""
        return f"{self.pages_dir}{name}" if name.startswith("bank/") else name

    def written_by_agent(self, name: str) -> bool:
        """Whether a change to ``name`` (its path on disk) that Reflection did not make is the agent's own."""
        path = self.disk_path(name)
        return any(path == entry or (entry.endswith("/") and path.startswith(entry)) for entry in self.agent_written)


def _openclaw(bootstrap_max_chars: int) -> Profile:
    per_file = max(1, int(bootstrap_max_chars))
    return Profile(
        name=OPENCLAW,
        files=OPENCLAW_FILES,
        file_for_decision=OPENCLAW_FILE_FOR_DECISION,
        sections=MappingProxyType({"AGENTS.md": TOOLS_SECTION}),
        max_chars=MappingProxyType(
            {
                **dict.fromkeys(OPENCLAW_FILES, per_file),
                # USER.md: min(bootstrapMaxChars, 4,000), as OpenClaw's buildBootstrapContextFiles does.
                "USER.md": min(per_file, OPENCLAW_USER_MAX_CHARS),
            }
        ),
        pages_dir="memory/",
        agent_written=("MEMORY.md", "memory/"),
    )


SEED_PROFILE = Profile(name=SEED, files=SEED_FILES, file_for_decision=SEED_FILE_FOR_DECISION)
OPENCLAW_PROFILE = _openclaw(OPENCLAW_BOOTSTRAP_MAX_CHARS)
PROFILE_NAMES: tuple[str, ...] = (SEED, OPENCLAW)


def profile(name: str, *, bootstrap_max_chars: int = OPENCLAW_BOOTSTRAP_MAX_CHARS) -> Profile:
    """The profile called ``name``; ValueError for any other name."""
    if name == SEED:
        return SEED_PROFILE
    if name == OPENCLAW:
        if bootstrap_max_chars == OPENCLAW_BOOTSTRAP_MAX_CHARS:
            return OPENCLAW_PROFILE
        return _openclaw(bootstrap_max_chars)
    raise ValueError(f"unknown workspace profile {name!r}; expected one of {', '.join(PROFILE_NAMES)}")


def active() -> Profile:
    """The profile of this deployment: ``WORKSPACE_PROFILE`` (and ``OPENCLAW_BOOTSTRAP_MAX_CHARS``)."""
    from django.conf import settings

    return profile(
        settings.WORKSPACE_PROFILE,
        bootstrap_max_chars=getattr(settings, "OPENCLAW_BOOTSTRAP_MAX_CHARS", OPENCLAW_BOOTSTRAP_MAX_CHARS),
    )


def prompt_chars(text: str | None) -> int:
    """How many characters OpenClaw counts in a file: JavaScript's ``content.trimEnd().length``, in UTF-16
    code units (a character outside the Basic Multilingual Plane, an emoji say, counts twice)."""
    if not text:
        return 0
    return len(text.rstrip().encode("utf-16-le")) // 2


def over_limit(profile_: Profile, name: str, before: str | None, after: str) -> str | None:
    """Why writing ``after`` to ``name`` would push it past what the agent loads, or None.

    A write that leaves a file within its limit passes, and so does one that does not make an oversized
    file (a hand edit's doing) any longer: shortening it is what it needs.
    """
    limit = profile_.limit_for(name)
    if limit is None:
        return None
    size = prompt_chars(after)
    if size <= limit or size <= prompt_chars(before):
        return None
    return (
        f"{name} would be {size:,} characters, past the {limit:,} that OpenClaw loads into the agent's prompt "
        f"(it cuts the rest off, WORKSPACE_PROFILE={profile_.name}); consolidate {name} first (merge or remove old "
        "lines), then retry"
    )


# --- Markdown headings -----------------------------------------------------------------------------
# An ATX heading as CommonMark reads it: up to three spaces, one to six "#", then a space, a tab or the end of
# the line ("#hashtag" and "#######" are text). The copies this replaces disagreed on indentation, on "#"
# alone, and on "C#" (one stripped the "#" of the title: a closing sequence needs a space before it).
HEADING = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)(.*)$")
_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")


def parse_heading(line: str) -> tuple[int, str] | None:
    """``(level, title)`` of a Markdown heading line (``"## Tools ##"`` → ``(2, "Tools")``), or None."""
    match = HEADING.match(line.rstrip("\r\n"))
    if match is None:
        return None
    title = _CLOSING.sub("", match.group(2).strip()).strip()
    return len(match.group(1)), title


def is_heading(line: str) -> bool:
    return parse_heading(line) is not None
