"""Markdown -> chunks with exact line numbers, and the tokens the full-text index stores for them.

Chunking follows the Markdown structure, with seed 003's defaults as the size limit (about 512 tokens,
50 tokens of overlap; ``RECALL_CHUNK_TOKENS`` / ``RECALL_CHUNK_OVERLAP``):

* A list item (with its continuation lines and nested items) is one fact and one chunk: the memory files
  are bullet lists that the guardian appends to, and an agent wants a fact with its line, not a page.
  Items in a ``## Retain`` section are parsed into typed facts (``guardian_app.recall.retain``).
* Other text (paragraphs, tables, code blocks) of one heading section is packed into chunks of at most the
  token limit, cut between blocks where possible and between lines otherwise, each new chunk starting with
  the last lines (up to the overlap) of the one before.
* Headings start a new section; their text is each chunk's ``heading`` (search context), not chunk text.

Tokens are estimated (a CJK character is one token, other text four characters a token): close enough
for a size limit, and no tokenizer model to download.

Chinese, Japanese and Korean text has no spaces between words, so ``search_tokens`` writes each CJK run as
its characters and their bigrams (a character n-gram column) into the text that the database indexes; a
query uses the bigrams (or the single character). The same tokens feed SQLite FTS5 and PostgreSQL's
tsvector, so both databases find the same chunks; FTS5's trigram tokenizer, the alternative, cannot match
the two-character words that most Chinese words are, has no PostgreSQL counterpart, and ranks English
words by their trigrams.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

from guardian_app.recall.retain import is_retain_heading, mentioned_entities, parse_retain_bullet
from reflection_site.memory_files import is_heading, parse_heading
from reflection_site.text import CJK_CHAR, WORD, count_cjk, is_cjk

MAX_TOKEN_CHARS = 64

_FENCE = re.compile(r"^(\s{0,3})(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^(\s{0,3})([-*+]|\d{1,9}[.)])(\s+|$)")


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str  # exactly the file's lines start_line..end_line
    heading: str = ""  # "Section › Subsection"
    kind: str | None = None  # world | experience | opinion | observation (Retain bullets)
    entities: tuple[str, ...] = ()
    confidence: float | None = None
    content: str = ""  # the fact without its "- W @Peter:" prefix (Retain bullets); else the text


@dataclass
class _Block:
    kind: str  # "item" | "prose"
    start: int  # 0-based, inclusive
    end: int  # 0-based, inclusive
    heading: tuple[str, ...]
    in_retain: bool
    lines: list[str] = field(default_factory=list)


def estimate_tokens(text: str) -> int:
    cjk = count_cjk(text)
    return cjk + math.ceil((len(text) - cjk) / 4)


def search_tokens(text: str) -> list[str]:
    """The words the full-text index stores: lower-cased words; CJK runs as characters plus bigrams.

    NFKC first, so full-width ``ＳＴＡＧＩＮＧ`` and ``staging`` are the same word.
    """
    text = unicodedata.normalize("NFKC", text)
    if CJK_CHAR.search(text) is None:  # Most chunks: no CJK run, every word as it is (one findall, 5x faster).
        return [word[:MAX_TOKEN_CHARS].lower() for word in WORD.findall(text)]
    out: list[str] = []
    for match in WORD.finditer(text):
        word = match.group()
        if is_cjk(word):
            out.extend(word)
            out.extend(word[i : i + 2] for i in range(len(word) - 1))
        else:
            out.append(word[:MAX_TOKEN_CHARS].lower())
    return out


def search_text(text: str) -> str:
    return " ".join(search_tokens(text))


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _fence_end(lines: list[str], i: int, marker: str) -> int:
    """The line that closes the code fence opened at ``i`` with ``marker`` (the last line if none does)."""
    closing = re.compile(rf"^\s{{0,3}}{re.escape(marker[0])}{{{len(marker)},}}\s*$")
    j = i + 1
    while j < len(lines) and not closing.match(lines[j]):
        j += 1
    return min(j, len(lines) - 1)


def _item_end(lines: list[str], i: int, item: re.Match[str]) -> int:
    """The first line after the list item at ``i``: its indented lines, blank lines inside it and lazy
    continuation lines belong to it; a dedented list item, heading or fence ends it."""
    n = len(lines)
    content_indent = max(2, len(item.group(1)) + len(item.group(2)) + 1)
    j = i + 1
    while j < n:
        current = lines[j]
        if not current.strip():
            k = j
            while k < n and not lines[k].strip():
                k += 1
            if k < n and _indent(lines[k]) >= content_indent:
                j = k
                continue
            break
        if _indent(current) >= content_indent:
            j += 1
            continue
        if _LIST_ITEM.match(current) or is_heading(current) or _FENCE.match(current):
            break
        j += 1  # A lazy continuation line of the item's paragraph.
    return j


def _prose_end(lines: list[str], i: int) -> int:
    """The first line after the paragraph at ``i``: a blank line, a heading, a fence or a list item ends it."""
    j = i + 1
    while (
        j < len(lines)
        and lines[j].strip()
        and not (is_heading(lines[j]) or _FENCE.match(lines[j]) or _LIST_ITEM.match(lines[j]))
    ):
        j += 1
    return j


def _front_matter_end(lines: list[str]) -> int | None:
    """The line that closes a YAML front matter at the top, or None."""
    if lines and lines[0].strip() == "---":
        for j in range(1, min(len(lines), 200)):
            if lines[j].strip() in ("---", "..."):
                return j
    return None


def _blocks(lines: list[str]) -> Iterator[_Block]:
    """Split the lines into list items and prose blocks, tracking the heading path and the Retain section."""
    stack: list[tuple[int, str]] = []
    retain_level: int | None = None
    n = len(lines)
    i = 0

    def block(kind: str, start: int, end: int) -> _Block:
        while end > start and not lines[end].strip():
            end -= 1
        return _Block(
            kind, start, end, tuple(t for _, t in stack if t), retain_level is not None, lines[start : end + 1]
        )

    front = _front_matter_end(lines)
    if front is not None:
        yield block("prose", 0, front)
        i = front + 1
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            end = _fence_end(lines, i, fence.group(2))
            yield block("prose", i, end)
            i = end + 1
            continue
        heading = parse_heading(line)
        if heading:
            level = heading[0]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append(heading)
            if is_retain_heading(line):
                retain_level = level
            elif retain_level is not None and level <= retain_level:
                retain_level = None
            i += 1
            continue
        item = _LIST_ITEM.match(line)
        j = _item_end(lines, i, item) if item else _prose_end(lines, i)
        yield block("item" if item else "prose", i, j - 1)
        i = j


class _Packer:
    """Packs numbered lines into chunks of at most ``max_tokens``, carrying ``overlap`` tokens of lines over."""

    def __init__(self, max_tokens: int, overlap: int):
        self.max_tokens = max(1, max_tokens)
        self.overlap = max(0, min(overlap, self.max_tokens // 2))
        self.current: list[tuple[int, str, int]] = []  # (0-based line, text, tokens)
        self.tokens = 0
        self.ranges: list[tuple[int, int]] = []

    def cut(self) -> None:
        if not self.current:
            return
        self.ranges.append((self.current[0][0], self.current[-1][0]))
        keep: list[tuple[int, str, int]] = []
        kept = 0
        for entry in reversed(self.current):
            if kept + entry[2] > self.overlap:
                break
            keep.insert(0, entry)
            kept += entry[2]
        self.current, self.tokens = keep, kept

    def add_block(self, start: int, lines: list[str]) -> None:
        sized = [(start + offset, text, estimate_tokens(text)) for offset, text in enumerate(lines) if text.strip()]
        block_tokens = sum(t for _, _, t in sized)
        if self.current and block_tokens <= self.max_tokens and self.tokens + block_tokens > self.max_tokens:
            self.cut()  # Cut between blocks rather than inside one.
        for entry in sized:
            if self.current and self.tokens + entry[2] > self.max_tokens:
                self.cut()
            self.current.append(entry)
            self.tokens += entry[2]

    def finish(self) -> list[tuple[int, int]]:
        if self.current:
            self.ranges.append((self.current[0][0], self.current[-1][0]))
        ranges, self.ranges, self.current, self.tokens = self.ranges, [], [], 0
        # An overlap can leave a last chunk that lies wholly inside the one before it.
        return [r for i, r in enumerate(ranges) if i == 0 or r[1] > ranges[i - 1][1]]


def chunk_markdown(text: str, *, max_tokens: int = 512, overlap: int = 50) -> list[Chunk]:
    """Chunks of a Markdown text, in file order, each with its exact 1-based line range."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    chunks: list[Chunk] = []
    packer = _Packer(max_tokens, overlap)
    group_heading: tuple[str, ...] | None = None

    def flush() -> None:
        for start, end in packer.finish():
            body = "\n".join(lines[start : end + 1])
            chunks.append(
                Chunk(
                    start + 1,
                    end + 1,
                    body,
                    heading=" › ".join(group_heading or ()),
                    entities=tuple(mentioned_entities(body)),
                    content=body,
                )
            )

    for block in _blocks(lines):
        if block.kind == "prose":
            if group_heading is not None and block.heading != group_heading:
                flush()
            group_heading = block.heading
            packer.add_block(block.start, block.lines)
            continue
        flush()
        group_heading = None
        body = "\n".join(block.lines)
        fact = parse_retain_bullet(body) if block.in_retain else None
        if estimate_tokens(body) <= max_tokens:
            pieces = [(block.start, block.end)]
        else:
            item_packer = _Packer(max_tokens, overlap)
            item_packer.add_block(block.start, block.lines)
            pieces = item_packer.finish()
        for start, end in pieces:
            piece = "\n".join(lines[start : end + 1])
            chunks.append(
                Chunk(
                    start + 1,
                    end + 1,
                    piece,
                    heading=" › ".join(block.heading),
                    kind=fact.kind if fact else None,
                    entities=tuple(fact.entities if fact else mentioned_entities(piece)),
                    confidence=fact.confidence if fact else None,
                    content=fact.content if fact and len(pieces) == 1 else piece,
                )
            )
    flush()
    return chunks
