"""Chunking by Markdown structure with exact line numbers; Retain bullets; the tokens the FTS index stores."""

from __future__ import annotations

from guardian_app.recall.chunking import chunk_markdown, estimate_tokens, search_tokens
from guardian_app.recall.retain import entity_key, mentioned_entities, parse_retain_bullet

MEMORY = """\
---
title: Memory
---
# Memory

The agent keeps durable facts here.
Edited by the guardian and by hand.

## Preferences
- Prefers dark mode
  in every editor.
- Likes green tea
  - especially sencha

1. Reviews pull requests before lunch.

| tool | use |
|------|-----|
| rg   | search |

```
# not a heading
- not an item
```

## Retain
- W @Peter: Currently in Marrakech for @Andy's birthday.
- O(c=0.95) @Peter: Prefers short replies on WhatsApp.
- S Busy week; the migration dominated.
- a plain note without a type
## After
Paragraph after the Retain section.
"""


def lines_of(text: str, start: int, end: int) -> str:
    return "\n".join(text.split("\n")[start - 1 : end])


def test_every_chunk_is_exactly_the_lines_it_names():
    chunks = chunk_markdown(MEMORY)
    assert chunks
    for chunk in chunks:
        assert chunk.text == lines_of(MEMORY, chunk.start_line, chunk.end_line)


def test_list_items_are_facts_and_headings_are_context():
    chunks = {c.start_line: c for c in chunk_markdown(MEMORY)}
    dark = chunks[10]
    assert (dark.start_line, dark.end_line) == (10, 11)
    assert dark.heading == "Memory › Preferences"
    tea = chunks[12]
    assert (tea.start_line, tea.end_line) == (12, 13)  # The nested item belongs to its parent.
    assert chunks[15].text == "1. Reviews pull requests before lunch."
    assert chunks[6].text == "The agent keeps durable facts here.\nEdited by the guardian and by hand."
    assert not any(c.text.startswith("#") for c in chunks.values())


def test_a_code_fence_is_one_block_not_items_or_headings():
    chunks = chunk_markdown(MEMORY)
    fence = next(c for c in chunks if "not a heading" in c.text)
    assert "- not an item" in fence.text
    assert fence.heading == "Memory › Preferences"
    assert not any(c.text == "- not an item" for c in chunks)


def test_front_matter_is_its_own_chunk():
    first = chunk_markdown(MEMORY)[0]
    assert (first.start_line, first.end_line) == (1, 3)


def test_retain_bullets_become_typed_facts_with_entities_and_confidence():
    retain = [c for c in chunk_markdown(MEMORY) if c.heading.endswith("Retain")]
    world, opinion, observation, plain = retain
    assert (world.kind, world.entities, world.start_line) == ("world", ("Peter", "Andy"), 27)
    assert world.content == "Currently in Marrakech for @Andy's birthday."
    assert (opinion.kind, opinion.confidence, opinion.entities) == ("opinion", 0.95, ("Peter",))
    assert opinion.content == "Prefers short replies on WhatsApp."
    assert (observation.kind, observation.entities, observation.content) == (
        "observation",
        (),
        "Busy week; the migration dominated.",
    )
    assert plain.kind is None and plain.content == "- a plain note without a type"


def test_the_retain_section_ends_at_the_next_heading():
    after = next(c for c in chunk_markdown(MEMORY) if "Paragraph after" in c.text)
    assert after.kind is None
    assert after.heading == "Memory › After"
    typed_outside = chunk_markdown("## Notes\n- W @Peter: not in a Retain section\n")
    assert typed_outside[0].kind is None


def test_long_prose_is_cut_at_the_token_limit_with_overlap():
    lines = [f"Line {i} of a long narrative about the migration of the staging database." for i in range(1, 201)]
    text = "# Log\n\n" + "\n".join(lines) + "\n"
    chunks = chunk_markdown(text, max_tokens=120, overlap=30)
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.text == lines_of(text, chunk.start_line, chunk.end_line)
        assert estimate_tokens(chunk.text) <= 120
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert after.start_line <= before.end_line  # Overlap: the next chunk repeats the last lines.
        assert before.end_line - after.start_line + 1 >= 1
        assert estimate_tokens(lines_of(text, after.start_line, before.end_line)) <= 30
    assert chunks[0].start_line == 3 and chunks[-1].end_line == 202  # Every line is covered.


def test_the_default_limit_is_the_seeds_512_tokens():
    text = "\n\n".join("word " * 60 for _ in range(40))
    chunks = chunk_markdown(text)
    assert len(chunks) > 1
    assert all(estimate_tokens(c.text) <= 512 for c in chunks)
    assert max(estimate_tokens(c.text) for c in chunks) > 400


def test_a_long_list_item_is_split_and_keeps_its_type():
    body = "\n".join(f"  continuation line {i} with some words in it" for i in range(80))
    text = f"## Retain\n- B @warelay: A long story.\n{body}\n"
    chunks = chunk_markdown(text, max_tokens=100, overlap=20)
    assert len(chunks) > 3
    assert {c.kind for c in chunks} == {"experience"}
    assert all(c.entities == ("warelay",) for c in chunks)
    assert chunks[0].start_line == 2 and chunks[-1].end_line == 82


def test_crlf_files_keep_their_line_numbers():
    text = "# A\r\n\r\n- one\r\n- two\r\n"
    chunks = chunk_markdown(text)
    assert [(c.start_line, c.text) for c in chunks] == [(3, "- one"), (4, "- two")]


def test_chinese_text_is_chunked_and_tokenised_as_characters_and_bigrams():
    chunks = chunk_markdown("## 服务器\n- 预发布服务器部署在东京。\n")
    assert chunks[0].start_line == 2
    tokens = search_tokens("部署在东京 the Staging-server")
    assert "东京" in tokens and "部署" in tokens and "东" in tokens
    assert tokens[-3:] == ["the", "staging", "server"]


def test_retain_bullet_parsing_edge_cases():
    assert parse_retain_bullet("- Wow, not a typed bullet") is None
    assert parse_retain_bullet("- S") is None
    fact = parse_retain_bullet("- O(c=1.7) @The-Castle, @Peter: Drafty in winter.")
    assert fact is not None
    assert (fact.kind, fact.confidence, fact.entities, fact.content) == (
        "opinion",
        1.0,
        ["The-Castle", "Peter"],
        "Drafty in winter.",
    )
    assert parse_retain_bullet("- W: plain world fact").content == "plain world fact"
    assert parse_retain_bullet("- O(c=bad) @x: y").confidence is None


def test_entities_skip_email_addresses_and_compare_by_slug():
    assert mentioned_entities("mail peter@example.com or ask @Peter. Also @peter and @张三") == ["Peter", "张三"]
    assert entity_key("The Castle") == entity_key("@the-castle") == "the-castle"
