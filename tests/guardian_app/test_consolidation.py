"""Consolidation (seed 000 consolidation.enabled / schedule): repeated and superseded lines of a memory file
removed in one audited write that rolls back like any other (issue 24)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from guardian_app.models import WriteGuardianAudit
from guardian_app.tasks import run_consolidation
from guardian_app.write.consolidation import consolidate, consolidate_file, plan, without
from guardian_app.write.rollback import rollback_write

pytestmark = pytest.mark.django_db

USER = """# User

## Home

- Lives in Berlin.
- Likes green tea in the afternoon.

## Preferences

- Prefers short answers.
- Likes green tea in the afternoon.
- Moved to Lisbon in May.
- Prefers short replies.
- Uses vim for everything.
"""


def test_the_plan_removes_repeats_paraphrases_and_superseded_values_only():
    removals = plan(USER)

    assert [(r.line, r.why) for r in removals] == [
        ("- Lives in Berlin.", "superseded"),
        ("- Likes green tea in the afternoon.", "repeats"),
        ("- Prefers short replies.", "repeats"),
    ]
    assert [r.number for r in removals] == [5, 11, 13]
    kept = without(USER, removals)
    assert "- Moved to Lisbon in May." in kept and "- Uses vim for everything." in kept
    assert kept.count("- Likes green tea in the afternoon.") == 1 and "## Home" in kept
    assert plan(kept) == []


def test_distinct_facts_are_never_removed():
    distinct = "- Likes green tea.\n- Likes black coffee.\n- Speaks French.\n- Speaks German.\n- Has a dog named Rex.\n"
    assert plan(distinct) == []


def test_consolidation_is_one_audited_write_that_rolls_back(workspace):
    (workspace / "USER.md").write_text(USER)

    result = consolidate_file("USER.md")

    audit = WriteGuardianAudit.objects.get(id=result.audit_id)
    assert (result.status, audit.status, audit.requested_by) == ("written", "written", "consolidation")
    assert audit.lines_removed == 3 and "-- Lives in Berlin." in audit.diff
    assert (workspace / "USER.md").read_text() == without(USER, plan(USER))
    assert consolidate_file("USER.md").status == "unchanged"  # nothing left to do

    rollback_write(audit, reason="keep them", requested_by="op")
    assert (workspace / "USER.md").read_text() == USER


def test_the_same_file_is_consolidated_once(workspace):
    (workspace / "USER.md").write_text(USER)
    first = consolidate_file("USER.md")
    (workspace / "USER.md").write_text(USER)  # put back by hand: a new state, a new consolidation
    second = consolidate_file("USER.md")
    assert first.audit_id != second.audit_id
    assert WriteGuardianAudit.objects.filter(requested_by="consolidation").count() == 2


def test_the_nightly_task_does_nothing_unless_enabled(workspace, settings):
    (workspace / "USER.md").write_text(USER)
    settings.CONSOLIDATION_ENABLED = False
    assert run_consolidation() is None and (workspace / "USER.md").read_text() == USER

    settings.CONSOLIDATION_ENABLED = True
    results = {r["file"]: r for r in run_consolidation()}
    assert results["USER.md"]["status"] == "written" and len(results["USER.md"]["removed"]) == 3
    assert "AGENTS.md" not in results


def test_the_command_dry_run_writes_nothing(workspace):
    (workspace / "USER.md").write_text(USER)
    out = StringIO()
    call_command("guardian", "consolidate", "--dry-run", "--file", "USER.md", stdout=out)

    assert "USER.md: would remove 3 line(s)" in out.getvalue()
    assert "-L5 - Lives in Berlin.  [superseded: - Moved to Lisbon in May.]" in out.getvalue()
    assert (workspace / "USER.md").read_text() == USER and not WriteGuardianAudit.objects.exists()
    as_json = StringIO()
    call_command("guardian", "consolidate", "--json", "--file", "USER.md", stdout=as_json)
    assert json.loads(as_json.getvalue())[0]["status"] == "written"


def test_too_many_removals_are_refused_whole(workspace, settings):
    settings.CONSOLIDATION_MAX_REMOVED_LINES = 2  # three lines would go
    (workspace / "USER.md").write_text(USER)

    (result,) = consolidate(files=["USER.md"])

    assert result.status == "refused" and (workspace / "USER.md").read_text() == USER
