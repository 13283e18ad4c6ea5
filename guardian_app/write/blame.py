"""Line ownership: ``git blame`` over a memory file's versions, and what it says to a rollback.

**The invariant.** Every line of a memory file is owned by a live write, a hand edit (or the file as first
seen), or a rollback that restored it; a line whose only owner is a rolled-back write is never in the file.
A version's new lines are its own, a line a rollback put back keeps the owner it had when its write removed
it. A rollback puts back only lines its write removed, and of those only the ones still owned by something
live (``revert_target``): a line that another rollback took out does not come back through this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from guardian_app.models import FileVersion, WriteGuardianAudit
from guardian_app.write.diffs import Matcher, lines_of
from guardian_app.write.revert import Roles, is_edit_of

Status = WriteGuardianAudit.Status

Owner = tuple[str, str]  # ("write", audit id) | ("hand_edit" | "initial", version id) | ("rollback", rollback id)


@dataclass
class Blame:
    """Who owns each line of a file at one version (see ``blame``), and which writes' lines each was edited from."""

    lines: list[str]
    owners: list[Owner]
    roots: list[frozenset[str]]  # the audits whose lines this line is, or was edited from
    removed_by: dict[str, dict[str, list[tuple[Owner, frozenset[str]]]]]  # audit -> text -> what its write removed

    def restored(self, audit_id: str, line: str) -> tuple[Owner, frozenset[str]] | None:
        pending = self.removed_by.get(audit_id, {}).get(line)
        return pending[0] if pending else None


def blame(name: str, *, upto_seq: int | None = None) -> Blame:
    """``git blame`` over the file's versions (all, or up to ``upto_seq``).

    Each version's new lines belong to it (a write's to its audit, a hand edit's or first sighting's to that
    version); a line a version only moved, and a line a rollback put back, keep the owner they had. A new line
    that ``is_edit_of`` a line it replaced also carries that line's roots (a later edit inside a write's line
    stays that write's to ``force``). Reads every version once: a rollback costs one pass over the history.
    """
    lines: list[str] = []
    owners: list[Owner] = []
    roots: list[frozenset[str]] = []
    removed_by: dict[str, dict[str, list[tuple[Owner, frozenset[str]]]]] = {}
    versions = FileVersion.objects.filter(file_name=name).select_related("snapshot").order_by("seq")
    if upto_seq is not None:
        versions = versions.filter(seq__lte=upto_seq)
    for version in versions.iterator(chunk_size=200):
        new = lines_of(version.snapshot.content if version.snapshot_id else None)
        codes = Matcher(None, lines, new).get_opcodes()
        left: dict[str, list[tuple[Owner, frozenset[str]]]] = {}
        for tag, i1, i2, _j1, _j2 in codes:
            if tag != "equal":
                for k in range(i1, i2):
                    left.setdefault(lines[k], []).append((owners[k], roots[k]))
        new_owners: list[Owner] = []
        new_roots: list[frozenset[str]] = []
        for tag, i1, i2, j1, j2 in codes:
            if tag == "equal":
                new_owners += owners[i1:i2]
                new_roots += roots[i1:i2]
                continue
            for line in new[j1:j2]:
                if left.get(line):
                    owner, root = left[line].pop(0)
                elif version.kind == FileVersion.Kind.ROLLBACK:
                    restored = removed_by.get(version.audit_id or "", {}).get(line)
                    owner, root = (
                        restored.pop(0) if restored else (("rollback", version.rollback_id or ""), frozenset())
                    )
                else:
                    if version.kind == FileVersion.Kind.WRITE:
                        owner = ("write", version.audit_id or version.id)
                    else:
                        owner = (version.kind, version.id)
                    edited = [k for k in range(i1, i2) if is_edit_of(lines[k], line)]
                    root = roots[edited[0]] if edited else frozenset()
                    if owner[0] == "write":
                        root = root | {owner[1]}
                new_owners.append(owner)
                new_roots.append(root)
        if version.kind == FileVersion.Kind.WRITE and version.audit_id:
            gone = removed_by.setdefault(version.audit_id, {})
            for line, pending in left.items():
                gone.setdefault(line, []).extend(pending)
        lines, owners, roots = new, new_owners, new_roots
    return Blame(lines, owners, roots, removed_by)


def roles_of(audit_id: str, current: str | None, known: Blame | None) -> Roles | None:
    """Each line's role from the file's blame; None when the blame does not lead to ``current``."""
    if known is None or known.lines != lines_of(current):
        return None
    mine = [owner == ("write", audit_id) for owner in known.owners]
    edited = [not m and audit_id in root for m, root in zip(mine, known.roots, strict=True)]
    return Roles(mine, edited)


def revert_target(audit: WriteGuardianAudit, before: str | None, after: str | None, known: Blame | None) -> str | None:
    """What the rollback puts back where the write changed the file: the before-snapshot, less the lines the
    write removed whose owner is now a rolled-back write (a line no live write, hand edit or restoring
    rollback owns never comes back). ``known`` is the file's blame (None: nothing is filtered)."""
    if before is None:
        return None
    old = lines_of(before)
    removed = [
        i
        for tag, i1, i2, _j1, _j2 in Matcher(None, old, lines_of(after)).get_opcodes()
        if tag != "equal"
        for i in range(i1, i2)
        if old[i].strip()
    ]
    if not removed or known is None:
        return before
    pool = {text: list(owners) for text, owners in known.removed_by.get(audit.id, {}).items()}
    owner_of = {i: pool[old[i]].pop(0)[0] for i in removed if pool.get(old[i])}
    writes = {owner[1] for owner in owner_of.values() if owner[0] == "write"}
    dead = set(
        WriteGuardianAudit.objects.filter(id__in=writes).exclude(status=Status.WRITTEN).values_list("id", flat=True)
    )
    dropped = {i for i, owner in owner_of.items() if owner[0] == "write" and owner[1] in dead}
    return "".join(line for i, line in enumerate(old) if i not in dropped)


def relabel(old: str | None, new: str | None, known: Blame, audit_id: str) -> Blame:
    """The blame of ``new``, the revert of ``audit_id`` applied to ``old`` (whose blame is ``known``): kept
    lines keep theirs, a line put back has what it had when the write removed it."""
    a, b = lines_of(old), lines_of(new)
    owners: list[Owner] = []
    roots: list[frozenset[str]] = []
    for tag, i1, i2, j1, j2 in Matcher(None, a, b).get_opcodes():
        if tag == "equal":
            owners += known.owners[i1:i2]
            roots += known.roots[i1:i2]
            continue
        for line in b[j1:j2]:
            owner, root = known.restored(audit_id, line) or (("rollback", audit_id), frozenset())
            owners.append(owner)
            roots.append(root)
    return Blame(b, owners, roots, known.removed_by)
