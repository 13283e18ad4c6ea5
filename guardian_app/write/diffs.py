"""Unified diffs and line counts between two versions of a memory file (``None`` is "no file")."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def lines_of(text: str | None) -> list[str]:
    return (text or "").splitlines(keepends=True)


class Matcher(difflib.SequenceMatcher):
    """difflib's matcher for lines of a file, made fit for large files that change a little at a time.

    - The common prefix and suffix are matched first and only the middle goes to difflib, so appending a
      line to a 100 KB file costs a comparison of the changed lines, not of the file.
    - No autojunk: in a file of more than 200 lines difflib would treat every frequent line (blank
      lines, ``## Notes``) as junk and align versions badly.
    The matching blocks are in the coordinates of the whole sequences (merge3 and get_opcodes use them).
    """

    def __init__(self, isjunk=None, a: Sequence[str] = (), b: Sequence[str] = (), autojunk: bool = False) -> None:  # noqa: ANN001
        a, b = list(a), list(b)
        limit = min(len(a), len(b))
        prefix = 0
        while prefix < limit and a[prefix] == b[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
            suffix += 1
        self._whole = (a, b, prefix, suffix)
        self._blocks: list[tuple[int, int, int]] | None = None
        super().__init__(None, a[prefix : len(a) - suffix], b[prefix : len(b) - suffix], autojunk=False)

    def get_matching_blocks(self) -> list[tuple[int, int, int]]:  # type: ignore[override]
        if self._blocks is not None:
            return self._blocks
        a, b, prefix, suffix = self._whole
        inner = super().get_matching_blocks()
        raw = [(0, 0, prefix)] if prefix else []
        raw += [(i + prefix, j + prefix, n) for i, j, n in inner[:-1]]
        if suffix:
            raw.append((len(a) - suffix, len(b) - suffix, suffix))
        blocks: list[tuple[int, int, int]] = []
        for i, j, n in raw:  # Merge blocks that touch, as difflib itself returns them.
            if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
                pi, pj, pn = blocks[-1]
                blocks[-1] = (pi, pj, pn + n)
            else:
                blocks.append((i, j, n))
        blocks.append((len(a), len(b), 0))
        self._blocks = blocks
        return blocks

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:  # type: ignore[override]
        # difflib's get_opcodes reads self.a/self.b lengths nowhere but in the blocks; rebuild from ours.
        i = j = 0
        codes: list[tuple[str, int, int, int, int]] = []
        for ai, bj, size in self.get_matching_blocks():
            tag = ""
            if i < ai and j < bj:
                tag = "replace"
            elif i < ai:
                tag = "delete"
            elif j < bj:
                tag = "insert"
            if tag:
                codes.append((tag, i, ai, j, bj))
            i, j = ai + size, bj + size
            if size:
                codes.append(("equal", ai, i, bj, j))
        return codes


@dataclass(frozen=True)
class DiffStats:
    added: int
    removed: int
    modified: int

    @property
    def removed_total(self) -> int:
        """Lines that are gone from the old text: removed outright or replaced by other text."""
        return self.removed + self.modified


def _stats(opcodes: list[tuple[str, int, int, int, int]]) -> DiffStats:
    added = removed = modified = 0
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "insert":
            added += j2 - j1
        elif tag == "delete":
            removed += i2 - i1
        elif tag == "replace":
            old, new = i2 - i1, j2 - j1
            modified += min(old, new)
            added += max(0, new - old)
            removed += max(0, old - new)
    return DiffStats(added, removed, modified)


def diff_stats(before: str | None, after: str | None) -> DiffStats:
    """Added, removed and modified line counts: a replaced block of n old and m new lines counts
    min(n, m) as modified and the rest as added or removed."""
    return _stats(Matcher(None, lines_of(before), lines_of(after)).get_opcodes())


def _grouped(opcodes: list[tuple[str, int, int, int, int]], n: int) -> list[list[tuple[str, int, int, int, int]]]:
    """difflib.SequenceMatcher.get_grouped_opcodes over our opcodes."""
    codes = list(opcodes) or [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    nn = n + n
    groups: list[list[tuple[str, int, int, int, int]]] = []
    group: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > nn:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _range(start: int, stop: int) -> str:
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def _line(prefix: str, line: str) -> str:
    if line.endswith("\n"):
        return prefix + line
    return f"{prefix}{line}\n\\ No newline at end of file\n"  # As git shows a last line without one.


def diff_and_stats(before: str | None, after: str | None, file_name: str, *, context: int = 3) -> tuple[str, DiffStats]:
    """The unified diff (``a/<file>``, ``b/<file>``; empty when nothing changed) and the line counts, from
    one comparison."""
    old, new = lines_of(before), lines_of(after)
    opcodes = Matcher(None, old, new).get_opcodes()
    stats = _stats(opcodes)
    if old == new:
        return "", stats
    out = [f"--- a/{file_name}\n", f"+++ b/{file_name}\n"]
    for group in _grouped(opcodes, context):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [_line(" ", line) for line in old[i1:i2]]
                continue
            if tag in {"replace", "delete"}:
                out += [_line("-", line) for line in old[i1:i2]]
            if tag in {"replace", "insert"}:
                out += [_line("+", line) for line in new[j1:j2]]
    return "".join(out), stats


def unified_diff(before: str | None, after: str | None, file_name: str, *, context: int = 3) -> str:
    """``git diff``-style text with ``a/<file>`` and ``b/<file>`` headers; empty when nothing changed."""
    return diff_and_stats(before, after, file_name, context=context)[0]


def line_kinds(diff: str) -> list[tuple[str, str]]:
    """Each line of a unified diff with its kind, as the console colours it: ``meta`` (the ``---``/``+++``
    header), ``hunk`` (``@@``), ``add``, ``del`` or ``ctx``."""
    rows = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        rows.append((kind, line))
    return rows
