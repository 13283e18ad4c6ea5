"""The rollback model (issue 8, item 5): a Hypothesis state machine that writes facts, edits the files by
hand, rolls single writes back (plain and forced) and rolls whole sessions back, in random order, and
checks after every step:

- a rollback either keeps every later change or refuses: a plain rollback only removes lines its write
  added and only brings back lines its write removed (a session rollback: the lines of its writes), and a
  refused one (a conflict, already rolled back, nothing written) changes nothing;
- each write's before-snapshot is the previous version of its file, and each rollback's replaced
  snapshot the content it replaced;
- every content the files ever had when Reflection looked at them is recoverable from the snapshots, and
  each file equals its last recorded version.

At least 2,000 steps in the default run (``MODEL_STEPS``; the long mode is ``MODEL_STEPS=20000``). The
figures (steps by kind, examples, contents seen and lost) are printed and written to
``test-output/reliability/rollback_model.json``.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from guardian_app import workspace as ws
from guardian_app.diffs import content_hash
from guardian_app.errors import GuardianError, RollbackConflict
from guardian_app.guardian import write_fact
from guardian_app.models import FileSnapshot, FileVersion, Rollback, WorkspaceFile, WriteGuardianAudit
from guardian_app.rollback import rollback_session, rollback_write
from sessions_app.models import ConversationSession, ConversationTurn, MemoryGateDecision
from tests.services import ROOT

pytestmark = pytest.mark.django_db
Status = WriteGuardianAudit.Status

MODEL_STEPS = int(os.environ.get("MODEL_STEPS", "2000"))
STEPS_PER_EXAMPLE = 40
FILES = ("USER.md", "MEMORY.md")
DECISION_FOR = {"USER.md": "UPDATE_USER", "MEMORY.md": "UPDATE_MEMORY"}
SESSIONS = ("channel:model:a", "channel:model:b", "channel:model:c")
WORDS = (
    "amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon marble nectar opal "
    "pepper quartz raven saffron tundra umber velvet willow xenon yarrow zephyr acorn bramble cobalt dune"
).split()
REPORT_DIR = ROOT / "test-output" / "reliability"
# The outcomes a run must have met, or it did not test what it is for.
MUST_MEET = ("rollback_conflict", "rollback_merge", "session_applied")
FIGURES: Counter[str] = Counter()


def enough_steps() -> bool:
    """How many conflicts, merges and applied session rollbacks a run meets varies widely (no conflict at all in
    one run of 2,000 steps in eight): the model goes on until it has met each, within ten times its steps."""
    return FIGURES["steps"] >= MODEL_STEPS and all(FIGURES[kind] for kind in MUST_MEET)


def lines(text: str | None) -> Counter[str]:
    return Counter((text or "").splitlines())


def within(extra: Counter[str], allowed: Counter[str]) -> bool:
    return not (extra - allowed)


class RollbackModel(RuleBasedStateMachine):
    make_decision: Callable[..., MemoryGateDecision]

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0
        self.seen: dict[str, set[str]] = {name: set() for name in FILES}

    @initialize()
    def clean_slate(self) -> None:
        Rollback.objects.all().delete()
        WorkspaceFile.objects.all().delete()
        FileVersion.objects.all().delete()
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

    def look(self, name: str) -> None:
        """Reflection looks at the file now: this content must stay recoverable."""
        content = self.disk(name)
        if content is not None:
            self.seen[name].add(content_hash(content))

    def step(self, kind: str) -> None:
        FIGURES["steps"] += 1
        FIGURES[kind] += 1

    def audits(self, name: str | None = None) -> list[WriteGuardianAudit]:
        audits = WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot").order_by("id")
        if name:
            audits = audits.filter(target_file=name)
        return list(audits)

    def assert_recorded(self, name: str) -> None:
        row = WorkspaceFile.objects.select_related("current_version__snapshot").filter(file_name=name).first()
        version = row.current_version if row is not None else None
        recorded = version.snapshot.content if version is not None and version.snapshot_id else None
        assert self.disk(name) == recorded, f"{name} differs from its last recorded version"
        assert row is None or row.pending_audit_id is None

    # --- rules -----------------------------------------------------------------------------------
    @rule(
        name=st.sampled_from(FILES),
        session=st.sampled_from(SESSIONS),
        words=st.lists(st.sampled_from(WORDS), min_size=3, max_size=3, unique=True),
    )
    def write(self, name: str, session: str, words: list[str]) -> None:
        self.counter += 1
        self.look(name)
        fact = f"{words[0].title()} {words[1]} likes {words[2]} on day {self.counter}."
        audit = write_fact(self.make_decision(DECISION_FOR[name], fact, session_id=session))
        self.step(f"write_{audit.status}")
        self.look(name)
        self.assert_recorded(name)

    @rule(name=st.sampled_from(FILES), dice=st.integers(min_value=0, max_value=99), where=st.integers(0, 10_000))
    def hand_edit(self, name: str, dice: int, where: int) -> None:
        # Mostly small edits next to or on the facts (where conflicts come from), sometimes a rewrite or removal.
        how = (
            "append"
            if dice < 20
            else "insert"
            if dice < 35
            else "delete"
            if dice < 50
            else "modify"
            if dice < 90
            else "rewrite"
            if dice < 95
            else "remove"
        )
        self.counter += 1
        text = self.disk(name)
        old = (text or "").splitlines(keepends=True)
        note = f"- Hand note {self.counter}.\n"
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
            new = [*old]
            new[at] = new[at].rstrip("\n") + f" (edited {self.counter})\n"
        elif how == "rewrite":
            new = [f"# Rewritten {self.counter}\n", note]
        else:
            new = None
        if new is None:
            if self.path(name).exists():
                self.path(name).unlink()
        else:
            self.path(name).write_text("".join(new))
        self.step(f"hand_{how}")

    @rule(pick=st.integers(min_value=0, max_value=10_000), any_audit=st.integers(0, 9), force=st.booleans())
    def rollback(self, pick: int, any_audit: int, force: bool) -> None:
        audits = self.audits()
        written = [a for a in audits if a.status == Status.WRITTEN]
        if not audits:
            return
        # Mostly a written audit; sometimes any (rolled back, refused: those are refused).
        choices = audits if any_audit == 0 or not written else written
        audit = choices[pick % len(choices)]
        name = audit.target_file
        ws.check_drift([name])  # Reflection looks first (a hand edit becomes a version of its own).
        self.look(name)
        pre = self.disk(name)
        status_before = audit.status
        rollbacks_before = Rollback.objects.count()
        try:
            rollback = rollback_write(audit, reason="model", requested_by="model", force=force)
        except GuardianError as exc:
            # Refused: nothing changed.
            assert self.disk(name) == pre
            audit.refresh_from_db()
            assert audit.status == status_before and Rollback.objects.count() == rollbacks_before
            if isinstance(exc, RollbackConflict):
                assert not force, "a forced rollback never conflicts"
                self.step("rollback_conflict")
            else:
                assert status_before != Status.WRITTEN, exc
                self.step("rollback_refused")
            return
        assert status_before == Status.WRITTEN
        post = self.disk(name)
        self.look(name)
        rollback = Rollback.objects.select_related("replaced_snapshot").get(id=rollback.id)
        assert (rollback.replaced_snapshot.content if rollback.replaced_snapshot else None) == pre
        before = audit.before_snapshot.content if audit.before_snapshot else None
        after = audit.after_snapshot.content
        if force and rollback.forced:
            self.step("rollback_forced")
        else:
            # Keeps every later change: removes only the write's lines, brings back only what it removed.
            added, removed = lines(after) - lines(before), lines(before) - lines(after)
            assert within(lines(pre) - lines(post), added), (pre, post, after, before)
            assert within(lines(post) - lines(pre), removed), (pre, post, after, before)
            fact_line = f"- {audit.candidate_fact}"
            if lines(pre)[fact_line]:
                assert lines(post)[fact_line] == lines(pre)[fact_line] - 1, "the fact is gone"
            self.step(f"rollback_{rollback.method}")
        self.assert_recorded(name)
        with pytest.raises(GuardianError):  # Once only.
            rollback_write(audit, reason="again", requested_by="model")

    @rule(session=st.sampled_from(SESSIONS), partial=st.booleans())
    def session_rollback(self, session: str, partial: bool) -> None:
        if not ConversationSession.objects.filter(id=session).exists():
            return
        ws.check_drift(list(FILES))
        for name in FILES:
            self.look(name)
        pre = {name: self.disk(name) for name in FILES}
        result = rollback_session(session, reason="model", requested_by="model", partial=partial)
        post = {name: self.disk(name) for name in FILES}
        if not result.applied:
            assert post == pre, "a session rollback that did not apply changed nothing"
            self.step("session_refused" if result.conflicts else "session_empty")
            return
        done = [item.audit for item in result.items if item.status == "rolled_back"]
        for name in FILES:
            self.look(name)
            mine = [a for a in done if a.target_file == name]
            added: Counter[str] = Counter()
            removed: Counter[str] = Counter()
            for audit in mine:
                before = audit.before_snapshot.content if audit.before_snapshot else None
                added += lines(audit.after_snapshot.content) - lines(before)
                removed += lines(before) - lines(audit.after_snapshot.content)
            assert within(lines(pre[name]) - lines(post[name]), added)
            assert within(lines(post[name]) - lines(pre[name]), removed)
            self.assert_recorded(name)
        self.step("session_partial" if result.conflicts else "session_applied")

    def teardown(self) -> None:
        # The tally of the figures: the contents seen in this example, and how many have no snapshot (the
        # invariant below fails the run on the first one).
        for name in FILES:
            stored = set(FileSnapshot.objects.filter(file_name=name).values_list("content_hash", flat=True))
            FIGURES["contents_seen"] += len(self.seen[name])
            FIGURES["contents_lost"] += len(self.seen[name] - stored)

    # --- invariants ------------------------------------------------------------------------------
    @invariant()
    def history_is_a_chain(self) -> None:
        for name in FILES:
            previous: str | None = None
            previous_content: str | None = None
            versions = FileVersion.objects.filter(file_name=name).select_related("audit", "rollback", "snapshot")
            for version in versions.order_by("seq"):
                if version.kind == FileVersion.Kind.WRITE:
                    # Each audit's before-snapshot is the previous version.
                    assert version.audit.before_snapshot_id == previous, (name, version.seq)
                    assert version.audit.after_snapshot_id == version.snapshot_id
                if version.kind == FileVersion.Kind.ROLLBACK:
                    replaced = version.rollback.replaced_snapshot_id
                    assert replaced == previous or (replaced is None and previous_content is None), (name, version.seq)
                previous = version.snapshot_id
                previous_content = version.snapshot.content if version.snapshot_id else None

    @invariant()
    def every_version_seen_is_recoverable(self) -> None:
        for name in FILES:
            stored = set(FileSnapshot.objects.filter(file_name=name).values_list("content_hash", flat=True))
            assert self.seen[name] <= stored, f"a content of {name} that Reflection saw has no snapshot"


@pytest.mark.timeout(300 + MODEL_STEPS // 5)  # About 30 ms a step; the long mode runs for minutes.
def test_the_rollback_model_holds_for_at_least_the_configured_steps(make_decision, settings, capsys):
    settings.WRITE_GUARDIAN_ENABLE_ROLLBACK = True
    RollbackModel.make_decision = staticmethod(make_decision)
    FIGURES.clear()
    started = time.monotonic()
    while not enough_steps() and FIGURES["steps"] < 10 * MODEL_STEPS:
        run_settings = hypothesis_settings(
            # Each run starts with Hypothesis's simplest example, which does nothing: ten at least, or a run of
            # one example would repeat that one for ever.
            max_examples=max(10, (MODEL_STEPS - FIGURES["steps"]) // (STEPS_PER_EXAMPLE // 2) + 1),
            stateful_step_count=STEPS_PER_EXAMPLE,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            derandomize=False,
            # A failing sequence is printed as found: shrinking replays hundreds of file and database steps.
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
        )
        run_state_machine_as_test(RollbackModel, settings=run_settings)
    totals = {"steps", "examples", "contents_seen", "contents_lost"}
    figures: dict[str, Any] = {
        "steps": FIGURES["steps"],
        "examples": FIGURES["examples"],
        "seconds": round(time.monotonic() - started, 1),
        "contents_seen": FIGURES["contents_seen"],
        "lost": FIGURES["contents_lost"],
        "by_kind": {k: v for k, v in sorted(FIGURES.items()) if k not in totals},
    }
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "rollback_model.json").write_text(json.dumps(figures, indent=2) + "\n")
    with capsys.disabled():
        print("\nrollback model:", json.dumps(figures))
    assert FIGURES["steps"] >= MODEL_STEPS and FIGURES["contents_lost"] == 0
    assert all(FIGURES[kind] for kind in MUST_MEET), {kind: FIGURES[kind] for kind in MUST_MEET}
