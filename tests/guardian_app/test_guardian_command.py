"""`python manage.py guardian …`: the seed's list, show, diff, rollback, history, correct and export."""

from __future__ import annotations

import csv
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from guardian_app.models import BehaviorCorrection, WriteGuardianAudit

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("guardian", *args, stdout=out)
    return out.getvalue()


def test_list_filters_like_the_seed(write):
    a = write("Prefers green tea in the afternoon.", session_id="s1")
    b = write("Stuff.", session_id="s2")
    text = run("list")
    assert a.id in text and b.id in text and text.index(b.id) < text.index(a.id)
    assert b.id not in run("list", "s1")
    assert a.id not in run("list", "-f", "USER.md", "-s", "refused")
    assert "+3 -0 ~0" in run("list", "-d")
    assert [r["id"] for r in json.loads(run("list", "-l", "1", "--json"))] == [b.id]


def test_show_and_diff(written_audit):
    shown = run("show", written_audit.id, "--include-content")
    assert "status: written" in shown and "+- Prefers green tea in the afternoon." in shown and "--- after ---" in shown
    assert run("diff", written_audit.id) == written_audit.diff  # Not a terminal: no colour codes.
    coloured = run("diff", written_audit.id, "--color", "always")
    assert "\033[32m+- Prefers green tea in the afternoon.\033[0m" in coloured
    with pytest.raises(CommandError, match="no audit"):
        run("show", "nope")


def test_rollback_conflict_force_and_double(write, user_md):
    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    audit = write("Prefers green tea in the afternoon.")
    user_md.write_text(user_md.read_text().replace("green", "jasmine"))
    with pytest.raises(CommandError, match="overlap"):
        run("rollback", audit.id, "--reason", "wrong file")
    assert "jasmine" in user_md.read_text()
    assert "Rolled back" in run("rollback", audit.id, "--reason", "wrong file", "--force")
    with pytest.raises(CommandError, match="already rolled back"):
        run("rollback", audit.id, "--reason", "again")
    assert WriteGuardianAudit.objects.get(id=audit.id).rollback.rolled_back_by == "cli"


def test_history_and_unknown_files(write, user_md):
    write("Prefers green tea in the afternoon.")
    user_md.write_text(user_md.read_text() + "- By hand.\n")
    text = run("history", "-f", "USER.md", "-l", "5")
    assert text.index("hand_edit") < text.index("write")
    assert run("history", "USER.md", "--json").count('"seq"') == 2
    with pytest.raises(CommandError, match="unknown memory file"):
        run("history", "-f", "../etc/passwd")


def test_correct_and_retry(write):
    refused = write("Vim.")
    text = run(
        "correct",
        refused.id,
        "--status",
        "written",
        "--reason",
        "Editor matters.",
        "--apply-to-future",
        "--pattern",
        "vim",
    )
    assert "applies to future facts matching 'vim'" in text
    assert BehaviorCorrection.objects.get().corrected_by == "cli"
    assert "written" in run("retry", refused.id)
    with pytest.raises(CommandError, match="status"):
        call_command("guardian", "correct", refused.id, "--status", "maybe", "--reason", "x", stderr=StringIO())


def test_export_json_csv_markdown(write, tmp_path):
    a = write("Prefers green tea in the afternoon.")
    write("Stuff.")
    out = tmp_path / "audits.json"
    assert "Exported 2 audit(s)" in run("export", "--format", "json", "-o", str(out), "--include-content")
    records = json.loads(out.read_text())
    assert records[1]["id"] == a.id and records[1]["after_content"].endswith("green tea in the afternoon.\n")

    run("export", "--format", "csv", "-o", str(tmp_path / "a.csv"), "-s", "written")
    rows = list(csv.DictReader((tmp_path / "a.csv").open()))
    assert [r["id"] for r in rows] == [a.id] and rows[0]["candidate_fact"] == "Prefers green tea in the afternoon."

    run("export", "--format", "markdown", "-o", str(tmp_path / "a.md"))
    markdown = (tmp_path / "a.md").read_text()
    assert markdown.startswith("# Write-guardian audits") and f"## {a.id}" in markdown and "```diff" in markdown


def test_session_rollback_sweep_and_drift(write, user_md):
    write("Prefers green tea in the afternoon.", session_id="s1")
    assert "clean" in run("rollback-session", "s1", "--reason", "x", "--dry-run")
    assert "Rolled back 1 write(s)" in run("rollback-session", "s1", "--reason", "bad")
    assert "Requeued 0" in run("sweep")
    user_md.write_text("- hand\n")
    assert "USER.md #3 hand_edit" in run("drift")


def test_correct_says_it_is_a_label_and_leaves_the_file(write, user_md):
    audit = write("Prefers green tea in the afternoon.")
    before = user_md.read_text()

    text = run("correct", audit.id, "--status", "refused", "--reason", "Not a real preference.")

    assert "is a label for learning" in text and "USER.md is unchanged" in text and "--apply" in text
    assert user_md.read_text() == before


def test_correct_apply_rolls_back_a_wrong_write(write, user_md):
    audit = write("Prefers green tea in the afternoon.")

    text = run("correct", audit.id, "--status", "refused", "--reason", "Not a real preference.", "--apply")

    assert f"Rolled back {audit.id} from USER.md: 3 line(s) removed" in text  # the fact, its heading, a blank
    assert not user_md.exists()  # it was the file's first write
    assert WriteGuardianAudit.objects.get(id=audit.id).status == "rolled_back"


def test_correct_apply_moves_a_fact_to_the_right_file(write, user_md, workspace):
    audit = write("The launch is on Friday the 14th.")
    assert audit.status == "written", audit.reason

    text = run(
        "correct", audit.id, "--status", "written", "--file", "MEMORY.md", "--reason", "A project date.", "--apply"
    )

    assert "Rolled back" in text and "Wrote the corrected fact to MEMORY.md" in text
    assert not user_md.exists()  # the wrong write was the file's first
    assert "launch is on Friday the 14th" in (workspace / "MEMORY.md").read_text()


def test_correct_apply_writes_a_fact_that_was_refused(write, user_md):
    refused = write("Vim.")
    assert refused.status == "refused"

    text = run(
        "correct",
        refused.id,
        "--status",
        "written",
        "--fact",
        "Uses vim as the editor.",
        "--reason",
        "Editor matters.",
        "--apply",
    )

    assert "Wrote the corrected fact to USER.md" in text and "written" in text
    assert "Uses vim as the editor." in user_md.read_text()


def test_history_counts_a_replaced_line_as_one_removed_and_one_added(write, user_md):
    write("Prefers green tea in the afternoon.")
    text = user_md.read_text()
    user_md.write_text(text.replace("- Prefers green tea in the afternoon.\n", "- Prefers black coffee.\n"))

    rows = run("history", "-f", "USER.md").splitlines()

    hand = next(row for row in rows if "hand_edit" in row)
    assert "+1 -1" in hand
