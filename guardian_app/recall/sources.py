"""What the recall index reads and stores (seeds 001 and 003): which workspace files, their chunks as rows, and
the report of a run.

What is indexed, all under ``WORKSPACE_DIR`` and nothing outside it (a symlink that leaves the workspace
is skipped, symlinked folders are not followed): the five memory files, ``memory/YYYY-MM-DD.md`` daily logs
(a ``YYYY-MM-DD-topic.md`` too) and ``bank/**/*.md`` pages (``world.md``, ``experience.md``,
``opinions.md``, ``entities/<Name>.md``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from guardian_app.recall.chunking import Chunk, chunk_markdown, search_text
from guardian_app.recall.retain import entity_key, parse_time_range
from reflection_site import memory_files

SOURCE = "memory"
_DAILY_LOG = re.compile(r"^memory/(\d{4})-(\d{2})-(\d{2})(?:[-_][^/]*)?\.md$")
_BANK_PAGE = re.compile(r"^bank/(?:[^/.][^/]*/)*[^/.][^/]*\.md$")
_BANK_KINDS = {"bank/world.md": "world", "bank/experience.md": "experience", "bank/opinions.md": "opinion"}


@dataclass
class IndexReport:
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    files_too_large: list[str] = field(default_factory=list)
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_moved: int = 0
    chunks_kept: int = 0
    embedded: int = 0
    embedding_cache_hits: int = 0
    embedding_error: str | None = None
    took_ms: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(
            self.chunks_added or self.chunks_removed or self.chunks_moved or self.embedded or self.embedding_cache_hits
        )

    def summary(self) -> str:
        line = (
            f"{self.files_seen} file(s): {self.files_indexed} indexed, {self.files_unchanged} unchanged, "
            f"{self.files_removed} removed; chunks +{self.chunks_added} -{self.chunks_removed} "
            f"~{self.chunks_moved} moved, {self.chunks_kept} kept; embedded {self.embedded} "
            f"({self.embedding_cache_hits} from cache) in {self.took_ms:.0f} ms"
        )
        if self.embedding_error:
            line += f"; embeddings failed: {self.embedding_error}"
        return line


@dataclass(slots=True)
class ChunkRow:
    """A new ``memory_index_chunks`` row, before it is inserted (``MemoryChunk``'s columns, plain)."""

    path: str
    source: str
    start_line: int
    end_line: int
    hash: str
    text: str
    heading: str
    search_text: str
    content: str
    timestamp: dt.datetime
    embed_text: str  # what the model embeds: where the chunk is, its heading, its lines
    kind: str | None = None
    entities: list[str] = field(default_factory=list)
    entity_keys: str = ""
    confidence: float | None = None
    valid_from: dt.date | None = None
    valid_until: dt.date | None = None
    hits: int = 0
    last_hit_at: dt.datetime | None = None
    model: str = ""
    embedding: bytes | None = None


@dataclass(frozen=True)
class SourceFile:
    path: str  # relative, with "/"
    absolute: Path


# --- What is indexed --------------------------------------------------------------------------------
def is_indexable(path: str) -> bool:
    """Whether a workspace-relative path is one the index covers (the patterns above)."""
    files = memory_files.active().files
    return path in files or bool(_DAILY_LOG.match(path)) or bool(_BANK_PAGE.match(path))


def daily_log_date(path: str) -> dt.date | None:
    match = _DAILY_LOG.match(path)
    if match is None:
        return None
    try:
        return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


def inside(root: Path, candidate: Path) -> bool:
    try:
        candidate.resolve(strict=True).relative_to(root)
    except (OSError, ValueError):
        return False
    return True


def workspace_files(root: Path | None = None) -> list[SourceFile]:
    """Every indexable file under the workspace, sorted by path."""
    root = Path(root or settings.WORKSPACE_DIR).resolve()
    found: list[SourceFile] = []
    profile = memory_files.active()  # Its files; its bank/ pages live under pages_dir (memory/bank/ for OpenClaw).
    for name in profile.files:
        candidate = root / name
        if candidate.is_file() and inside(root, candidate):
            found.append(SourceFile(name, candidate))
    logs = root / "memory"
    if logs.is_dir() and not logs.is_symlink():
        for entry in os.scandir(logs):
            rel = f"memory/{entry.name}"
            if _DAILY_LOG.match(rel) and entry.is_file() and inside(root, Path(entry.path)):
                found.append(SourceFile(rel, Path(entry.path)))
    bank = root / profile.pages_dir / "bank"
    if bank.is_dir() and not bank.is_symlink():
        for folder, dirs, files in os.walk(bank):  # Symlinked folders are not followed.
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                absolute = Path(folder) / name
                rel = f"bank/{absolute.relative_to(bank).as_posix()}"  # a page's name, wherever it lives
                if _BANK_PAGE.match(rel) and inside(root, absolute):
                    found.append(SourceFile(rel, absolute))
    return sorted(found, key=lambda f: f.path)


def _context(path: str) -> str:
    """The words that say where a chunk is: ``USER``, ``2026-02-03``, ``The-Castle``, ``world``."""
    day = daily_log_date(path)
    if day is not None:
        return day.isoformat()
    if path.startswith("bank/entities/"):
        return Path(path).stem
    return Path(path).stem


def indexed_text(path: str, heading: str, text: str) -> str:
    """What is embedded and hashed for a chunk: where it is, its heading, its lines."""
    context = _context(path)
    if heading:
        context = f"{context} › {heading}"
    return f"{context}\n{text}"


def chunk_hash(path: str, heading: str, text: str) -> str:
    return hashlib.sha256(indexed_text(path, heading, text).encode()).hexdigest()


def file_chunks(path: str, text: str) -> list[Chunk]:
    return chunk_markdown(text, max_tokens=settings.RECALL_CHUNK_TOKENS, overlap=settings.RECALL_CHUNK_OVERLAP)


def _entities_for(path: str, chunk: Chunk) -> list[str]:
    names = list(chunk.entities)
    if path.startswith("bank/entities/"):
        page = Path(path).stem
        if entity_key(page) not in {entity_key(n) for n in names}:
            names.insert(0, page)
    return names


def _entity_keys(names: Iterable[str]) -> str:
    keys = [entity_key(n) for n in names]
    return f"|{'|'.join(keys)}|" if keys else ""


def new_chunk(path: str, chunk: Chunk, digest: str, timestamp: dt.datetime) -> ChunkRow:
    """The row of a new chunk of a workspace file (not yet stored; ``guardian_app.recall.writer`` inserts it)."""
    entities = _entities_for(path, chunk)
    valid_from, valid_until = parse_time_range(chunk.content or chunk.text, daily_log_date(path) or timestamp.date())
    embed_text = indexed_text(path, chunk.heading, chunk.text)
    return ChunkRow(
        path=path,
        source=SOURCE,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        hash=digest,
        text=chunk.text,
        heading=chunk.heading[:512],
        search_text=search_text(embed_text + " " + " ".join(entities)),
        embed_text=embed_text,
        kind=chunk.kind or _BANK_KINDS.get(path),
        entities=entities,
        entity_keys=_entity_keys(entities),
        confidence=chunk.confidence,
        content=chunk.content,
        timestamp=timestamp,
        valid_from=valid_from,
        valid_until=valid_until,
    )
