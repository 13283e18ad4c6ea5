"""The rollback model (issues 8 and 17): a Hypothesis state machine and a reference model of line ownership.

Operations, in random order: writes through the guardian, hand edits (append, insert, delete, an edit inside a
line, a rewrite, removing the file), rollbacks of any audit (plain and forced), session rollbacks (all or
nothing, partial, within since/until), retries and corrections.

The reference model holds each file as a list of lines, each with its owner: the write that added it (learnt
from the write's diff: the guardian is not what is tested), the hand edit that made it (the model makes those
itself), and, for a line edited inside or updated by a later write, the line it was edited from. A rollback of
write W is predicted from ownership alone: W's own lines leave; with ``force`` so do the lines edited from
them; each line W removed comes back if its owner is still live (a live write, or a hand edit). A plain
rollback may only conflict when a line edited from one of W's is in the file, or when W removed lines that
must come back (the place to put them may be gone), and must conflict when such an edited line is there.

Checked after every step:
- the file equals the model's: exactly after writes, hand edits, retries and corrections; after a rollback
  its lines other than blank lines and headings (structure: a heading a rolled-back write created stays
  while other lines live under it) are exactly the predicted ones, as a multiset, and the lines kept keep
  their order;
- every line of every file (blank lines and headings aside) is owned by a live write, a hand edit or a
  restoring rollback: a line whose only owner is a rolled-back write is never in the file;
- every report matches the file: a rollback's ``change`` (lines removed and restored, its diff) is the diff
  of the file before and after, and applying the diffs of a session rollback's items in order to the files
  before gives the files after; "changed" is true exactly when a file changed; a refused rollback changes
  nothing; each rollback's file version holds the same diff;
- each write's before-snapshot is the previous version, each rollback's replaced snapshot the content it
  replaced, and every content Reflection saw is recoverable from the snapshots.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from guardian_app.errors import GuardianError, RollbackConflict
from guardian_app.models import FileSnapshot, FileVersion, Rollback, WorkspaceFile, WriteGuardianAudit
from guardian_app.write import history
from guardian_app.write.corrections import correct_audit
from guardian_app.write.diffs import content_hash
from guardian_app.write.guardian import retry_write, write_fact
from guardian_app.write.revert import is_edit_of
from guardian_app.write.rollback import rollback_write
from guardian_app.write.session_rollback import rollback_session
from sessions_app.models import ConversationSession, ConversationTurn, MemoryGateDecision

Status = WriteGuardianAudit.Status
FILES = ("USER.md", "MEMORY.md")
DECISION_FOR = {"USER.md": "UPDATE_USER", "MEMORY.md": "UPDATE_MEMORY"}
SESSIONS = ("channel:model:a", "channel:model:b", "channel:model:c")
WORDS = (
    "amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon marble nectar opal "
    "pepper quartz raven saffron tundra umber velvet willow xenon yarrow zephyr acorn bramble cobalt dune"
).split()
HEADING = re.compile(r"^#{1,6}\s")
MAX_EDITS = 3  # Edits inside one line; past that its words no longer make it the same line (is_edit_of).
FIGURES: Counter[str] = Counter()


@dataclass(eq=False)
class Line:
    text: str  # with its line break
    owner: tuple[str, str]  # ("write", audit id) | ("hand", step) | ("structure", "")
    origin: Line | None = None  # the line this one is an edit of
    edits: int = 0

    @property
    def content(self) -> bool:
        return bool(self.text.strip()) and not HEADING.match(self.text)

    def ancestors(self) -> list[Line]:
        out, line = [], self.origin
        while line is not None:
            out.append(line)
            line = line.origin
        return out


def content_texts(text: str | None) -> Counter[str]:
    return Counter(line for line in (text or "").splitlines(keepends=True) if line.strip() and not HEADING.match(line))


def apply_unified_diff(old: str | None, diff: str) -> str:
    """Apply a unified diff (our format, ``\\ No newline`` included) to ``old``; raises on a mismatch."""
    lines = (old or "").splitlines(keepends=True)
    out: list[str] = []
    at = 0
    rows = diff.splitlines(keepends=True)
    i = 0
    while i < len(rows):
        row = rows[i]
        if row.startswith(("---", "+++")):
            i += 1
            continue
        match = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", row)
        assert match, row
        start = int(match.group(1)) - (0 if match.group(2) == "0" else 1)
        out += lines[at:start]
        at = start
        i += 1
        while i < len(rows) and not rows[i].startswith("@@"):
            row, nxt = rows[i], rows[i + 1] if i + 1 < len(rows) else ""
            body = row[1:]
            if nxt.startswith("\\"):
                body = body.rstrip("\n")
                i += 1
            if row[0] in " -":
                assert lines[at] == body, (lines[at], body)
                at += 1
            if row[0] in " +":
                out.append(body)
            i += 1
    out += lines[at:]
    return "".join(out)


class RollbackModel(RuleBasedStateMachine):
    """See the module docstring. ``make_decision`` is the tests' fixture (tests/guardian_app/conftest.py)."""

    make_decision: Callable[..., MemoryGateDecision]

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0
        self.seen: dict[str, set[str]] = {name: set() for name in FILES}
        self.model: dict[str, list[Line] | None] = dict.fromkeys(FILES)
        self.removed_by: dict[str, list[Line]] = {}
        self.chain: dict[str, tuple[int, str | None]] = {}  # per file: the last version checked, its snapshot

    @initialize()
    def clean_slate(self) -> None:
        Rollback.objects.all().delete()
        WorkspaceFile.objects.all().delete()
        FileVersion.objects.all().delete()
        # A retry shares its decision: unlinked from it first, or deleting the audit it retried (SET_NULL) would
        # leave two audits of one decision without retry_of, which the unique constraint refuses.
        WriteGuardianAudit.objects.filter(retry_of__isnull=False).update(decision=None)
        WriteGuardianAudit.objects.all().delete()
        FileSnapshot.objects.all().delete()
        MemoryGateDecision.objects.all().delete()
        ConversationTurn.objects.all().delete()
        ConversationSession.objects.all().delete()
        for path in Path(settings.WORKSPACE_DIR).iterdir():
            if path.is_file():
                path.unlink()
        FIGURES["examples"] += 1

    # --- helpers ---------------------------------------------------------------------------------
    def path(self, name: str) -> Path:
        return Path(settings.WORKSPACE_DIR) / name

    def disk(self, name: str) -> str | None:
        path = self.path(name)
        return path.read_text() if path.exists() else None

    def text(self, name: str) -> str | None:
        lines = self.model[name]
        return None if lines is None else "".join(line.text for line in lines)

    def look(self, name: str) -> None:
        content = self.disk(name)
        if content is not None:
            self.seen[name].add(content_hash(content))

    def step(self, kind: str) -> None:
        FIGURES["steps"] += 1
        FIGURES[kind] += 1

    def status(self, audit_id: str) -> str:
        return WriteGuardianAudit.objects.values_list("status", flat=True).get(id=audit_id)

    def live(self, line: Line, dead: set[str]) -> bool:
        return not (line.owner[0] == "write" and line.owner[1] in dead)

    def dead(self) -> set[str]:
        return set(WriteGuardianAudit.objects.exclude(status=Status.WRITTEN).values_list("id", flat=True))

    def assert_recorded(self, name: str) -> None:
        row = WorkspaceFile.objects.select_related("current_version__snapshot").filter(file_name=name).first()
        version = row.current_version if row is not None else None
        recorded = version.snapshot.content if version is not None and version.snapshot_id else None
        assert self.disk(name) == recorded, f"{name} differs from its last recorded version"
        assert row is None or row.pending_audit_id is None

    def observe(self, name: str, new: str | None, owner: tuple[str, str]) -> list[Line]:
        """Learn a change the model did not make (a write): kept lines keep their owners, new ones are
        ``owner``'s (an update of a line, by ``is_edit_of``, records the line it was edited from). Returns the
        lines that left the file."""
        old = self.model[name] or []
        new_lines = (new or "").splitlines(keepends=True)
        out: list[Line] = []
        gone: list[Line] = []
        matcher = difflib.SequenceMatcher(None, [line.text for line in old], new_lines, autojunk=False)
        codes = matcher.get_opcodes()
        for tag, i1, i2, _j1, _j2 in codes:
            if tag != "equal":
                gone += old[i1:i2]
        for tag, i1, i2, j1, j2 in codes:
            if tag == "equal":
                out += old[i1:i2]
                continue
            for text in new_lines[j1:j2]:
                moved = next((line for line in gone if line.text == text), None)
                if moved is not None:  # Moved by the write (the guardian reorders a section): still its owner's.
                    gone.remove(moved)
                    out.append(moved)
                    continue
                origin = next((line for line in old[i1:i2] if is_edit_of(line.text, text)), None)
                out.append(Line(text, owner, origin, (origin.edits if origin else 0)))
        self.model[name] = None if new is None else out
        return gone

    def adopt(self, name: str, predicted: list[Line], previous: list[Line]) -> None:
        """After a rollback: the file's lines other than structure must be ``predicted`` exactly (as a multiset),
        the lines kept in their order; the model takes the file's lines with their owners."""
        disk = self.disk(name)
        got = content_texts(disk)
        want = Counter(line.text for line in predicted if line.content)
        assert got == want, (
            f"{name} after the rollback holds {sorted((got - want).elements())} more and "
            f"{sorted((want - got).elements())} less than the model"
        )
        pool: dict[str, list[Line]] = {}
        for line in predicted:
            pool.setdefault(line.text, []).append(line)
        for line in previous:  # Structure lines keep theirs where they stay.
            if not line.content and line not in predicted:
                pool.setdefault(line.text, []).append(line)
        lines: list[Line] = []
        for text in (disk or "").splitlines(keepends=True):
            candidates = pool.get(text)
            lines.append(candidates.pop(0) if candidates else Line(text, ("structure", "")))
        order = {id(line): i for i, line in enumerate(previous)}
        kept = [order[id(line)] for line in lines if id(line) in order and line.content]
        assert kept == sorted(kept), f"{name}: the rollback reordered lines it kept"
        self.model[name] = None if disk is None else lines

    def predict(self, name: str, audit_id: str, *, force: bool, dead: set[str]) -> tuple[list[Line], bool, bool]:
        """(the lines after reverting ``audit_id``, whether a plain revert must conflict, whether it may)."""
        current = self.model[name] or []
        mine = ("write", audit_id)
        edited = [
            line
            for line in current
            if line.content and line.owner != mine and any(a.owner == mine and a.content for a in line.ancestors())
        ]
        restored = [
            line
            for line in self.removed_by.get(audit_id, [])
            if line.content and line not in current and self.live(line, dead)
        ]
        out = [line for line in current if not (line.content and (line.owner == mine or (force and line in edited)))]
        return out + restored, bool(edited), bool(edited or restored)

    def check_change(self, name: str, change: Any, old: str | None, new: str | None) -> None:
        """A rollback's report is the diff of its file before and after."""
        assert change.changed == ((old or "") != (new or "")), (change.changed, old, new)
        assert apply_unified_diff(old, change.diff) == (new or ""), "the reported diff does not give the file"
        removed, restored = Counter(change.removed), Counter(change.restored)
        before = Counter(line.rstrip("\r\n") for line in (old or "").splitlines())
        after = Counter(line.rstrip("\r\n") for line in (new or "").splitlines())
        assert removed - restored == before - after and restored - removed == after - before
        minus = [r[1:].rstrip("\n") for r in change.diff.splitlines() if r.startswith("-") and not r.startswith("---")]
        plus = [r[1:].rstrip("\n") for r in change.diff.splitlines() if r.startswith("+") and not r.startswith("+++")]
        assert Counter(minus) == removed and Counter(plus) == restored

    def pick_audit(self, pick: int, *, written_only: bool) -> WriteGuardianAudit | None:
        audits = list(WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot").order_by("id"))
        written = [a for a in audits if a.status == Status.WRITTEN]
        choices = written if written_only and written else audits
        return choices[pick % len(choices)] if choices else None

    def record_write(self, audit: WriteGuardianAudit, name: str, pre: str | None) -> None:
        assert pre == self.text(name), f"{name} differs from the model before a write"
        post = self.disk(name)
        if audit.status == Status.WRITTEN:
            self.removed_by[audit.id] = self.observe(name, post, ("write", audit.id))
            self.look(name)
        else:
            assert post == pre, f"an audit {audit.status} changed {name}"
        self.assert_recorded(name)

    # --- rules -----------------------------------------------------------------------------------
    @rule(
        name=st.sampled_from(FILES),
        session=st.sampled_from(SESSIONS),
        words=st.lists(st.sampled_from(WORDS), min_size=4, max_size=4, unique=True),
    )
    def write(self, name: str, session: str, words: list[str]) -> None:
        self.counter += 1
        self.look(name)
        pre = self.disk(name)
        fact = f"{words[0].title()} {words[1]} likes {words[2]} {words[3]} (day {self.counter})."
        audit = write_fact(self.make_decision(DECISION_FOR[name], fact, session_id=session))
        self.record_write(audit, name, pre)
        self.step(f"write_{audit.status}")

    @rule(
        pick=st.integers(0, 10_000),
        new_fact=st.booleans(),
        words=st.lists(st.sampled_from(WORDS), min_size=4, max_size=4, unique=True),
    )
    def retry_or_correct(self, pick: int, new_fact: bool, words: list[str]) -> None:
        """A retry (with the audit's fact or a new one), or every third time a correction (changes no file)."""
        if pick % 3 == 0:
            self.correction(pick // 3, new_fact)
            return
        audit = self.pick_audit(pick, written_only=False)
        if audit is None:
            return
        self.counter += 1
        name = audit.target_file
        self.look(name)
        pre = self.disk(name)
        fact = f"{words[0].title()} {words[1]} likes {words[2]} {words[3]} (day {self.counter})." if new_fact else None
        try:
            new = retry_write(audit, candidate_fact=fact, requested_by="model")
        except GuardianError:
            assert self.disk(name) == pre
            self.step("retry_refused")
            return
        self.record_write(new, name, pre)
        self.step(f"retry_{new.status}")

    def correction(self, pick: int, refused: bool) -> None:
        audit = self.pick_audit(pick, written_only=False)
        if audit is None:
            return
        before = {name: self.disk(name) for name in FILES}
        try:
            correct_audit(audit, status="refused" if refused else "written", reason="model", corrected_by="model")
        except GuardianError:
            self.step("correction_refused")
        else:
            self.step("correction")
        assert {name: self.disk(name) for name in FILES} == before, "a correction changed a file"

    @rule(name=st.sampled_from(FILES), dice=st.integers(0, 99), where=st.integers(0, 10_000))
    def hand_edit(self, name: str, dice: int, where: int) -> None:
        # Mostly small edits next to or inside the facts (where conflicts come from), sometimes a rewrite or removal.
        how = "append" if dice < 20 else "insert" if dice < 35 else "delete" if dice < 50 else "modify" if dice < 90 else "rewrite" if dice < 95 else "remove"  # fmt: skip
        self.counter += 1
        assert self.disk(name) == self.text(name), f"{name} differs from the model"
        old = list(self.model[name] or [])
        owner = ("hand", str(self.counter))
        note = Line(f"- Hand note {self.counter}.\n", owner)
        facts = [i for i, line in enumerate(old) if line.content and line.edits < MAX_EDITS]
        if how == "modify" and facts and dice < 80:
            where = facts[where % len(facts)]  # Mostly inside a fact (an edit inside a line a write added).
        if how == "modify" and old and old[where % len(old)].edits >= MAX_EDITS:
            how = "append"
        new: list[Line] | None
        if how == "append" or (not old and how != "remove"):
            new = [*old, note]
        elif how == "insert":
            at = where % (len(old) + 1)
            new = old[:at] + [note] + old[at:]
        elif how == "delete":
            at = where % len(old)
            new = old[:at] + old[at + 1 :]
        elif how == "modify":
            at = where % len(old)
            line = old[at]
            text = line.text.rstrip("\n") + f" (edited {self.counter})\n"
            new = [*old]
            new[at] = Line(text, owner, line if line.content else None, line.edits + 1)
        elif how == "rewrite":
            new = [Line(f"# Rewritten {self.counter}\n", owner), note]
        else:
            new = None
        self.model[name] = new
        if new is None:
            if self.path(name).exists():
                self.path(name).unlink()
        else:
            self.path(name).write_text("".join(line.text for line in new))
        self.step(f"hand_{how}")

    def edited_writes(self) -> list[str]:
        """Written audits with a line edited since (inside it, by hand or by a later write) in the file."""
        found: set[str] = set()
        for name in FILES:
            for line in self.model[name] or []:
                if line.content:
                    found |= {a.owner[1] for a in line.ancestors() if a.owner[0] == "write" and a.content}
        return sorted(
            found & set(WriteGuardianAudit.objects.filter(status=Status.WRITTEN).values_list("id", flat=True))
        )

    @rule(pick=st.integers(0, 10_000), any_audit=st.integers(0, 9), force=st.booleans())
    def rollback(self, pick: int, any_audit: int, force: bool) -> None:
        # Mostly a written audit, half the time one with a later edit inside its lines (where conflicts and
        # forced rollbacks come from), sometimes any audit (rolled back, refused: those are refused).
        edited = self.edited_writes() if 1 <= any_audit <= 5 else []
        if edited:
            audit = WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot").get(
                id=edited[pick % len(edited)]
            )
        else:
            audit = self.pick_audit(pick, written_only=any_audit != 0)
        if audit is None:
            return
        name = audit.target_file
        history.check_drift([name])
        self.look(name)
        pre = self.disk(name)
        assert pre == self.text(name), f"{name} differs from the model"
        status_before = audit.status
        rollbacks_before = Rollback.objects.count()
        dead = self.dead()
        try:
            rollback = rollback_write(audit, reason="model", requested_by="model", force=force)
        except GuardianError as exc:
            assert self.disk(name) == pre, "a refused rollback changed the file"
            audit.refresh_from_db()
            assert audit.status == status_before and Rollback.objects.count() == rollbacks_before
            if isinstance(exc, RollbackConflict):
                assert not force, "a forced rollback never conflicts"
                _, must, may = self.predict(name, audit.id, force=False, dead=dead)
                assert may, f"a conflict with no later edit inside the write's lines: {exc.message}"
                self.step("rollback_conflict")
            else:
                assert status_before != Status.WRITTEN, exc
                self.step("rollback_refused")
            return
        assert status_before == Status.WRITTEN
        post = self.disk(name)
        self.look(name)
        previous = list(self.model[name] or [])
        predicted, must, _ = self.predict(name, audit.id, force=force, dead=dead | {audit.id})
        assert force or not must, "a plain rollback went over a later edit inside the write's lines"
        try:
            self.adopt(name, predicted, previous)
        except AssertionError as exc:
            removed = [(line.text, line.owner, self.live(line, dead)) for line in self.removed_by.get(audit.id, [])]
            raise AssertionError(
                f"{exc}\nrollback of {audit.id} force={force} method={rollback.method}\nbefore-snapshot:\n"
                f"{audit.before_snapshot.content if audit.before_snapshot else None!r}\nafter-snapshot:\n"
                f"{audit.after_snapshot.content!r}\nfile before:\n{pre!r}\nfile after:\n{post!r}\n"
                f"lines the write removed (text, owner, live): {removed}\n"
                f"the model before: {[(line.text, line.owner, bool(line.origin)) for line in previous]}"
            ) from None
        self.check_change(name, rollback.change, pre, post)
        version = FileVersion.objects.get(rollback=rollback)
        assert version.diff == rollback.change.diff, "the file version and the report disagree"
        withheld = [line for line in self.removed_by.get(audit.id, []) if line.content and not self.live(line, dead)]
        if withheld:
            self.step("rollback_withheld_dead_lines")
        if rollback.change.restored:
            self.step("rollback_restored_lines")
        self.step("rollback_forced" if rollback.forced else f"rollback_{rollback.method}")
        self.assert_recorded(name)

    @rule(
        session=st.sampled_from(SESSIONS),
        partial=st.booleans(),
        window=st.sampled_from(["all", "since", "until"]),
        pick=st.integers(0, 10_000),
    )
    def session_rollback(self, session: str, partial: bool, window: str, pick: int) -> None:
        if not ConversationSession.objects.filter(id=session).exists():
            return
        history.check_drift(list(FILES))
        for name in FILES:
            self.look(name)
            assert self.disk(name) == self.text(name), f"{name} differs from the model"
        since = until = None
        times = list(
            WriteGuardianAudit.objects.filter(session_id=session)
            .order_by("created_at")
            .values_list("created_at", flat=True)
        )
        if window != "all" and times:
            at: dt.datetime = times[pick % len(times)]
            since, until = (at, None) if window == "since" else (None, at)
        pre = {name: self.disk(name) for name in FILES}
        dead = self.dead()
        result = rollback_session(
            session, reason="model", requested_by="model", partial=partial, since=since, until=until
        )
        post = {name: self.disk(name) for name in FILES}
        selected = WriteGuardianAudit.objects.filter(session_id=session, id__in=[i.audit.id for i in result.items])
        if since is not None:
            assert not selected.filter(created_at__lt=since).exists()
        if until is not None:
            assert not selected.filter(created_at__gt=until).exists()
        if not result.applied:
            assert post == pre, "a session rollback that did not apply changed nothing"
            assert not result.files_changed and "nothing" in result.summary()
            self.step("session_refused" if result.conflicts else "session_empty")
            return
        working = dict(pre)
        starting = {name: list(self.model[name] or []) for name in FILES}
        for item in result.items:
            name = item.audit.target_file
            if item.status == "conflict":
                _, _, may = self.predict(name, item.audit.id, force=False, dead=dead)
                assert may, f"a conflict with no later edit inside the write's lines: {item.message}"
                continue
            assert item.status == "rolled_back", item.status
            predicted, must, _ = self.predict(name, item.audit.id, force=False, dead=dead | {item.audit.id})
            assert not must, "a session rollback went over a later edit inside a write's lines"
            self.model[name] = predicted
            assert item.change is not None and item.rollback is not None
            self.check_change(name, item.change, working[name], apply_unified_diff(working[name], item.change.diff))
            working[name] = (
                apply_unified_diff(working[name], item.change.diff) if item.change.changed else working[name]
            )
            assert FileVersion.objects.get(rollback=item.rollback).diff == item.change.diff
        for name in FILES:
            assert (working[name] or "") == (post[name] or ""), "the items' diffs do not give the file"
            self.adopt(name, self.model[name] or [], starting[name])
            self.look(name)
            self.assert_recorded(name)
        assert result.files_changed == (post != pre)
        if not result.files_changed:
            assert "no file changed" in result.summary()
        self.step("session_partial" if result.conflicts else "session_applied")

    def teardown(self) -> None:
        for name in FILES:
            stored = set(FileSnapshot.objects.filter(file_name=name).values_list("content_hash", flat=True))
            FIGURES["contents_seen"] += len(self.seen[name])
            FIGURES["contents_lost"] += len(self.seen[name] - stored)

    # --- invariants ------------------------------------------------------------------------------
    @invariant()
    def no_line_of_a_rolled_back_write_is_in_a_file(self) -> None:
        dead = self.dead()
        for name in FILES:
            for line in self.model[name] or []:
                if line.content:
                    assert self.live(line, dead), (
                        f"{line.text!r} in {name} is owned only by rolled-back {line.owner[1]}"
                    )

    @invariant()
    def history_is_a_chain(self) -> None:
        """Each write's before-snapshot is the previous version; each rollback replaced the previous version
        (checked on the versions added since the last step: a history is only ever appended to)."""
        for name in FILES:
            seq, previous = self.chain.get(name, (0, None))
            rows = (
                FileVersion.objects.filter(file_name=name, seq__gt=seq)
                .order_by("seq")
                .values_list(
                    "seq",
                    "kind",
                    "snapshot_id",
                    "audit__before_snapshot_id",
                    "audit__after_snapshot_id",
                    "rollback__replaced_snapshot_id",
                )
            )
            for seq, kind, snapshot, before, after, replaced in rows:
                if kind == FileVersion.Kind.WRITE:
                    assert before == previous, (name, seq)
                    assert after == snapshot, (name, seq)
                if kind == FileVersion.Kind.ROLLBACK:
                    assert replaced == previous, (name, seq)
                previous = snapshot
            self.chain[name] = (seq, previous)

    @invariant()
    def every_version_seen_is_recoverable(self) -> None:
        for name in FILES:
            stored = set(FileSnapshot.objects.filter(file_name=name).values_list("content_hash", flat=True))
            assert self.seen[name] <= stored, f"a content of {name} that Reflection saw has no snapshot"


# --- Running it ------------------------------------------------------------------------------------------
# The outcomes a run must have met, or it did not test what it is for.
MUST_MEET = ("rollback_conflict", "rollback_merge", "rollback_forced", "session_applied", "hand_modify")


def run_model(
    steps: int,
    *,
    seed: int,
    make_decision: Callable[..., MemoryGateDecision],
    steps_per_example: int = 40,
    report: Callable[[str], None] = print,
) -> dict:
    """Run the model until it has taken ``steps`` steps and met each of MUST_MEET (within ten times the steps).

    How many conflicts, merges and applied session rollbacks a run meets varies widely (no conflict at all in one
    run of 2,000 steps in eight, last session): runs follow each other, each with its own seed (``seed`` + its
    number), until both hold. A failure names the seed of its run (MODEL_SEED reruns the same sequence).
    """
    import time

    from hypothesis import HealthCheck, Phase
    from hypothesis import seed as hypothesis_seed
    from hypothesis import settings as hypothesis_settings
    from hypothesis.stateful import run_state_machine_as_test

    RollbackModel.make_decision = staticmethod(make_decision)
    FIGURES.clear()
    started = time.monotonic()
    runs = 0
    while FIGURES["steps"] < 10 * steps and not (
        FIGURES["steps"] >= steps and all(FIGURES[kind] for kind in MUST_MEET)
    ):
        run_seed = seed + runs
        runs += 1
        run_settings = hypothesis_settings(
            # Each run starts with Hypothesis's simplest example, which does nothing: ten at least.
            max_examples=max(10, (steps - FIGURES["steps"]) // (steps_per_example // 2) + 1),
            stateful_step_count=steps_per_example,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            derandomize=False,
            print_blob=True,
            # A failing sequence is printed as found: shrinking replays hundreds of file and database steps.
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
        )
        try:
            run_state_machine_as_test(hypothesis_seed(run_seed)(RollbackModel), settings=run_settings)
        except BaseException as exc:
            report(f"rollback model failed in the run with seed {run_seed}: rerun with MODEL_SEED={run_seed}")
            raise AssertionError(f"rollback model, seed {run_seed} (MODEL_SEED={run_seed}): {exc}") from exc
    totals = {"steps", "examples", "contents_seen", "contents_lost"}
    return {
        "steps": FIGURES["steps"],
        "examples": FIGURES["examples"],
        "runs": runs,
        "seed": seed,
        "seconds": round(time.monotonic() - started, 1),
        "contents_seen": FIGURES["contents_seen"],
        "lost": FIGURES["contents_lost"],
        "by_kind": {k: v for k, v in sorted(FIGURES.items()) if k not in totals},
    }
