"""Markdown heading lines, read one way for every app (reflection_site.memory_files.parse_heading)."""

from __future__ import annotations

import pytest

from reflection_site.memory_files import is_heading, parse_heading


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("# Preferences", (1, "Preferences")),
        ("## Tools ##\n", (2, "Tools")),  # a closing sequence, and the line's newline
        ("### Retain\r\n", (3, "Retain")),
        ("   ## Indented up to three spaces", (2, "Indented up to three spaces")),
        ("##\tTabbed", (2, "Tabbed")),
        ("## C#", (2, "C#")),  # no space before "#": part of the title
        ("## Notes #  ", (2, "Notes")),
        ("#", (1, "")),
        ("### ###", (3, "")),
        ("###### Six", (6, "Six")),
        ("## 保留", (2, "保留")),
    ],
)
def test_a_heading_line_is_its_level_and_title(line, parsed):
    assert parse_heading(line) == parsed
    assert is_heading(line)


@pytest.mark.parametrize(
    "line",
    ["#hashtag", "####### Seven", "    # four spaces is code", "- # a bullet", "text # not a heading", "", "\t# tab"],
)
def test_other_lines_are_not_headings(line):
    assert parse_heading(line) is None
    assert not is_heading(line)
