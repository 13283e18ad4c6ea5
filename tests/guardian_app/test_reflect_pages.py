"""Reflect's pages as text: the offline summariser, merging facts, and keeping what a person wrote."""

from __future__ import annotations

import datetime as dt

import pytest

from guardian_app.reflect.facts import Fact, fact_id
from guardian_app.reflect.pages import (
    BEGIN,
    END,
    PageFact,
    Statement,
    added_fact_keys,
    assemble,
    block_length,
    compose_entity_page,
    compose_opinions_page,
    merge_facts,
    page_edits,
    parse_facts,
    split_page,
    summarise_offline,
)
from guardian_app.write.edits import apply_edits

D1, D2, D3 = dt.date(2025, 11, 25), dt.date(2025, 11, 26), dt.date(2025, 11, 27)


def fact(content: str, day: dt.date, line: int, kind: str | None = "world") -> Fact:
    path = f"memory/{day.isoformat()}.md"
    return Fact(fact_id(path, content), kind, content, ("Peter",), None, f"{path}#L{line}", day, "retain")


def pf(content: str, day: dt.date, line: int, kind: str = "world") -> PageFact:
    return PageFact(day, kind, content, f"memory/{day.isoformat()}.md#L{line}")


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        ([], ["No facts about Peter yet."]),
        (
            [pf("In Marrakech.", D3, 12)],
            [
                "1 fact about Peter, 2025-11-27: world 1.",
                "",
                "- 2025-11-27 · world · In Marrakech. — `memory/2025-11-27.md#L12`",
            ],
        ),
        (
            # Given oldest first; listed newest first, then by line within a day.
            [
                pf("Fixed the WS crash.", D1, 8, "experience"),
                pf("Likes tea.", D3, 14, "opinion"),
                pf("In Marrakech.", D3, 12),
            ],
            [
                "3 facts about Peter, 2025-11-25 to 2025-11-27: experience 1, opinion 1, world 1.",
                "",
                "- 2025-11-27 · world · In Marrakech. — `memory/2025-11-27.md#L12`",
                "- 2025-11-27 · opinion · Likes tea. — `memory/2025-11-27.md#L14`",
                "- 2025-11-25 · experience · Fixed the WS crash. — `memory/2025-11-25.md#L8`",
            ],
        ),
        (
            # The same fact twice (same text, another line) is listed once; line 9 sorts before line 10.
            [pf("Likes tea.", D2, 10), pf("likes tea", D2, 11), pf("In Rome.", D2, 9)],
            [
                "2 facts about Peter, 2025-11-26: world 2.",
                "",
                "- 2025-11-26 · world · In Rome. — `memory/2025-11-26.md#L9`",
                "- 2025-11-26 · world · likes tea — `memory/2025-11-26.md#L11`",
            ],
        ),
    ],
)
def test_the_offline_summariser_lists_facts_newest_first_with_their_sources(facts, expected):
    assert summarise_offline("Peter", facts) == expected


def test_the_offline_summariser_does_not_depend_on_the_order_of_its_input():
    facts = [pf("A fact.", D1, 1), pf("B fact.", D2, 2), pf("C fact.", D3, 3), pf("D fact.", D3, 1)]
    assert summarise_offline("Peter", facts) == summarise_offline("Peter", list(reversed(facts)))


def test_fact_lines_read_back_as_they_were_written():
    original = [pf("In Marrakech (Nov 27 - Dec 1) — for Andy's birthday.", D3, 12), pf("Fixed it.", D1, 3, "note")]
    assert parse_facts([f.line() for f in original]) == original


def test_merging_keeps_the_page_facts_and_adds_new_ones_once():
    existing = [pf("In Marrakech.", D2, 4)]
    new = [fact("In Marrakech.", D3, 7), fact("Back home on Monday.", D3, 9)]
    merged = merge_facts(existing, new, limit=10)
    assert [(m.content, m.source) for m in merged] == [
        ("Back home on Monday.", "memory/2025-11-27.md#L9"),
        ("In Marrakech.", "memory/2025-11-26.md#L4"),  # The page's line stays as it was.
    ]


def test_merging_keeps_the_newest_facts_up_to_the_limit():
    new = [fact(f"Fact number {i}.", D1 + dt.timedelta(days=i), 1) for i in range(5)]
    assert [m.content for m in merge_facts([], new, limit=2)] == ["Fact number 4.", "Fact number 3."]


