"""Rollback: undo one audited write, or a whole session's, without losing anything written since.

**The invariant.** Every line of a memory file is owned by a live write, a hand edit (or the file as first
seen), or a rollback that restored it; a line whose only owner is a rolled-back write is never in the file.
Ownership is ``git blame`` over the file's versions (``blame``): a version's new lines are its own, a
line a rollback put back keeps the owner it had when its write removed it. Two rules keep the invariant:

- a rollback puts back only lines its write removed, and of those only the ones still owned by something
  live (``revert_target``): a line that another rollback took out does not come back through this one;
- ``force`` reverts only the lines the write itself changed (its diff hunks): its lines go, as written or as
  edited since (a later edit inside a line the write added), and the pre-write text of those hunks is put
  back; everywhere else the current file wins. It never restores text from the before-snapshot that the write
  did not touch. Blank lines and a heading that lines of other owners still sit under are structure: a heading
  a rolled-back write created stays while such lines live under it.

``rollback_write(audit, reason=…, requested_by=…, force=False)``:

1. Lock the file; reconcile (a hand edit since the last known version becomes a version of its own).
2. Refuse (409) an audit already rolled back, or one that did not write.
3. If the file still equals the audit's after-snapshot, restore the before-snapshot (a file the write
   created is removed). Otherwise revert only that write's change on top of the current content with a
   three-way merge (``merge3``: base = after-snapshot, ours = current file, theirs = the revert target);
   where merge3 reports a conflict the region is refined line by line, so a later line added next to
   the reverted one (the usual case: two facts appended one after the other) is not a conflict.
4. If later changes overlap the write's lines, raise RollbackConflict naming the later audits or hand
   edits, and change nothing; with ``force`` the write's hunks are reverted as above.
5. Write-ahead: commit the ``Rollback`` (with the snapshot of the content being replaced and the audit's
   previous status) and mark the file pending on the audit; write the file; then, in one transaction,
   mark the audit ``rolled_back`` and record a ``rollback`` file version. A crash in between is finished
   by the reconciler from what the disk holds.
6. Report what happened from the file: ``rollback.change`` lists the lines removed and restored, measured by
   diffing the file before and after (empty when the write's lines were already gone).

``preview_rollback`` is the same plan as a dry run (the admin's confirmation page shows its exact diff or its
conflict, and a forced one's own diff). ``rollback_session`` plans every written audit of a session (newest
first) in memory and applies only if all are clean, or with ``partial`` the clean ones; ``dry_run`` only
reports; each item carries its measured change and the result says when no file changed.
"""

from __future__ import annotations

import datetime as dt
import difflib
import logging
import re
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.db import transaction
from merge3 import Merge3

from guardian_app.errors import GuardianError, NotRollbackable, RollbackConflict, RollbackDisabled
from guardian_app.models import FileSnapshot, FileVersion, Rollback, WorkspaceFile, WriteGuardianAudit
from guardian_app.write import workspace
from guardian_app.write.diffs import Matcher, lines_of, unified_diff
from reflection_site.errors import NotFound

logger = logging.getLogger(__name__)
_HEADING_RE = re.compile(r"^#{1,6}\s")

Status = WriteGuardianAudit.Status
MAX_CULPRIT_SCAN = 200
# A later line whose words are this alike (difflib's ratio) to a line of the write is that line, edited.
EDITED_LINE_SIMILARITY = 0.7
# Appended during a merge only to the lines of the current file: the write's own lines (they go wherever they
# are), lines edited from them, and other lines with the text of one of the write's (not taken for it).
_FOREIGN, _MINE, _EDITED = "\x00", "\x01", "\x02"
_MARKS = _FOREIGN + _MINE + _EDITED


class RollbackStale(GuardianError):
    """The file changed between a dry run an operator saw and the confirmation; nothing was changed."""

    code = "rollback_stale"
    status = HTTPStatus.CONFLICT


# --- The merge -----------------------------------------------------------------------------------
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


def _is_heading(line: str) -> bool:
    return bool(_HEADING_RE.match(line.rstrip("\r\n")))


