"""The daily projection (seed 004 P1-002): the memory index as Markdown a person can read in a minute.

``project()`` writes, under ``PROJECTION_DIR`` (default ``<data dir>/projection``; never the memory files):

- ``by-category/<category>.md``: one view per category, the memories newest first, each with its
  summary (its text), the section it is in (its detail), when it was created, how often it was used,
  and its source;
- ``summaries/YYYY-MM-DD.md``: totals, new today and yesterday, the distribution by category and by
  file, today's new memories, and the five most used.

A memory is a chunk of the recall index; reflect's ``bank/`` pages, views of the same facts, are left
out. Its category is its fact type (``world``, ``experience``, ``opinion``, ``observation``) when it is
a typed fact, else where it lives: ``memory`` (MEMORY.md), ``user``, ``soul``, ``identity``, ``tools``,
``daily-log``. "Created" is the index's timestamp: a daily log's day, else when the text was first
indexed. Files are replaced atomically; a category that no longer has memories loses its file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from guardian_app.models import MemoryChunk
from guardian_app.write.heuristic_guardian import one_line

CATEGORY_TITLES = {
    "world": "World (facts about the world)",
    "experience": "Experience (what the agent did)",
    "opinion": "Opinions (preferences and judgements)",
    "observation": "Observations (summaries)",
    "memory": "MEMORY.md (core memory)",
    "user": "USER.md (the user)",
    "soul": "SOUL.md (how the agent behaves)",
    "identity": "IDENTITY.md (who the agent is)",
    "tools": "TOOLS.md (tools and commands)",
    "agents": "AGENTS.md (the agent's instructions; its ## Tools holds tool facts in the openclaw profile)",
    "daily-log": "Daily logs",
    "entities": "Entity pages",
    "bank": "Bank pages",
}
_FILE_CATEGORY = {
    "MEMORY.md": "memory",
    "USER.md": "user",
    "SOUL.md": "soul",
    "IDENTITY.md": "identity",
    "TOOLS.md": "tools",
    "AGENTS.md": "agents",
}
MAX_PER_CATEGORY = 500
TOP_USED = 5


def category_of(path: str, kind: str | None) -> str:
    if kind:
        return kind
    if path in _FILE_CATEGORY:
        return _FILE_CATEGORY[path]
    if path.startswith("memory/"):
        return "daily-log"
    if path.startswith("bank/entities/"):
        return "entities"
    return "bank"


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file and a rename: a reader sees the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@dataclass(frozen=True)
class Memory:
    id: int
    category: str
    content: str
    heading: str
    created: dt.datetime
    hits: int
    source: str
    path: str

    @property
    def abstract(self) -> str:
        text = one_line(self.content)  # A bullet's text, without its "- ".
        return text if len(text) <= 240 else text[:239] + "…"


@dataclass
class Projection:
    day: dt.date
    files: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        return f"Projected {sum(self.totals.values())} memories into {len(self.files)} file(s) under {projection_dir()}"


def projection_dir() -> Path:
    return Path(settings.PROJECTION_DIR)


def daily_projection_is_on() -> bool:
    """Seed 004: ``qmdProjection.enabled`` (off by default) and ``dailyTrigger``."""
    return bool(settings.PROJECTION_ENABLED and settings.PROJECTION_DAILY_TRIGGER)


def load_memories() -> list[Memory]:
    # Reflect's bank pages are views of these memories already: projecting them would count each fact twice.
    rows = (
        MemoryChunk.objects.exclude(path__startswith="bank/")
        .only("id", "path", "start_line", "end_line", "kind", "content", "heading", "timestamp", "hits")
        .order_by("-timestamp", "path", "start_line")
    )
    return [
        Memory(
            id=row.id,
            category=category_of(row.path, row.kind),
            content=row.content,
            heading=row.heading,
            created=row.timestamp,
            hits=row.hits,
            source=row.source_ref,
            path=row.path,
        )
        for row in rows.iterator()
    ]


def _day_of(moment: dt.datetime) -> dt.date:
    return timezone.localtime(moment).date()


def render_category(category: str, memories: list[Memory], *, now: dt.datetime) -> str:
    lines = [
        f"# {CATEGORY_TITLES.get(category, category)}",
        "",
        f"> Updated: {timezone.localtime(now):%Y-%m-%d %H:%M %Z}",
        f"> Memories: {len(memories)}",
        "",
        "---",
        "",
    ]
    for memory in memories[:MAX_PER_CATEGORY]:
        lines += [f"## {memory.source}", "", f"**Summary**: {memory.abstract}", ""]
        if memory.heading and settings.PROJECTION_INCLUDE_L1:  # qmdProjection.includeL1: the detail
            lines += [f"**Section**: {memory.heading}", ""]
        lines += [
            f"- Created: {_day_of(memory.created).isoformat()}",
            f"- Used: {memory.hits} time(s)",
            f"- Source: `{memory.source}`",
            "",
            "---",
            "",
        ]
    if len(memories) > MAX_PER_CATEGORY:
        lines += [f"_{len(memories) - MAX_PER_CATEGORY} older memories are not shown._", ""]
    return "\n".join(lines)


def render_summary(memories: list[Memory], *, day: dt.date, now: dt.datetime) -> str:
    """The seed's daily summary: totals, new today and yesterday, distributions, today's new, top used."""
    yesterday = day - dt.timedelta(days=1)
    new_today = [m for m in memories if _day_of(m.created) == day]
    new_yesterday = [m for m in memories if _day_of(m.created) == yesterday]
    by_category = Counter(m.category for m in memories)
    by_file = Counter(m.path for m in memories)
    top = sorted((m for m in memories if m.hits > 0), key=lambda m: (-m.hits, m.source))[:TOP_USED]

    def counted(counter: Counter[str]) -> list[str]:
        return [f"- {name}: {count}" for name, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))]

    lines = [
        f"# Memory daily summary - {day.isoformat()}",
        "",
        f"> Generated {timezone.localtime(now):%Y-%m-%d %H:%M %Z}",
        "",
        "## Totals",
        "",
        f"- Memories: {len(memories)}",
        f"- New today: {len(new_today)}",
        f"- New yesterday: {len(new_yesterday)}",
        "",
        "## By category",
        "",
        *(counted(by_category) or ["(none)"]),
        "",
        "## By file",
        "",
        *(counted(by_file) or ["(none)"]),
        "",
        "## New today",
        "",
        *([f"- [{m.category}] {m.abstract} (`{m.source}`)" for m in new_today[:50]] or ["(none)"]),
        "",
        "## Most used (top 5)",
        "",
        *([f"- [{m.category}] {m.abstract} ({m.hits} times, `{m.source}`)" for m in top] or ["(none)"]),
        "",
    ]
    if len(new_today) > 50:
        lines.insert(lines.index("## Most used (top 5)") - 1, f"- … and {len(new_today) - 50} more")
    return "\n".join(lines)


def project(*, day: dt.date | None = None, now: dt.datetime | None = None, reindex: bool = True) -> Projection:
    """Bring the recall index up to date (unless ``reindex`` is off), then write the category views and the
    day's summary (see the module docstring). The views are left out with ``PROJECTION_CATEGORY_SEPARATE_FILES``
    off (and those of an earlier run removed), each memory's section with ``PROJECTION_INCLUDE_L1`` off. Runs
    whenever asked (``memory project``); the daily task asks only if ``PROJECTION_ENABLED`` and
    ``PROJECTION_DAILY_TRIGGER`` (``daily_projection_is_on``)."""
    from guardian_app.recall.index import index_workspace

    now = now or timezone.now()
    day = day or timezone.localtime(now).date()
    if reindex:
        index_workspace()  # Incremental: only files changed since the last run are read.
    memories = load_memories()
    root = projection_dir()
    result = Projection(day=day)
    groups: dict[str, list[Memory]] = {}
    for memory in memories:
        groups.setdefault(memory.category, []).append(memory)
    folder = root / "by-category"
    if not settings.PROJECTION_CATEGORY_SEPARATE_FILES:  # qmdProjection.categorySeparateFiles: summary only
        groups = {}
    for category, items in sorted(groups.items()):
        path = folder / f"{category}.md"
        atomic_write(path, render_category(category, items, now=now))
        result.files.append(path)
        result.totals[category] = len(items)
    if folder.is_dir():
        for stale in sorted(folder.glob("*.md")):
            if stale.stem not in groups and stale.stem in CATEGORY_TITLES:
                stale.unlink()
                result.removed.append(stale)
    summary = root / "summaries" / f"{day.isoformat()}.md"
    atomic_write(summary, render_summary(memories, day=day, now=now))
    result.files.append(summary)
    return result
