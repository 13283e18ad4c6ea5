"""The guardian's edits to a memory file's text, and the checks on the result: pure text, no I/O.

``apply_edits`` applies ``{op: append | replace | delete, section?, text?, find?}`` in order (a ``find`` must
match exactly once); ``check_result`` says why an edited file must not be written (too many lines removed,
emptied, a secret, an instruction, hidden characters added); ``profile_refusal`` applies the workspace
profile's rules (a file's one section, the most the agent loads of it).
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from guardian_app.errors import InvalidEdits
from guardian_app.write.diffs import diff_stats, unified_diff
from guardian_app.write.heuristic_guardian import instruction_like
from reflection_site import memory_files
from reflection_site.privacy import contains_secret


def _section_bounds(lines: list[str], section: str) -> tuple[int, int, int] | None:
    """(heading index, level, end index) of the first heading whose text is ``section`` (case-insensitive)."""
    wanted = section.strip().lstrip("#").strip().casefold()
    for i, line in enumerate(lines):
        heading = memory_files.parse_heading(line)
        if heading and heading[1].casefold() == wanted:
            level = heading[0]
            end = len(lines)
            for j in range(i + 1, len(lines)):
                other = memory_files.parse_heading(lines[j])
                if other and other[0] <= level:
                    end = j
                    break
            return i, level, end
    return None


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _append(content: str, section: str | None, text: str) -> str:
    block = _with_newline(text.strip("\n"))
    if not content.strip():
        if section:
            return f"## {section.strip().lstrip('#').strip()}\n\n{block}"
        return block
    lines = content.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    if not section:
        return "".join(lines) + block
    bounds = _section_bounds(lines, section)
    if bounds is None:
        tail = "" if lines[-1].strip() == "" else "\n"
        return "".join(lines) + f"{tail}## {section.strip().lstrip('#').strip()}\n\n{block}"
    start, _, end = bounds
    insert_at = end
    while insert_at > start + 1 and lines[insert_at - 1].strip() == "":
        insert_at -= 1
    if insert_at == start + 1:  # An empty section: keep one blank line after the heading.
        lines[insert_at:insert_at] = ["\n", block]
    else:
        lines[insert_at:insert_at] = [block]
    return "".join(lines)


def _find_once(content: str, find: str) -> int:
    if not find:
        raise InvalidEdits("an edit's 'find' is empty")
    count = content.count(find)
    if count != 1:
        raise InvalidEdits(f"'find' must match exactly once, matched {count} times: {find[:80]!r}")
    return content.index(find)


def apply_edits(content: str | None, edits: list[dict[str, Any]]) -> str:
    """Apply the guardian's edits in order; InvalidEdits when one cannot be applied as asked."""
    text = content or ""
    for edit in edits:
        op = edit.get("op")
        if op == "append":
            addition = edit.get("text") or ""
            if not addition.strip():
                raise InvalidEdits("an append edit has no text")
            text = _append(text, edit.get("section"), addition)
        elif op == "replace":
            at = _find_once(text, edit.get("find") or "")
            find = edit["find"]
            text = text[:at] + (edit.get("text") or "") + text[at + len(find) :]
        elif op == "delete":
            find = edit.get("find") or ""
            at = _find_once(text, find)
            end = at + len(find)
            # Deleting whole lines takes their line break with them.
            if (at == 0 or text[at - 1] == "\n") and text[end : end + 1] == "\n":
                end += 1
            text = text[:at] + text[end:]
        else:
            raise InvalidEdits(f"unknown edit op {op!r}")
    return text


def check_result(
    before: str | None, after: str, *, max_removed_lines: int | None = None, allow_instructions: bool = False
) -> str | None:
    """Why the edited file must not be written, or None: too many lines removed, emptied, a secret, an
    instruction (unless ``allow_instructions``: an operator's retry of a held fact) or hidden characters added.

    ``max_removed_lines`` replaces GUARDIAN_MAX_REMOVED_LINES for a caller that owns part of the file
    (reflect may rewrite the block it generated on its pages).
    """
    stats = diff_stats(before, after)
    limit = settings.GUARDIAN_MAX_REMOVED_LINES if max_removed_lines is None else max_removed_lines
    if stats.removed_total > limit:
        return f"the edits would remove or rewrite {stats.removed_total} lines (more than GUARDIAN_MAX_REMOVED_LINES={limit})"
    if (before or "").strip() and not after.strip():
        return "the edits would empty the file"
    added = "".join(
        line[1:]
        for line in unified_diff(before, after, "x", context=0).splitlines(keepends=True)
        if line.startswith("+") and not line.startswith("+++")
    )
    if added and contains_secret(added):
        return "the result would contain a secret (a key, token or password); secrets are never written"
    if HIDDEN_CHARACTERS.search(added):
        return "the edits would add invisible control or bidi characters, which can hide what a line says"
    # The fact passed this check before the guardian saw it; an instruction now came from the guardian itself.
    why = None if allow_instructions else instruction_like(added)
    if why is not None:
        return f"the edits would add text that reads as an instruction to the agent ({why}), not a fact"
    return None


# Characters a reader does not see that change what a line shows: C0 and C1 controls (but tab, newline and
# carriage return), bidi embeddings, overrides, isolates and marks, zero-width space, line and paragraph
# separators, BOM. In a memory file they can hide or reorder text ("Trojan Source"). A fact loses them (a
# separator becomes a space) before anything else looks at it; an edit that adds them is refused. ZWJ and
# ZWNJ stay (emoji sequences and some scripts need them).
HIDDEN_CHARACTERS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]"
)


def visible(text: str) -> str:
    """``text`` without HIDDEN_CHARACTERS (the spacing ones become a space)."""
    return HIDDEN_CHARACTERS.sub(lambda m: " " if m.group().isspace() else "", text)


def _outside_section(text: str | None, section: str) -> str:
    """``text`` without the section headed ``section`` (heading and body)."""
    lines = (text or "").splitlines(keepends=True)
    bounds = _section_bounds(lines, section)
    if bounds is not None:
        del lines[bounds[0] : bounds[2]]
    return "".join(lines).rstrip()


def profile_refusal(name: str, before: str | None, after: str) -> str | None:
    """The workspace profile's rules for ``name``: a file the agent loads may not grow past what it loads
    (OpenClaw cuts USER.md at 4,000 characters, the others at 20,000), and a file Reflection writes only
    under one heading (AGENTS.md: ``## Tools``) may not change anywhere else."""
    profile = memory_files.active()
    section = profile.section_for(name)
    if section is not None and _outside_section(before, section) != _outside_section(after, section):
        return f"the edits would change {name} outside its ## {section} section, the only part Reflection writes"
    return memory_files.over_limit(profile, name, before, after)
