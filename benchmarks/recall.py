"""Recall benchmark: index build, incremental re-index of one edited file, recall latency at 10k and 100k chunks.

    .venv/bin/python benchmarks/recall.py                       # SQLite (the embedded default), 10k and 100k
    .venv/bin/python benchmarks/recall.py --database-url postgres://postgres@127.0.0.1:5432/reflection_bench_recall
    .venv/bin/python benchmarks/recall.py --scales 10000 --queries 100

Method. A synthetic workspace of daily logs (50 bullets a file, 14 words a bullet drawn Zipf-distributed
from English's function words and 20,000 made-up content words, 5 % of bullets in Chinese) is indexed from
scratch by ``index_workspace`` with the default embedder (chunking, inserts, the FTS5 triggers or the tsvector
column, and the local in-wheel WordLlama model's 256-dim vectors). Queries ask about stored facts as an agent
does: 1-3 content words of a random stored fact (80 %), 1-3 random content words that may be in no fact (15 %),
Chinese (5 %). A stress mix of unrelated random words (long OR posting lists) is timed too. Each query runs end
to end through ``recall()`` (``k=25``): keyword-only, and hybrid (the query embedded by the local model inside
the timed call, brute-force cosine over the NumPy matrix, merged 0.5/0.5, boosted); with a time expression
(two searches); and on SQLite through sqlite-vec's ``vec0`` KNN table (``RECALL_BRUTE_FORCE_MAX_CHUNKS=0``),
with the vector search alone timed on both backends for the same queries and their top 25 compared. The matrix
load (the first hybrid query after an index change) is reported on its own. The build includes the vec0 table. Incremental re-index: one bullet of one file
edited and one appended, then ``index_workspace(paths=[file])`` as the re-index after a guardian write does;
and a full incremental scan that stats every file.

Targets (issues 10, 22): keyword recall p95 < 20 ms and hybrid p95 < 30 ms at 100k chunks; incremental
re-index of one edited file < 100 ms; index build with local embeddings >= 2,000 chunks/s.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BULLETS_PER_FILE = 50
WORDS_PER_BULLET = 14
VOCABULARY = 20000
CJK_FACTS = [
    "预发布服务器部署在东京",
    "每周一凌晨三点自动备份",
    "生产数据库的只读副本在法兰克福",
    "周报用中文写",
    "团队下个月去维也纳",
]
KINDS = ["W", "B", "O(c=0.8)", "S"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def vocabulary(rng: random.Random) -> list[str]:
    """Function words first (English's most frequent words), then made-up content words, in Zipf rank order."""
    from guardian_app.recall.recall import STOP_WORDS

    function_words = sorted(w for w in STOP_WORDS if len(w) > 2)
    rng.shuffle(function_words)
    syllables = "ka lo mi ren tu sa vel dor fin gra hul ix jo ne pra qua ris sto tem ul vor wy xen yal zu".split()
    content: set[str] = set()
    while len(content) < VOCABULARY:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if word not in STOP_WORDS:
            content.add(word)
    return function_words + sorted(content, key=lambda _: rng.random())


class Words:
    """Zipf-distributed draws (s = 1) over function and content words, as in English text: about half the
    tokens of a fact are function words, and queries ask for content words with the same skew."""

    def __init__(self, rng: random.Random):
        from itertools import accumulate

        from guardian_app.recall.recall import STOP_WORDS

        self.rng = rng
        self.words = vocabulary(rng)
        weights = [1 / (rank + 1) for rank in range(len(self.words))]
        self.cumulative = list(accumulate(weights))
        first_content = next(i for i, w in enumerate(self.words) if w not in STOP_WORDS)
        self.content = self.words[first_content:]
        self.content_cumulative = list(accumulate(weights[first_content:]))

    def sample(self, n: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=n)

    def sample_content(self, n: int) -> list[str]:
        return self.rng.choices(self.content, cum_weights=self.content_cumulative, k=n)


def write_workspace(root: Path, chunks: int, words: Words, rng: random.Random) -> tuple[list[str], list[list[str]]]:
    """The daily logs; returns their paths and, for the queries, the content words of a sample of facts."""
    from guardian_app.recall.recall import STOP_WORDS

    files = chunks // BULLETS_PER_FILE
    (root / "memory").mkdir(parents=True, exist_ok=True)
    day = 0
    paths = []
    facts: list[list[str]] = []
    start = time.mktime((2015, 1, 1, 0, 0, 0, 0, 0, -1))
    for _ in range(files):
        stamp = time.strftime("%Y-%m-%d", time.localtime(start + day * 86400))
        day += 1
        lines = [f"# {stamp}", "", "## Retain"]
        for _ in range(BULLETS_PER_FILE):
            kind = rng.choice(KINDS)
            entity = rng.choice(words.content[:500])
            if rng.random() < 0.05:
                lines.append(f"- {kind} @{entity}: {rng.choice(CJK_FACTS)}，{rng.randint(1, 999)}号。")
            else:
                sentence = words.sample(WORDS_PER_BULLET)
                lines.append(f"- {kind} @{entity}: {' '.join(sentence)}.")
                if rng.random() < 0.02:
                    facts.append([w for w in sentence if w not in STOP_WORDS] or [entity])
        rel = f"memory/{stamp}.md"
        (root / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(rel)
    return paths, facts


CJK_QUERIES = ["东京的服务器", "自动备份", "法兰克福", "中文周报", "维也纳"]


def queries_about_facts(facts: list[list[str]], words: Words, rng: random.Random, n: int) -> list[str]:
    """What an agent asks: 1-3 words of a stored fact (80 %), words that may be in no fact (15 %), Chinese (5 %)."""
    out = []
    for i in range(n):
        if i % 20 == 19:
            out.append(rng.choice(CJK_QUERIES))
        elif i % 20 < 3:
            out.append(" ".join(words.sample_content(rng.choice([1, 2, 3]))))
        else:
            fact = rng.choice(facts)
            out.append(" ".join(rng.sample(fact, min(len(fact), rng.choice([1, 2, 2, 3, 3])))))
    return out


def queries_random(words: Words, rng: random.Random, n: int) -> list[str]:
    """A stress mix: 1-3 unrelated content words, so most multi-word queries find no AND match and fall back to OR."""
    out = []
    for i in range(n):
        if i % 20 == 19:
            out.append(rng.choice(CJK_QUERIES))
        else:
            out.append(" ".join(words.sample_content(rng.choice([1, 2, 2, 3, 3]))))
    return out


def time_recall(texts: list[str], *, mode: str, vectors: list | None = None) -> list[float]:
    from guardian_app.recall.recall import recall

    timings = []
    for i, text in enumerate(texts):
        started = time.perf_counter()
        answer = recall(text, k=25, mode=mode, query_vector=vectors[i] if vectors is not None else None)
        timings.append((time.perf_counter() - started) * 1000)
        ANSWERED[mode] = ANSWERED.get(mode, 0) + bool(answer.results)
        OR_FALLBACKS[mode] = OR_FALLBACKS.get(mode, 0) + (answer.operator == "OR")
    return timings


ANSWERED: dict[str, int] = {}
OR_FALLBACKS: dict[str, int] = {}


def counted(mode: str) -> str:
    """ "answered / OR" shares of the queries timed since the last call."""
    answered, fallbacks = ANSWERED.pop(mode, 0), OR_FALLBACKS.pop(mode, 0)
    return f"{answered} answered, {fallbacks} OR"


def bench_scale(chunks: int, base: Path, n_queries: int, settings, rows: list[list[str]]) -> dict:  # noqa: ANN001

    from guardian_app.models import MemoryChunk
    from guardian_app.recall.index import index_workspace

    rng = random.Random(chunks)
    words = Words(rng)
    workspace = base / f"ws-{chunks}"
    paths, facts = write_workspace(workspace, chunks, words, rng)
    settings.WORKSPACE_DIR = workspace
    settings.EMBEDDING_BASE_URL = ""

    started = time.perf_counter()
    report = index_workspace(rebuild=True)  # Chunking, inserts, FTS, and the local model's embeddings.
    build_s = time.perf_counter() - started
    count = MemoryChunk.objects.count()
    rows.append(
        [f"{count:,}", "index build (from Markdown)", f"{build_s:.1f} s", f"{count / build_s:,.0f} chunks/s", ""]
    )

    # Incremental re-index of one edited file: the path a guardian write takes (paths=[file]) ...
    edit_times, scan_times = [], []
    for i in range(20):
        rel = paths[rng.randrange(len(paths))]
        path = workspace / rel
        lines = path.read_text(encoding="utf-8").splitlines()
        lines[5] = f"- W @edit: edited fact number {i} {' '.join(words.sample_content(6))}."
        lines.append(f"- B @edit: appended fact number {i}.")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        started = time.perf_counter()
        report = index_workspace(paths=[rel])
        edit_times.append((time.perf_counter() - started) * 1000)
        assert report.files_indexed == 1 and report.chunks_added == 2, report.summary()
    # ... and a full incremental scan (beat schedule, CLI) that stats every file and re-reads the edited one.
    for i in range(5):
        rel = paths[rng.randrange(len(paths))]
        path = workspace / rel
        path.write_text(path.read_text(encoding="utf-8") + f"- S scan edit {i}.\n", encoding="utf-8")
        started = time.perf_counter()
        report = index_workspace()
        scan_times.append((time.perf_counter() - started) * 1000)
        assert report.files_indexed == 1, report.summary()
    target = "< 100 ms" if chunks >= 100_000 else ""
    rows.append(
        [
            f"{count:,}",
            "re-index one edited file (paths=[file]), p50 / p95",
            f"{statistics.median(edit_times):.1f} / {percentile(edit_times, 95):.1f} ms",
            "20 edits",
            target,
        ]
    )
    rows.append(
        [
            f"{count:,}",
            f"incremental scan of all {len(paths):,} files, one edited, p50",
            f"{statistics.median(scan_times):.0f} ms",
            "5 runs",
            "",
        ]
    )

    texts = queries_about_facts(facts, words, random.Random(chunks + 1), n_queries)
    stress = queries_random(words, random.Random(chunks + 3), n_queries)
    time_recall(texts[:10], mode="keyword")  # Warm the page cache and the statement cache.
    counted("keyword")
    keyword = time_recall(texts, mode="keyword")
    keyword_counts = counted("keyword")
    random_words = time_recall(stress, mode="keyword")
    stress_counts = counted("keyword")
    rows.append(
        [
            f"{count:,}",
            f"recall keyword-only (k=25), p50 / p95 ({n_queries} queries)",
            f"{statistics.median(keyword):.1f} / {percentile(keyword, 95):.1f} ms",
            keyword_counts,
            "p95 < 20 ms" if chunks >= 100_000 else "",
        ]
    )
    rows.append(
        [
            f"{count:,}",
            "  same, unrelated random words (stress), p50 / p95",
            f"{statistics.median(random_words):.1f} / {percentile(random_words, 95):.1f} ms",
            stress_counts,
            "",
        ]
    )

    # Hybrid with the default embedder: the local model embedded every chunk during the build above, and each
    # query is embedded inside the timed call.
    from guardian_app.recall import vectors as vectors_module
    from guardian_app.recall.embeddings import current_config

    label = current_config().label
    embedded = MemoryChunk.objects.filter(model=label).count()
    vectors_module._matrices.clear()
    started = time.perf_counter()
    time_recall(texts[:1], mode="hybrid")
    load_ms = (time.perf_counter() - started) * 1000
    counted("hybrid")
    hybrid = time_recall(texts, mode="hybrid")
    counted("hybrid")
    rows.append([f"{count:,}", f"chunks embedded by {label} during the build", f"{embedded:,}", "", ""])
    rows.append([f"{count:,}", "hybrid: first query (loads the vector matrix)", f"{load_ms:.0f} ms", "", ""])
    rows.append(
        [
            f"{count:,}",
            "recall hybrid (k=25, local model, NumPy), p50 / p95",
            f"{statistics.median(hybrid):.1f} / {percentile(hybrid, 95):.1f} ms",
            f"{n_queries} queries",
            "p95 < 30 ms" if chunks >= 100_000 else "",
        ]
    )
    scoped = time_recall([f"{t} last month" for t in texts[:50]], mode="hybrid")
    counted("hybrid")
    rows.append(
        [
            f"{count:,}",
            "  same with a time expression (two searches), p50 / p95",
            f"{statistics.median(scoped):.1f} / {percentile(scoped, 95):.1f} ms",
            "50 queries",
            "",
        ]
    )
    vec_rows(chunks=count, texts=texts, settings=settings, label=label, rows=rows)
    shutil.rmtree(workspace, ignore_errors=True)
    return {
        "keyword_p95": percentile(keyword, 95),
        "edit_p95": percentile(edit_times, 95),
        "hybrid_p95": percentile(hybrid, 95),
        "build_rate": count / build_s,
    }


def vec_rows(*, chunks: int, texts: list[str], settings, label: str, rows: list[list[str]]) -> None:  # noqa: ANN001
    """sqlite-vec's vec0 KNN table against the NumPy matrix: the same 100 queries' vector search alone (the query
    embedded once, outside the timing), then whole hybrid recalls through vec0; and a rebuild of the table."""
    from django.db import connection

    from guardian_app.recall import vectors as vectors_module
    from guardian_app.recall.embeddings import load_local_embedder
    from guardian_app.recall.rows import Filters
    from guardian_app.recall.vec_table import sync_vector_table, vec_connection

    if connection.vendor != "sqlite" or vec_connection() is None:
        return
    started = time.perf_counter()
    sync_vector_table(label, rebuild=True)
    rebuild_s = time.perf_counter() - started
    queries = load_local_embedder().embed(texts[:100])
    used = {"vec0": 0}
    real_knn = vectors_module.knn_search

    def counting_knn(*args):  # noqa: ANN002, ANN202 - counts the queries the vec0 table really answered
        used["vec0"] += 1
        return real_knn(*args)

    vectors_module.knn_search = counting_knn
    timings: dict[str, list[float]] = {"numpy": [], "vec0": []}
    found: dict[str, list[list[int]]] = {"numpy": [], "vec0": []}
    for limit, backend in ((10**9, "numpy"), (0, "vec0")):
        settings.RECALL_BRUTE_FORCE_MAX_CHUNKS = limit
        vectors_module._vector_counts.clear()
        for query in queries:
            started = time.perf_counter()
            found[backend].append(list(vectors_module.vector_search(query, label, Filters(), 100)))
            timings[backend].append((time.perf_counter() - started) * 1000)
    overlap = statistics.mean(len(set(a[:25]) & set(b[:25])) / 25 for a, b in zip(*found.values(), strict=True))
    hybrid = time_recall(texts[:50], mode="hybrid")
    counted("hybrid")
    settings.RECALL_BRUTE_FORCE_MAX_CHUNKS = 200_000
    vectors_module._vector_counts.clear()
    vectors_module.knn_search = real_knn
    rows.append([f"{chunks:,}", "  searches answered by the vec0 table (of 100 + 50 asked)", str(used["vec0"]), "", ""])
    for backend in ("numpy", "vec0"):
        values = timings[backend]
        rows.append(
            [
                f"{chunks:,}",
                f"vector search alone ({backend}, 100 nearest), p50 / p95",
                f"{statistics.median(values):.1f} / {percentile(values, 95):.1f} ms",
                "100 queries",
                "",
            ]
        )
    rows.append([f"{chunks:,}", "  vec0 top 25 shared with NumPy's", f"{overlap:.1%}", "", ""])
    rows.append(
        [
            f"{chunks:,}",
            "recall hybrid through vec0 (k=25), p50 / p95",
            f"{statistics.median(hybrid):.1f} / {percentile(hybrid, 95):.1f} ms",
            "50 queries",
            "",
        ]
    )
    rows.append([f"{chunks:,}", "vec0 table rebuilt from the chunks", f"{rebuild_s:.1f} s", "", ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="10000,100000", help="Chunk counts, comma-separated.")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--database-url", default="", help="PostgreSQL URL (the database is dropped and created).")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="recall-bench-"))
    os.environ["WORKSPACE_DIR"] = str(base / "home")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["EMBEDDING_BASE_URL"] = ""  # The default embedder: the local in-wheel model.
    os.environ.setdefault("WORKSPACE_PROFILE", "seed")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _harness import use_database

    use_database(args.database_url)

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    database = (
        f"SQLite {sqlite3.sqlite_version} (WAL, synchronous={settings.SQLITE_SYNCHRONOUS})"
        if connection.vendor == "sqlite"
        else f"PostgreSQL {connection.cursor().connection.info.server_version}"
    )
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {database}")
    rows: list[list[str]] = []
    results = {}
    try:
        for scale in [int(s) for s in args.scales.split(",") if s]:
            results[scale] = bench_scale(scale, base, args.queries, settings, rows)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    headers = ["chunks", "measure", "result", "n / rate / queries", "target"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    biggest = max(results) if results else None
    if biggest and biggest >= 100_000:
        r = results[biggest]
        met = r["keyword_p95"] < 20 and r["edit_p95"] < 100 and r["hybrid_p95"] < 30 and r["build_rate"] >= 2000
        print(f"targets at {biggest:,} chunks: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
