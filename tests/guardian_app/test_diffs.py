"""guardian_app.write.diffs.line_kinds: one reading of a unified diff for every page that colours one (issue 20:
the audit console and the dataset review page each had a copy)."""

from __future__ import annotations

from guardian_app.write.diffs import line_kinds, unified_diff


def test_each_line_of_a_diff_gets_its_kind() -> None:
    diff = unified_diff(
        "# User\n- Lives in Berlin.\n- Likes tea.\n", "# User\n- Lives in Lisbon.\n- Likes tea.\n", "USER.md"
    )
    kinds = [kind for kind, _ in line_kinds(diff)]
    assert kinds == ["meta", "meta", "hunk", "ctx", "del", "add", "ctx"]
    assert line_kinds(diff)[4] == ("del", "-- Lives in Berlin.")


def test_no_diff_has_no_lines() -> None:
    assert line_kinds("") == []