def test_a_new_page_gets_a_title_and_the_block():
    page = compose_entity_page(
        None, entity="Peter", new_facts=[fact("In Marrakech.", D3, 12)], summary=None, opinions=[], updated=D3, limit=50
    )
    assert page.startswith(f"# Peter\n\n{BEGIN}\n## Summary\n")
    assert page.endswith(f"_Updated 2025-11-27 by reflect._\n{END}\n")
    assert "- 2025-11-27 · world · In Marrakech. — `memory/2025-11-27.md#L12`" in page


def test_what_a_person_wrote_around_the_block_is_kept():
    first = compose_entity_page(
        None, entity="Peter", new_facts=[fact("In Marrakech.", D2, 3)], summary=None, opinions=[], updated=D2, limit=50
    )
    edited = first.replace("# Peter\n", "# Peter\n\nMy own note above.\n") + "\n## Notes\n\n- Call him on Sunday.\n"
    second = compose_entity_page(
        edited, entity="Peter", new_facts=[fact("Back home.", D3, 5)], summary=None, opinions=[], updated=D3, limit=50
    )
    assert "My own note above." in second and "- Call him on Sunday." in second
    assert second.index("My own note above.") < second.index(BEGIN) < second.index(END) < second.index("Call him")
    assert "In Marrakech." in second and "Back home." in second


def test_a_page_without_a_block_gets_one_after_its_title():
    page = assemble("# Peter\n\nHand-written intro.\n", "Peter", ["## Summary", "", "x"])
    assert page == f"# Peter\n\n{BEGIN}\n## Summary\n\nx\n{END}\n\nHand-written intro.\n"
    assert assemble("No title here.\n", "Peter", ["x"]) == f"{BEGIN}\nx\n{END}\n\nNo title here.\n"


def test_two_blocks_are_not_a_block():
    text = f"# P\n{BEGIN}\na\n{END}\n{BEGIN}\nb\n{END}\n"
    assert split_page(text).block is None


def test_an_llm_summary_cites_its_sources():
    summary = [Statement("Peter is in Marrakech.", ("memory/2025-11-27.md#L12",))]
    page = compose_entity_page(
        None,
        entity="Peter",
        new_facts=[fact("In Marrakech.", D3, 12)],
        summary=summary,
        opinions=[],
        updated=D3,
        limit=9,
    )
    assert "Peter is in Marrakech. (`memory/2025-11-27.md#L12`)" in page


@pytest.mark.parametrize(
    "current",
    [
        None,
        "",
        "# Peter\n\nHand-written.\n",
        f"# Peter\n\n{BEGIN}\nold\n{END}\n\nKept.\n",
    ],
)
def test_the_guardian_edits_turn_the_page_into_the_new_one(current):
    new = assemble(current, "Peter", ["## Summary", "", "new"])
    assert apply_edits(current, page_edits(current, new)) == new


def test_a_block_rewrite_is_one_replace_of_the_block():
    current = f"# Peter\n\n{BEGIN}\nold\n{END}\n\nKept.\n"
    edits = page_edits(current, assemble(current, "Peter", ["new"]))
    assert edits == [{"op": "replace", "find": f"{BEGIN}\nold\n{END}", "text": f"{BEGIN}\nnew\n{END}"}]
    assert block_length(current) == 3


def test_facts_added_by_a_write_are_read_from_its_diff():
    diff = "--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n+- 2025-11-27 · world · In Marrakech. — `memory/2025-11-27.md#L12`\n context\n"
    assert added_fact_keys(diff) == {pf("In Marrakech.", D3, 12).key}


def test_the_opinions_page_groups_by_entity_surest_first():
    views = [
        {"entity": "Peter", "statement": "Likes tea.", "confidence": 0.6, "supporting": 1, "contradicting": 0},
        {"entity": "", "statement": "Mornings are busy.", "confidence": 0.5, "supporting": 1, "contradicting": 0},
        {
            "entity": "Peter",
            "statement": "Prefers short replies.",
            "confidence": 0.95,
            "supporting": 3,
            "contradicting": 1,
            "updated": "2025-11-27",
            "evidence": [("memory/2025-11-27.md#L14", "+")],
        },
    ]
    page = compose_opinions_page(None, views, updated=D3)
    assert page.index("## Peter") < page.index("Prefers short replies.") < page.index("Likes tea.")
    assert page.index("Likes tea.") < page.index("## General") < page.index("Mornings are busy.")
    assert (
        "- Prefers short replies. — c=0.95 · 3 for, 1 against · updated 2025-11-27 · evidence: "
        "`memory/2025-11-27.md#L14` (+)"
    ) in page
