"""Rollback of one write and of a session: restore, three-way merge, conflicts, force, records."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from guardian_app.errors import NotRollbackable, RollbackConflict, RollbackDisabled
from guardian_app.models import FileSnapshot, FileVersion, Rollback, WriteGuardianAudit
from guardian_app.write import history, locks
from guardian_app.write.revert import plan_revert
from guardian_app.write.rollback import rollback_write
from guardian_app.write.session_rollback import rollback_session

pytestmark = pytest.mark.django_db
Status = WriteGuardianAudit.Status


def test_an_untouched_file_is_restored_to_its_before_snapshot(write, user_md):
    user_md.write_text("# User\n\n## Preferences\n\n- Lives in Lisbon.\n")
    original = user_md.read_text()
    audit = write("Prefers green tea in the afternoon.")

    rollback = rollback_write(audit, reason="wrong fact", requested_by="alice")

    assert user_md.read_text() == original
    audit.refresh_from_db()
    assert audit.status == Status.ROLLED_BACK
    assert rollback.previous_status == "written" and rollback.method == "restore" and not rollback.forced
    assert rollback.restored_snapshot_id == audit.before_snapshot_id
    assert rollback.replaced_snapshot_id == audit.after_snapshot_id
    version = FileVersion.objects.get(rollback=rollback)
    assert version.kind == "rollback" and version.audit_id == audit.id
    assert "-- Prefers green tea in the afternoon." in version.diff


def test_rolling_back_the_write_that_created_the_file_removes_it(write, user_md):
    audit = write("Prefers green tea in the afternoon.")
    rollback = rollback_write(audit, reason="no", requested_by="alice")
    assert not user_md.exists()
    assert rollback.restored_snapshot is None
    assert FileVersion.objects.get(rollback=rollback).snapshot is None


def test_later_facts_and_hand_edits_are_kept(write, user_md):
    first = write("Prefers green tea in the afternoon.")
    write("Likes long walks on Sundays.")  # Appended right after the first fact.
    user_md.write_text("# Alice\n\n" + user_md.read_text() + "\n## Notes\n\n- Typed by hand.\n")
    write("Enjoys chess problems in the evening.")

    rollback = rollback_write(first, reason="wrong", requested_by="alice")

    text = user_md.read_text()
    assert "green tea" not in text
    for kept in ("long walks", "Typed by hand", "chess problems", "# Alice"):
        assert kept in text
    assert rollback.method == "merge"
    assert FileVersion.objects.filter(file_name="USER.md", kind="hand_edit").count() == 1


def test_an_overlapping_hand_edit_is_a_conflict_that_changes_nothing(write, user_md):
    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    first = write("Prefers green tea in the afternoon.")
    user_md.write_text(user_md.read_text().replace("green tea", "jasmine tea"))
    edited = user_md.read_text()
    rollbacks_before = Rollback.objects.count()

    with pytest.raises(RollbackConflict) as caught:
        rollback_write(first, reason="wrong", requested_by="alice")

    err = caught.value
    hand_edit = FileVersion.objects.get(file_name="USER.md", kind="hand_edit")
    assert err.hand_edits == [hand_edit.id] and err.later_audits == []
    assert "hand edit" in err.message and "Nothing was changed" in err.message
    assert err.details["conflicts"][0]["now"] == "- Prefers jasmine tea in the afternoon.\n"
    assert user_md.read_text() == edited
    first.refresh_from_db()
    assert first.status == Status.WRITTEN and Rollback.objects.count() == rollbacks_before


def test_an_overlapping_later_write_is_named_in_the_conflict(write, user_md):
    first = write("Prefers green tea in the afternoon.")
    from guardian_app.write.guardian import guard_write

    replace = guard_write(
        target_file="USER.md", candidate_fact="x", source="reflect", source_ref="r1"
    )  # refused: vague
    assert replace.status == Status.REFUSED
    # A later write that rewrites the first fact's line (as an LLM guardian's replace edit would).
    from guardian_app.write.guardian import Outcome, _record_locked, new_audit

    with locks.file_lock("USER.md"):
        state = history.sync("USER.md")
        later = _record_locked(
            state,
            Outcome(Status.WRITTEN, "update", new_content=state.content.replace("green tea", "black tea")),
            new_audit(
                "USER.md",
                "Prefers black tea.",
                decision=None,
                source="reflect",
                source_ref="r2",
                retry_of=None,
                requested_by="t",
            ),
        )
    with pytest.raises(RollbackConflict) as caught:
        rollback_write(first, reason="wrong", requested_by="alice")
    assert caught.value.later_audits == [later.id]
    assert later.id in caught.value.message


def test_force_reverts_the_overlap_and_snapshots_what_it_replaced(write, user_md):
    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    first = write("Prefers green tea in the afternoon.")
    user_md.write_text(user_md.read_text().replace("green tea", "jasmine tea"))
    edited = user_md.read_text()

    rollback = rollback_write(first, reason="wrong", requested_by="alice", force=True)

    assert user_md.read_text() == "## Preferences\n\n- Lives in Lisbon.\n"
    assert rollback.forced is True and rollback.method == "forced"
    assert FileSnapshot.objects.get(id=rollback.replaced_snapshot_id).content == edited  # Still recoverable.


def test_rolling_back_twice_is_refused(written_audit):
    rollback_write(written_audit, reason="wrong", requested_by="alice")
    with pytest.raises(NotRollbackable, match="already rolled back") as caught:
        rollback_write(written_audit, reason="again", requested_by="alice")
    assert caught.value.status == 409


def test_an_audit_that_did_not_write_cannot_be_rolled_back(write):
    refused = write("Stuff.")
    with pytest.raises(NotRollbackable, match="did not write"):
        rollback_write(refused, reason="x", requested_by="alice")


def test_rollback_can_be_disabled(settings, written_audit):
    settings.WRITE_GUARDIAN_ENABLE_ROLLBACK = False
    with pytest.raises(RollbackDisabled):
        rollback_write(written_audit, reason="x", requested_by="alice")


def test_a_reason_is_required(written_audit):
    from guardian_app.errors import GuardianError

    with pytest.raises(GuardianError, match="reason"):
        rollback_write(written_audit, reason="  ", requested_by="alice")


def test_the_history_shows_writes_hand_edits_and_rollbacks_newest_first(write, user_md):
    from guardian_app.queries import file_history

    first = write("Prefers green tea in the afternoon.")
    user_md.write_text(user_md.read_text() + "- By hand.\n")
    history.reconcile("USER.md")
    rollback_write(first, reason="wrong", requested_by="alice")
    kinds = [v.kind for v in file_history("USER.md")]
    assert kinds == ["rollback", "hand_edit", "write"]
    assert [v.seq for v in file_history("USER.md")] == [3, 2, 1]


# --- The merge, directly -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("after", "current", "before", "expected"),
    [
        ("- A\n- B\n", "- A\n- B\n- C\n", "- A\n", "- A\n- C\n"),  # A fact appended right after: kept.
        ("- A\n- B\n", "- Z\n- A\n- B\n", "- A\n", "- Z\n- A\n"),
        ("- coffee\n- x\n", "- coffee\n- x\n- y\n", "- tea\n- x\n", "- tea\n- x\n- y\n"),  # Replace undone.
        ("- A\n", "- A\n- B\n", "- A\n- gone\n", "- A\n- gone\n- B\n"),  # Delete undone, in its place.
        ("## P\n\n- A\n", "## P\n\n- A\n- B\n", None, "## P\n\n- B\n"),  # The section stays for B.
        ("- A\n", "- A\n", None, None),  # Created: removed.
    ],
)
def test_plan_revert_keeps_non_overlapping_later_changes(after, current, before, expected):
    plan = plan_revert(after, current, before)
    assert plan.clean
    assert plan.content == expected


def test_plan_revert_reports_an_overlap():
    plan = plan_revert("- A\n- Drinks green tea daily.\n", "- A\n- Drinks jasmine tea daily.\n", "- A\n")
    assert not plan.clean
    assert plan.conflicts[0].as_dict() == {
        "written": "- Drinks green tea daily.\n",
        "now": "- Drinks jasmine tea daily.\n",
        "before": "",
    }


def test_a_line_put_in_the_place_of_the_writes_line_is_another_line_not_an_edit():
    # Not an edit of the write's line (no words in common but the bullet): the write's line is already gone.
    plan = plan_revert("- A\n- Drinks green tea daily.\n", "- A\n- Cycles to work.\n", "- A\n")
    assert plan.clean and plan.content == "- A\n- Cycles to work.\n"


# --- Session rollback ----------------------------------------------------------------------------
def test_session_rollback_undoes_every_write_of_the_session_and_keeps_others(write, user_md, workspace):
    a = write("Prefers green tea in the afternoon.", session_id="s1")
    write("Likes long walks on Sundays.", session_id="s2")
    b = write("The staging API lives at https://staging.example.com.", file="TOOLS.md", session_id="s1")
    c = write("Enjoys chess problems in the evening.", session_id="s1")

    result = rollback_session("s1", reason="bad session", requested_by="alice")

    assert result.applied and not result.conflicts
    assert [item.audit.id for item in result.items] == [c.id, b.id, a.id]  # Newest first.
    # The first write created the file and its heading; the heading stays for the other session's fact.
    assert user_md.read_text() == "## Preferences\n\n- Likes long walks on Sundays.\n"
    assert not (workspace / "TOOLS.md").exists()
    assert set(WriteGuardianAudit.objects.filter(session_id="s1").values_list("status", flat=True)) == {"rolled_back"}


def test_session_rollback_is_all_or_nothing(write, user_md):
    a = write("Prefers green tea in the afternoon.", session_id="s1")
    write("Enjoys chess problems in the evening.", session_id="s1")
    user_md.write_text(user_md.read_text().replace("green tea", "jasmine tea"))
    edited = user_md.read_text()

    result = rollback_session("s1", reason="bad session", requested_by="alice")

    assert not result.applied
    assert [i.status for i in result.items] == ["clean", "conflict"]
    assert result.items[1].audit.id == a.id
    assert user_md.read_text() == edited
    assert not Rollback.objects.exists()


def test_partial_session_rollback_applies_the_clean_ones(write, user_md):
    write("Prefers green tea in the afternoon.", session_id="s1")
    write("Enjoys chess problems in the evening.", session_id="s1")
    user_md.write_text(user_md.read_text().replace("green tea", "jasmine tea"))

    result = rollback_session("s1", reason="bad session", requested_by="alice", partial=True)

    assert result.applied
    assert [i.status for i in result.items] == ["rolled_back", "conflict"]
    assert "chess" not in user_md.read_text() and "jasmine tea" in user_md.read_text()


def test_dry_run_only_reports(write, user_md):
    write("Prefers green tea in the afternoon.", session_id="s1")
    before = user_md.read_text()
    result = rollback_session("s1", reason="check", requested_by="alice", dry_run=True)
    assert not result.applied and [i.status for i in result.items] == ["clean"]
    assert user_md.read_text() == before and not Rollback.objects.exists()


def test_session_rollback_respects_since_and_until(write, user_md):
    old = write("Prefers green tea in the afternoon.", session_id="s1")
    WriteGuardianAudit.objects.filter(id=old.id).update(created_at=timezone.now() - dt.timedelta(days=2))
    new = write("Enjoys chess problems in the evening.", session_id="s1")

    result = rollback_session(
        "s1", reason="today only", requested_by="alice", since=timezone.now() - dt.timedelta(days=1)
    )

    assert [i.audit.id for i in result.items] == [new.id]
    assert "green tea" in user_md.read_text() and "chess" not in user_md.read_text()


def test_session_rollback_of_an_unknown_session_is_404():
    from reflection_site.errors import NotFound

    with pytest.raises(NotFound):
        rollback_session("nope", reason="x", requested_by="alice")


# --- Issue 17: nothing rolled back comes back, and every report is measured on the file --------------
def _raw_write(name: str, new_content: str, fact: str) -> WriteGuardianAudit:
    """A written audit whose edit is ``new_content`` (as an LLM guardian's replace or delete edit would be)."""
    from guardian_app.write.guardian import Outcome, _record_locked, new_audit

    with locks.file_lock(name):
        state = history.sync(name)
        return _record_locked(
            state,
            Outcome(Status.WRITTEN, "edit", new_content=new_content),
            new_audit(name, fact, decision=None, source="reflect", source_ref=fact, retry_of=None, requested_by="t"),
        )


def test_a_forced_rollback_never_resurrects_a_fact_another_rollback_removed(write, user_md):
    """Issue 17, scenario 1: fact A rolled back; a later write's forced rollback must not bring A back (A is in
    that write's before-snapshot, but the write did not touch it)."""
    a = write("Prefers green tea in the afternoon.", session_id="s1")
    b = write("Likes long walks on Sundays.", session_id="s1")
    rollback_write(a, reason="wrong", requested_by="alice")
    assert "green tea" not in user_md.read_text()
    write("Enjoys chess problems in the evening.", session_id="s1")
    user_md.write_text(user_md.read_text().replace("long walks on Sundays", "long walks on Saturdays"))
    edited = user_md.read_text()

    with pytest.raises(RollbackConflict):
        rollback_write(b, reason="wrong", requested_by="alice")
    forced = rollback_write(b, reason="wrong", requested_by="alice", force=True)

    text = user_md.read_text()
    assert "green tea" not in text, "a rolled-back fact came back"
    assert "long walks" not in text  # The write's own line, edited since: the pre-write text (nothing) wins there.
    assert "chess problems" in text  # A later write the forced rollback did not touch.
    assert forced.change.removed == ["- Likes long walks on Saturdays."] and forced.change.restored == []
    assert forced.change.diff == workspace_diff(edited, text)


def workspace_diff(old: str, new: str) -> str:
    from guardian_app.write.diffs import unified_diff

    return unified_diff(old, new, "USER.md")


def test_a_session_rollback_reports_what_it_changed_and_a_rolled_back_fact_stays_gone(write, user_md):
    """Issue 17, scenario 2: after the forced rollback, rolling the session back reports per write what left the
    file, and says so when a write's lines were already gone; A, rolled back first, is not in the file."""
    a = write("Prefers green tea in the afternoon.", session_id="s1")
    b = write("Likes long walks on Sundays.", session_id="s1")
    rollback_write(a, reason="wrong", requested_by="alice")
    c = write("Enjoys chess problems in the evening.", session_id="s1")
    user_md.write_text(user_md.read_text().replace("long walks on Sundays", "long walks on Saturdays"))
    rollback_write(b, reason="wrong", requested_by="alice", force=True)
    before = user_md.read_text()

    result = rollback_session("s1", reason="bad session", requested_by="alice")

    assert [i.audit.id for i in result.items] == [c.id]
    assert result.applied and result.files_changed
    assert result.items[0].change.removed == ["- Enjoys chess problems in the evening."]
    assert result.as_dict()["summary"] == "Rolled back 1 write(s): 1 line(s) removed, 0 restored."
    assert "green tea" not in user_md.read_text() and "chess" not in user_md.read_text()
    assert result.items[0].change.diff == workspace_diff(before, user_md.read_text())
    # Every rolled-back write's fact is out of the file: the records and the file agree.
    for audit in WriteGuardianAudit.objects.filter(status=Status.ROLLED_BACK):
        assert f"- {audit.candidate_fact}" not in user_md.read_text()


def test_a_plain_rollback_does_not_restore_a_line_whose_write_was_rolled_back(write, user_md):
    """Y writes L; W deletes L; Y's rollback finds L already gone; W's rollback must not bring L back."""
    y = write("Prefers green tea in the afternoon.")
    write("Likes long walks on Sundays.")
    w = _raw_write("USER.md", user_md.read_text().replace("- Prefers green tea in the afternoon.\n", ""), "drop tea")
    rollback_write(y, reason="wrong", requested_by="alice")  # Nothing of Y is left in the file.

    rollback = rollback_write(w, reason="wrong", requested_by="alice")

    assert "green tea" not in user_md.read_text()
    assert "long walks" in user_md.read_text()
    assert not rollback.change.changed and rollback.change.summary().startswith("the file did not change")


def test_a_plain_rollback_restores_a_line_whose_owner_is_live(write, user_md):
    write("Prefers green tea in the afternoon.")
    write("Likes long walks on Sundays.")
    w = _raw_write("USER.md", user_md.read_text().replace("- Prefers green tea in the afternoon.\n", ""), "drop tea")
    rollback = rollback_write(w, reason="wrong", requested_by="alice")
    assert "- Prefers green tea in the afternoon." in user_md.read_text()
    assert rollback.change.restored == ["- Prefers green tea in the afternoon."] and rollback.change.removed == []


def test_force_keeps_a_later_edit_of_a_line_the_write_did_not_touch(write, user_md):
    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    first = write("Prefers green tea in the afternoon.")
    text = user_md.read_text().replace("green tea", "jasmine tea").replace("Lisbon", "Porto")
    user_md.write_text(text)
    rollback_write(first, reason="wrong", requested_by="alice", force=True)
    assert user_md.read_text() == "## Preferences\n\n- Lives in Porto.\n"


def test_preview_shows_the_exact_change_or_the_conflict_and_writes_nothing(write, user_md):
    from guardian_app.write.rollback import preview_rollback

    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    audit = write("Prefers green tea in the afternoon.")
    clean = preview_rollback(audit)
    assert clean.conflict is None and clean.change.removed == ["- Prefers green tea in the afternoon."]
    user_md.write_text(user_md.read_text().replace("green tea", "jasmine tea"))
    edited = user_md.read_text()
    conflicted = preview_rollback(audit)
    assert conflicted.conflict is not None and not conflicted.change.changed
    forced = preview_rollback(audit, force=True)
    assert forced.change.removed == ["- Prefers jasmine tea in the afternoon."]
    assert user_md.read_text() == edited and not Rollback.objects.exists()
    done = rollback_write(audit, reason="x", requested_by="alice", force=True, expected_hash=forced.content_hash)
    assert done.change.diff == forced.change.diff  # What was shown is what happened.


def test_a_confirmation_made_on_an_older_file_changes_nothing(write, user_md):
    from guardian_app.write.rollback import RollbackStale, preview_rollback

    audit = write("Prefers green tea in the afternoon.")
    seen = preview_rollback(audit)
    user_md.write_text(user_md.read_text() + "- Typed by hand.\n")
    with pytest.raises(RollbackStale):
        rollback_write(audit, reason="x", requested_by="alice", expected_hash=seen.content_hash)
    assert "green tea" in user_md.read_text() and not Rollback.objects.exists()


def test_a_near_identical_later_fact_in_the_place_of_the_writes_gone_line_is_not_an_edit_of_it(write, user_md):
    """Found by the long model run: two facts differing in one word look like an edit of one into the other; the
    blame knows the later one is another write's, so rolling back the first is clean and keeps it."""
    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    first = write("Juniper harbor likes dune garnet (day 3).")
    user_md.write_text(user_md.read_text().replace("- Juniper harbor likes dune garnet (day 3).\n", ""))
    later = write("Juniper harbor likes dune garnet (day 7).")
    assert later.status == Status.WRITTEN, later.reason

    rollback = rollback_write(first, reason="wrong", requested_by="alice")

    assert "(day 7)" in user_md.read_text() and not rollback.change.changed
