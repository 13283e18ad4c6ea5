"""Rollback of one write and of a session: restore, three-way merge, conflicts, force, records."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from guardian_app import workspace
from guardian_app.errors import NotRollbackable, RollbackConflict, RollbackDisabled
from guardian_app.models import FileSnapshot, FileVersion, Rollback, WriteGuardianAudit
from guardian_app.rollback import plan_revert, rollback_session, rollback_write

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
    from guardian_app.guardian import guard_write

    replace = guard_write(
        target_file="USER.md", candidate_fact="x", source="reflect", source_ref="r1"
    )  # refused: vague
    assert replace.status == Status.REFUSED
    # A later write that rewrites the first fact's line (as an LLM guardian's replace edit would).
    from guardian_app.guardian import Outcome, _new_audit, _record_locked

    with workspace.file_lock("USER.md"):
        state = workspace.sync("USER.md")
        later = _record_locked(
            state,
            Outcome(Status.WRITTEN, "update", new_content=state.content.replace("green tea", "black tea")),
            _new_audit(
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
    workspace.reconcile("USER.md")
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
    plan = plan_revert("- A\n- B\n", "- A\n- B2\n", "- A\n")
    assert not plan.clean
    assert plan.conflicts[0].as_dict() == {"written": "- B\n", "now": "- B2\n", "before": ""}


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