def _words(line: str) -> list[str]:
    return line.split()


def is_edit_of(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` edited (a word changed, words added), not another line: their words are at least
    EDITED_LINE_SIMILARITY alike (difflib's ratio over words; over characters two facts written to one template,
    "Prefers green tea" and "Prefers black coffee", look alike). Headings and blank lines are structure: never."""
    if not old.strip() or not new.strip() or _is_heading(old) or _is_heading(new):
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
        if drop[j] and _is_heading(line) and not any(_is_heading(x) for x in hunks[hunk_of[origin[j]]][2]):
            k = j + 1
            while k < len(ours) and not _is_heading(ours[k]):
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
    return bool(line.strip()) and not _is_heading(line)


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


# --- Line ownership ------------------------------------------------------------------------------
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


@dataclass
class Roles:
    """What each line of the current file is to the write being rolled back."""

    mine: list[bool]  # the write's own line
    edited: list[bool]  # another's line edited from one of the write's (a later edit inside it)


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


@dataclass(frozen=True)
class LineChange:
    """What a rollback did to the file, measured by diffing it before and after."""

    diff: str
    removed: list[str]
    restored: list[str]

    @property
    def changed(self) -> bool:
        return bool(self.diff)

    def as_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "lines_removed": self.removed,
            "lines_restored": self.restored,
            "diff": self.diff,
        }

    def summary(self) -> str:
        if not self.changed:
            return "the file did not change (the write's lines were already gone)"
        return f"{len(self.removed)} line(s) removed, {len(self.restored)} restored"


def measure_change(name: str, old: str | None, new: str | None) -> LineChange:
    diff = unified_diff(old, new, name)
    removed, restored = [], []
    for tag, i1, i2, j1, j2 in Matcher(None, lines_of(old), lines_of(new)).get_opcodes():
        if tag != "equal":
            removed += [line.rstrip("\r\n") for line in lines_of(old)[i1:i2]]
            restored += [line.rstrip("\r\n") for line in lines_of(new)[j1:j2]]
    return LineChange(diff, removed, restored)


def rollback_change(rollback: Rollback) -> LineChange:
    """A recorded rollback's change to its file (from its version's snapshots), for reports after the fact."""
    if getattr(rollback, "change", None) is not None:
        return rollback.change
    version = FileVersion.objects.filter(rollback=rollback).select_related("snapshot").first()
    replaced = rollback.replaced_snapshot.content if rollback.replaced_snapshot_id else None
    restored = version.snapshot.content if version is not None and version.snapshot_id else None
    return measure_change(rollback.audit.target_file, replaced, restored)


# --- Checks and conflict reports -----------------------------------------------------------------
def _snapshot_text(snapshot: Any) -> str | None:
    return snapshot.content if snapshot is not None else None


def check_rollbackable(audit: WriteGuardianAudit) -> None:
    if not settings.WRITE_GUARDIAN_ENABLE_ROLLBACK:
        raise RollbackDisabled("Rollback is disabled (WRITE_GUARDIAN_ENABLE_ROLLBACK=false).")
    if audit.status == Status.ROLLED_BACK:
        rollback = Rollback.objects.filter(audit=audit).first()
        when = f" on {rollback.rolled_back_at:%Y-%m-%d %H:%M:%S} by {rollback.rolled_back_by}" if rollback else ""
        raise NotRollbackable(f"Audit {audit.id} was already rolled back{when}.", code="already_rolled_back")
    if audit.status != Status.WRITTEN:
        raise NotRollbackable(
            f"Audit {audit.id} did not write anything (status {audit.status}); there is nothing to roll back.",
            code="nothing_to_roll_back",
        )
    if audit.after_snapshot_id is None:
        raise NotRollbackable(f"Audit {audit.id} has no after-snapshot to roll back from.", code="nothing_to_roll_back")


def _later_versions(audit: WriteGuardianAudit) -> list[FileVersion]:
    written = FileVersion.objects.filter(audit=audit, kind=FileVersion.Kind.WRITE).order_by("seq").first()
    if written is None:
        return []
    return list(
        FileVersion.objects.filter(file_name=audit.target_file, seq__gt=written.seq)
        .select_related("snapshot", "audit", "rollback")
        .order_by("seq")[: MAX_CULPRIT_SCAN + 1]
    )


def describe_version(version: FileVersion) -> str:
    when = f"{version.created_at:%Y-%m-%d %H:%M:%S}"
    if version.kind == FileVersion.Kind.WRITE and version.audit_id:
        fact = (version.audit.candidate_fact or "")[:60]
        return f"write {version.audit_id} ({fact!r}, {when})"
    if version.kind == FileVersion.Kind.ROLLBACK:
        return f"rollback of {version.audit_id} ({when})"
    if version.kind == FileVersion.Kind.AGENT_EDIT:
        return f"agent edit {version.id} ({when})"
    return f"hand edit {version.id} ({when})"


def conflict_for(audit: WriteGuardianAudit, plan: RevertPlan) -> RollbackConflict:
    """A RollbackConflict naming the later versions that introduced the overlap."""
    after = _snapshot_text(audit.after_snapshot) or ""
    before = _snapshot_text(audit.before_snapshot)
    later = _later_versions(audit)
    culprits: list[FileVersion] = []
    if len(later) <= MAX_CULPRIT_SCAN:
        overlapping = False
        for version in later:
            now = plan_revert(after, workspace.version_content(version), before)
            if now.conflicts and not overlapping:
                culprits.append(version)
            overlapping = bool(now.conflicts)
    if not culprits:
        culprits = later[:MAX_CULPRIT_SCAN]
    later_audits = [
        v.audit_id
        for v in culprits
        if v.kind != FileVersion.Kind.HAND_EDIT and v.kind != FileVersion.Kind.INITIAL and v.audit_id
    ]
    # The agent's own edits (openclaw profile) are listed with the hand edits: changes no audit made.
    outside = (FileVersion.Kind.HAND_EDIT, FileVersion.Kind.AGENT_EDIT, FileVersion.Kind.INITIAL)
    hand_edits = [v.id for v in culprits if v.kind in outside]
    named = "; ".join(describe_version(v) for v in culprits) or "changes made since"
    return RollbackConflict(
        f"Rolling back {audit.id} would overwrite later changes to {audit.target_file} that overlap it: {named}. "
        "Nothing was changed. Roll those back first, edit the file by hand, or force the rollback.",
        later_audits=later_audits,
        hand_edits=hand_edits,
        details={
            "audit_id": audit.id,
            "file_name": audit.target_file,
            "conflicts": [c.as_dict() for c in plan.conflicts[:10]],
            "later_versions": [
                {
                    "version_id": v.id,
                    "seq": v.seq,
                    "kind": v.kind,
                    "audit_id": v.audit_id,
                    "created_at": v.created_at.isoformat(),
                }
                for v in culprits
            ],
        },
    )


# --- Applying ------------------------------------------------------------------------------------
def _apply_locked(
    audit: WriteGuardianAudit,
    plan: RevertPlan,
    current: str | None,
    *,
    reason: str,
    requested_by: str,
    forced: bool,
    replaced: FileSnapshot | None | object = ...,
    seq: int | None = None,
) -> Rollback:
    """Write the planned content and record the rollback (file lock held).

    Write-ahead, as a guarded write is: the ``Rollback`` row is committed first with the file marked
    pending on the audit (which still says ``written``); then the file changes; then the audit becomes
    ``rolled_back`` and the file gets its version. A crash in between is finished by the reconciler
    (``workspace.sync``) from what the disk holds; an I/O error puts the file back and removes the row.
    """
    name = audit.target_file
    with transaction.atomic():
        workspace.lock_row(name)
        previous_status = audit.status
        if not WriteGuardianAudit.objects.filter(id=audit.id, status=Status.WRITTEN).exists():
            audit.refresh_from_db()
            check_rollbackable(audit)
        # The same snapshot as the before-snapshot when the whole of it comes back (stored once per content).
        restored = workspace.snapshot_of(name, plan.content)
        rollback = Rollback.objects.create(
            audit=audit,
            rolled_back_by=requested_by,
            reason=reason,
            replaced_snapshot=workspace.snapshot_of(name, current) if replaced is ... else replaced,
            restored_snapshot=restored,
            previous_status=previous_status,
            method=plan.method,
            forced=forced and bool(plan.conflicts),
        )
        WorkspaceFile.objects.filter(file_name=name).update(pending_audit=audit)
    if plan.content != current:
        try:
            if plan.content is None:
                workspace.remove_file(name)
            else:
                workspace.write_file(name, plan.content)
        except OSError:
            # The failure may have come after the rename (the folder's fsync): the file gets its content back.
            if not workspace.put_back(name, current):
                workspace.sync(name)  # The rolled-back content stayed: record the rollback.
            with transaction.atomic():
                Rollback.objects.filter(id=rollback.id, audit__status=Status.WRITTEN).delete()
                WorkspaceFile.objects.filter(file_name=name, pending_audit=audit).update(pending_audit=None)
            raise
    with transaction.atomic():
        workspace.lock_row(name)
        WriteGuardianAudit.objects.filter(id=audit.id).update(status=Status.ROLLED_BACK)
        workspace.record_version(
            name,
            plan.content,
            kind=FileVersion.Kind.ROLLBACK,
            audit=audit,
            rollback=rollback,
            previous_content=current,
            snapshot=restored,
            seq=seq,
        )
    audit.status = Status.ROLLED_BACK
    logger.info("rolled back %s of %s (%s) by %s", audit.id, name, plan.method, requested_by)
    return rollback


def _clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise GuardianError("Give a reason for the rollback.", code="reason_required", status=422)
    return reason


def _plan_locked(
    audit: WriteGuardianAudit, state: workspace.FileState, *, force: bool
) -> tuple[RevertPlan, RollbackConflict | None]:
    """The revert of ``audit`` on the file as ``state`` holds it (file lock held, after ``sync``)."""
    current = state.content
    before = _snapshot_text(audit.before_snapshot)
    unchanged = current is not None and state.content_hash == audit.after_snapshot.content_hash
    after = audit.after_snapshot.content
    known = blame(audit.target_file)
    target = revert_target(audit, before, after, known)
    if unchanged and target == before:
        plan = RevertPlan(before, "restore")  # Unchanged since the write: no need to merge.
    else:
        plan = plan_revert(after, current, target, force=force, roles=roles_of(audit.id, current, known))
    conflict = conflict_for(audit, plan) if plan.conflicts else None
    return plan, conflict


def _fresh(audit: WriteGuardianAudit) -> WriteGuardianAudit:
    return WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot").get(id=audit.id)


@dataclass
class RollbackPreview:
    """A dry run of one rollback: what the file would become (``change``) or the conflict that stops it."""

    audit: WriteGuardianAudit
    force: bool
    content_hash: str  # of the file the plan was made on ("" for no file): a confirmation must match it
    plan: RevertPlan
    change: LineChange
    conflict: RollbackConflict | None

    @property
    def method(self) -> str:
        return self.plan.method


def preview_rollback(audit: WriteGuardianAudit, *, force: bool = False) -> RollbackPreview:
    """Run the rollback as a dry run: the exact change it would make now, or its conflict; nothing is written
    but the record of a hand edit made since the last look (as any look at the file does).

    Raises NotRollbackable, RollbackDisabled, FileBusy as ``rollback_write`` does.
    """
    check_rollbackable(audit)
    name = audit.target_file
    with workspace.file_lock(name):
        state = workspace.sync(name)
        fresh = _fresh(audit)
        check_rollbackable(fresh)
        plan, conflict = _plan_locked(fresh, state, force=force)
    change = measure_change(name, state.content, state.content if conflict and not force else plan.content)
    return RollbackPreview(fresh, force, state.content_hash or "", plan, change, None if force else conflict)


def rollback_write(
    audit: WriteGuardianAudit,
    *,
    reason: str,
    requested_by: str,
    force: bool = False,
    expected_hash: str | None = None,
) -> Rollback:
    """Undo one write and keep everything written since (steps in the module docstring).

    The returned ``Rollback`` carries ``change``: the lines removed and restored, measured by diffing the file
    before and after. ``expected_hash`` (a confirmation page's): the file must still be the one the operator
    saw, or RollbackStale is raised and nothing changes.

    Raises NotRollbackable (already rolled back, or nothing written), RollbackConflict (later changes
    overlap; nothing changed), RollbackStale, RollbackDisabled, FileBusy.
    """
    reason = _clean_reason(reason)
    check_rollbackable(audit)
    name = audit.target_file
    with workspace.file_lock(name):
        state = workspace.sync(name)
        fresh = _fresh(audit)
        check_rollbackable(fresh)
        if expected_hash is not None and expected_hash != (state.content_hash or ""):
            raise RollbackStale(
                f"{name} changed since the rollback of {audit.id} was shown; nothing was changed. Look again."
            )
        current = state.content
        plan, conflict = _plan_locked(fresh, state, force=force)
        if conflict is not None and not force:
            raise conflict
        # After sync the file holds its current version's content: that snapshot is what is replaced.
        replaced = FileSnapshot(id=state.snapshot_id) if state.snapshot_id and current is not None else None
        rollback = _apply_locked(
            fresh,
            plan,
            current,
            reason=reason,
            requested_by=requested_by or "system",
            forced=force,
            replaced=replaced,
            seq=state.seq + 1,  # The lock is held: the current version is the last one.
        )
    rollback.change = measure_change(name, current, plan.content)
    audit.status = fresh.status
    return rollback


# --- Session rollback ----------------------------------------------------------------------------
@dataclass
class PlannedRollback:
    audit: WriteGuardianAudit
    status: str  # clean | conflict | rolled_back
    message: str = ""
    conflict: RollbackConflict | None = None
    plan: RevertPlan | None = None
    current: str | None = None
    rollback: Rollback | None = None
    change: LineChange | None = None  # clean or rolled back: the change to the file, measured by diffing it

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "audit_id": self.audit.id,
            "target_file": self.audit.target_file,
            "candidate_fact": self.audit.candidate_fact,
            "status": self.status,
            "message": self.message,
            "rollback_id": self.rollback.id if self.rollback else None,
            "changed": self.change.changed if self.change else False,
            "lines_removed": self.change.removed if self.change else [],
            "lines_restored": self.change.restored if self.change else [],
        }
        if self.conflict is not None:
            out["later_audits"] = self.conflict.later_audits
            out["hand_edits"] = self.conflict.hand_edits
        return out


@dataclass
class SessionRollback:
    session_id: str
    dry_run: bool
    partial: bool
    applied: bool
    items: list[PlannedRollback]

    @property
    def conflicts(self) -> list[PlannedRollback]:
        return [item for item in self.items if item.status == "conflict"]

    @property
    def files_changed(self) -> bool:
        """Whether the files changed (applied) or would change (a dry run's clean items), by their diffs."""
        wanted = "clean" if self.dry_run else "rolled_back"
        return any(i.change is not None and i.change.changed for i in self.items if i.status == wanted)

    def summary(self) -> str:
        done = sum(1 for i in self.items if i.status == "rolled_back")
        if not self.items:
            return f"Session {self.session_id} has no written audits to roll back; nothing changed."
        if self.dry_run:
            clean = sum(1 for i in self.items if i.status == "clean")
            tail = "" if self.files_changed else "; the files would not change"
            return f"Dry run: {clean} of {len(self.items)} write(s) can be rolled back cleanly{tail}."
        if not self.applied:
            return f"{len(self.conflicts)} write(s) conflict; nothing was rolled back and nothing changed."
        removed = sum(len(i.change.removed) for i in self.items if i.status == "rolled_back" and i.change)
        restored = sum(len(i.change.restored) for i in self.items if i.status == "rolled_back" and i.change)
        if not self.files_changed:
            return f"Marked {done} write(s) rolled back; their lines were already gone, so no file changed."
        return f"Rolled back {done} write(s): {removed} line(s) removed, {restored} restored."

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "dry_run": self.dry_run,
            "partial": self.partial,
            "applied": self.applied,
            "planned": len(self.items),
            "rolled_back": sum(1 for i in self.items if i.status == "rolled_back"),
            "conflicts": len(self.conflicts),
            "changed": self.files_changed,
            "summary": self.summary(),
            "items": [item.as_dict() for item in self.items],
        }


def rollback_session(
    session_id: str,
    *,
    reason: str,
    requested_by: str,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    dry_run: bool = False,
    partial: bool = False,
) -> SessionRollback:
    """Plan every written audit of the session (within since/until), newest first, in memory; apply all of
    them only if every one is clean, or with ``partial`` the clean ones; ``dry_run`` only reports.

    Raises NotFound for an unknown session, RollbackDisabled, FileBusy. Conflicts are reported per audit
    (the API answers 409 when they stopped an all-or-nothing rollback).
    """
    from sessions_app.models import ConversationSession

    reason = _clean_reason(reason)
    if not settings.WRITE_GUARDIAN_ENABLE_ROLLBACK:
        raise RollbackDisabled("Rollback is disabled (WRITE_GUARDIAN_ENABLE_ROLLBACK=false).")
    if not ConversationSession.objects.filter(id=session_id).exists():
        raise NotFound(f"No session {session_id!r}.")

    def selected() -> list[WriteGuardianAudit]:
        audits = WriteGuardianAudit.objects.filter(session_id=session_id, status=Status.WRITTEN)
        if since is not None:
            audits = audits.filter(created_at__gte=since)
        if until is not None:
            audits = audits.filter(created_at__lte=until)
        return list(audits.select_related("before_snapshot", "after_snapshot").order_by("-created_at", "-id"))

    names = sorted({a.target_file for a in selected()})
    with workspace.file_locks(names):
        for name in names:
            workspace.reconcile(name)
        audits = selected()  # Again, under the locks.
        simulated: dict[str, str | None] = {name: workspace.read_file(name) for name in names}
        known: dict[str, Blame | None] = {name: blame(name) for name in names}
        items: list[PlannedRollback] = []
        for audit in audits:
            name = audit.target_file
            current = simulated[name]
            after = _snapshot_text(audit.after_snapshot) or ""
            target = revert_target(audit, _snapshot_text(audit.before_snapshot), after, known[name])
            plan = plan_revert(after, current, target, roles=roles_of(audit.id, current, known[name]))
            if plan.conflicts:
                conflict = conflict_for(audit, plan)
                items.append(
                    PlannedRollback(audit, "conflict", conflict.message, conflict=conflict, plan=plan, current=current)
                )
                continue
            change = measure_change(audit.target_file, current, plan.content)
            message = "can be rolled back cleanly" + ("" if change.changed else "; the file would not change")
            items.append(PlannedRollback(audit, "clean", message, plan=plan, current=current, change=change))
            blamed = known[name]
            if blamed is not None:  # The blame of the simulated file, for the next write of the session.
                known[name] = (
                    relabel(current, plan.content, blamed, audit.id) if blamed.lines == lines_of(current) else None
                )
            simulated[name] = plan.content
        result = SessionRollback(session_id, dry_run, partial, False, items)
        if dry_run or not items or (result.conflicts and not partial):
            return result
        for item in items:
            if item.status != "clean":
                continue
            assert item.plan is not None
            item.rollback = _apply_locked(
                item.audit, item.plan, item.current, reason=reason, requested_by=requested_by or "system", forced=False
            )
            item.rollback.change = item.change
            item.status, item.message = "rolled_back", f"rolled back: {item.change.summary()}"
        result.applied = any(item.status == "rolled_back" for item in items)
        return result
