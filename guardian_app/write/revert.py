"""The revert of one write: what a memory file becomes when one audited write is undone on top of it.

``plan_revert`` undoes one write (``before`` -> ``after``) on top of the file as it is now with a three-way
merge (``merge3``: base = after-snapshot, ours = current file, theirs = the revert target); where merge3
reports a conflict the region is refined line by line, so a later line added next to the reverted one (the
usual case: two facts appended one after the other) is not a conflict. ``force`` reverts only the lines the
write itself changed (its diff hunks): its lines go, as written or as edited since, and the pre-write text
of those hunks is put back; everywhere else the current file wins. Blank lines and a heading that lines of
other owners still sit under are structure: a heading a rolled-back write created stays while such lines
live under it. Pure: no database, no file.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from merge3 import Merge3

from guardian_app.write.diffs import Matcher, lines_of
from reflection_site import memory_files

# A later line whose words are this alike (difflib's ratio) to a line of the write is that line, edited.
EDITED_LINE_SIMILARITY = 0.7
# Appended during a merge only to the lines of the current file: the write's own lines (they go wherever they
# are), lines edited from them, and other lines with the text of one of the write's (not taken for it).
_FOREIGN, _MINE, _EDITED = "\x00", "\x01", "\x02"
_MARKS = _FOREIGN + _MINE + _EDITED


@dataclass
class ConflictRegion:
    base: list[str]  # the audit's lines (after-snapshot)
    ours: list[str]  # what the file holds there now
    theirs: list[str]  # what the rollback would put there (before-snapshot)

    def as_dict(self) -> dict[str, str]:
        return {"written": "".join(self.base), "now": "".join(self.ours), "before": "".join(self.theirs)}


@dataclass
class RevertPlan:
    content: str | None  # None: remove the file
    method: str  # restore | merge | forced
    conflicts: list[ConflictRegion] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.conflicts


@dataclass
class Roles:
    """What each line of the current file is to the write being rolled back."""

    mine: list[bool]  # the write's own line
    edited: list[bool]  # another's line edited from one of the write's (a later edit inside it)


def _words(line: str) -> list[str]:
    return line.split()


def is_edit_of(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` edited (a word changed, words added), not another line: their words are at least
    EDITED_LINE_SIMILARITY alike (difflib's ratio over words; over characters two facts written to one template,
    "Prefers green tea" and "Prefers black coffee", look alike). Headings and blank lines are structure: never."""
    if not old.strip() or not new.strip() or memory_files.is_heading(old) or memory_files.is_heading(new):
        return False
    a, b = _words(old), _words(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return matcher.real_quick_ratio() >= EDITED_LINE_SIMILARITY and matcher.ratio() >= EDITED_LINE_SIMILARITY


def _origins(base: list[str], ours: list[str], *, by_owner: bool = False) -> list[int | None]:
    """For each line of ``ours``, the base line it is (kept as is) or was edited from (``is_edit_of`` a line of
    the block it replaced), or None for a line added later."""
    origin: list[int | None] = [None] * len(ours)
    for tag, i1, i2, j1, j2 in Matcher(None, base, ours).get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                origin[j1 + k] = i1 + k
        elif tag == "replace":
            for j in range(j1, j2):
                if ours[j].endswith((_FOREIGN, _MINE)) or (by_owner and not ours[j].endswith(_EDITED)):
                    continue  # Not an edit: the write's own line, or (the blame says) another's.
                edited = [i for i in range(i1, i2) if is_edit_of(base[i], _plain(ours[j]))]
                if edited:
                    origin[j] = edited[0]
    return origin


def _revert_region(
    base: list[str], ours: list[str], theirs: list[str], *, force: bool, by_owner: bool = False
) -> list[str] | None:
    """Revert the write (base -> theirs) inside one merge3 conflict region of ``ours``, hunk by hunk.

    A line of ``ours`` goes when it is one of the write's lines (of a hunk of base -> theirs) as written; a
    write's line already gone is fine. A write's line edited since (a later line at least
    EDITED_LINE_SIMILARITY alike in its place) is a conflict: None, or with ``force`` it goes too. Every
    other line stays, whatever the before-snapshot has there: a line the write did not touch is never
    brought back from it. Each hunk's pre-write lines go where the write's lines were (the first of them
    still there), else after the line before the hunk, else before the line after it. A heading the write
    added stays while lines that stay sit under it (unless the revert brings a heading back in its place).
    """
    hunk_of: dict[int, int] = {}
    hunks: list[tuple[int, int, list[str]]] = []
    for tag, i1, i2, j1, j2 in Matcher(None, base, theirs).get_opcodes():
        if tag != "equal":
            for i in range(i1, i2):
                hunk_of[i] = len(hunks)
            hunks.append((i1, i2, list(theirs[j1:j2])))
    exact: dict[int, int] = {}
    for i, j, n in Matcher(None, base, ours).get_matching_blocks():
        for k in range(n):
            exact[j + k] = i + k
    origin = _origins(base, ours, by_owner=by_owner)
    drop = [False] * len(ours)
    for j, o in enumerate(origin):
        if o is None or o not in hunk_of:
            continue
        if j not in exact and not force:
            return None  # A later edit inside a line the write changed.
        drop[j] = True
    for j, line in enumerate(ours):
        if (
            drop[j]
            and memory_files.is_heading(line)
            and not any(memory_files.is_heading(x) for x in hunks[hunk_of[origin[j]]][2])
        ):
            k = j + 1
            while k < len(ours) and not memory_files.is_heading(ours[k]):
                if ours[k].strip() and not drop[k] and not ours[k].endswith(_MINE):
                    drop[j] = False
                    if j + 1 < len(ours) and drop[j + 1] and not ours[j + 1].strip():
                        drop[j + 1] = False
                    break
                k += 1
    inserts: dict[int, list[str]] = {}
    for n, (i1, i2, replacement) in enumerate(hunks):
        if not replacement:
            continue
        mine = [j for j, o in enumerate(origin) if o is not None and hunk_of.get(o) == n]
        left = [j for j, o in enumerate(origin) if o is not None and o < i1]
        right = [j for j, o in enumerate(origin) if o is not None and o >= i2]
        if mine:
            at = mine[0]
        elif i1 == 0:
            at = 0
        elif left:
            at = left[-1] + 1
        elif right:
            at = right[0]
        elif force:
            at = 0
        else:
            return None  # Nothing left to place the pre-write lines by.
        inserts.setdefault(at, []).extend(replacement)
    out: list[str] = []
    for j in range(len(ours) + 1):
        out.extend(inserts.get(j, []))
        if j < len(ours) and not drop[j]:
            out.append(ours[j])
    return out


def _plain(line: str) -> str:
    return line.rstrip(_MARKS)


def _is_content(line: str) -> bool:
    return bool(line.strip()) and not memory_files.is_heading(line)


def plan_revert(
    after: str, current: str | None, before: str | None, *, force: bool = False, roles: Roles | None = None
) -> RevertPlan:
    """The file content that undoes one write (``before`` -> ``after``) on top of ``current``.

    ``roles`` (from the file's blame) says which lines of ``current`` are the write's own and which were edited
    from one of its lines. Then the write's own lines go wherever the file now has them, another line with the
    same text as one of them is not taken for it, and an edited one is a conflict (``force``: it goes) even
    when a later change moved it. Without ``roles`` lines are told apart by the three-way merge alone.
    """
    if current == after:
        return RevertPlan(before, "restore")
    base, ours, theirs = lines_of(after), lines_of(current), lines_of(before)
    # With the blame, only a line it says was edited from the write's is an edit: two facts that differ in a
    # word look like one edited into the other.
    by_owner = roles is not None and len(roles.mine) == len(ours)
    if roles is not None and by_owner:
        written = set(base) - set(theirs)
        marked: list[str] = []
        for line, mine, edited in zip(ours, roles.mine, roles.edited, strict=True):
            if mine and _is_content(line):
                marked.append(line + _MINE)
            elif edited and _is_content(line):
                marked.append(line + _EDITED)
            elif not mine and line in written:
                marked.append(line + _FOREIGN)
            else:
                marked.append(line)
        ours = marked
    out: list[str] = []
    conflicts: list[ConflictRegion] = []
    for group in Merge3(base, ours, theirs, sequence_matcher=Matcher).merge_groups():
        kind = group[0]
        if kind != "conflict":
            out.extend(group[1])
            continue
        z, a, b = list(group[1]), list(group[2]), list(group[3])
        resolved = _revert_region(z, a, b, force=False, by_owner=by_owner)
        if resolved is not None:
            out.extend(resolved)
            continue
        conflicts.append(ConflictRegion(z, a, b))
        out.extend((_revert_region(z, a, b, force=True, by_owner=by_owner) or []) if force else a)
    stray = [line for line in out if line.endswith(_EDITED)]
    if stray and not conflicts:  # An edit inside one of the write's lines that a later change moved.
        conflicts.append(ConflictRegion([], stray, []))
    kept = [line for line in out if not line.endswith(_MINE) and not (force and line.endswith(_EDITED))]
    text = "".join(_plain(line) for line in kept)
    conflicts = [ConflictRegion(*([_plain(x) for x in part] for part in (c.base, c.ours, c.theirs))) for c in conflicts]
    content: str | None = text
    if before is None and not text.strip():
        content = None  # The write created the file; nothing else is left in it.
    if current is None and content == "":
        content = None
    method = "forced" if conflicts and force else "merge"
    return RevertPlan(content, method, conflicts)
