"""The offline gate's and guardian's decision logic per turn, before and after a change (issue 21).

Method: every turn of tests/fixtures/memory_eval/conversations.jsonl (313 turns, English and Chinese) goes through
``heuristic_gate.classify_turn``; a write goes through ``heuristic_guardian.review_fact`` against the target file
as the run has built it so far, and its edits are applied in memory (``guardian.apply_edits``). No database, no
file, no broker: the rules' own cost (poisoning classes, supersede, paraphrase similarity with WordLlama). The
corpus is replayed ``--rounds`` times after one warm-up round (which also loads WordLlama); turns/s over the
timed rounds, and the process's CPU time per turn. The guardian's per-text caches (a line's attribute, a text's
WordLlama vector) are emptied before every round, so a round is a first pass over its texts.

``--tree DIR`` runs the same on another checkout of the project (``git archive <commit> | tar -x -C DIR``),
for a before/after on the same machine in the same minute.

Usage: python benchmarks/decide.py [--rounds 5] [--tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "memory_eval" / "conversations.jsonl"
FILES = {
    "UPDATE_MEMORY": "MEMORY.md",
    "UPDATE_USER": "USER.md",
    "UPDATE_SOUL": "SOUL.md",
    "UPDATE_IDENTITY": "IDENTITY.md",
    "UPDATE_TOOLS": "TOOLS.md",
}


def child(tree: Path, rounds: int) -> dict[str, float]:
    sys.path.insert(0, str(tree))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    os.environ["WORKSPACE_DIR"] = tempfile.mkdtemp(prefix="bench-decide-")
    import django

    django.setup()
    from guardian_app.write.edits import apply_edits
    from guardian_app.write.heuristic_guardian import review_fact
    from sessions_app.heuristic_gate import classify_turn

    turns = [t["text"] for line in CORPUS.read_text(encoding="utf-8").splitlines() for t in json.loads(line)["turns"]]

    def one_round() -> int:
        files: dict[str, str] = {}
        writes = 0
        for text in turns:
            verdict = classify_turn(text)
            if verdict.decision == "NO_WRITE":
                continue
            name = FILES[verdict.decision]
            reply = review_fact(verdict.candidate_fact or "", files.get(name, ""), target_file=name)
            if reply.action == "write":
                files[name] = apply_edits(files.get(name, ""), reply.edits)
                writes += 1
        return writes

    import importlib

    # Caches keyed by text (a line's attribute, a text's vector) are emptied before each round, so that a round
    # costs what a worker's first pass over these turns costs, not a replay of texts it has already seen.
    cached = []
    for name in ("guardian_app.write.supersede", "guardian_app.write.similarity"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        cached += [f for f in vars(module).values() if callable(getattr(f, "cache_clear", None))]

    def cold_round() -> int:
        for function in cached:
            function.cache_clear()
        return one_round()

    cold_round()  # Warm-up: imports, regex compilation, the embedding model.
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        cold_round()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(turns) * rounds
    return {"turns": n, "turns_per_s": n / wall, "cpu_ms_per_turn": cpu / n * 1000}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=ROOT)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.tree.resolve(), args.rounds)))
        return
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--tree", str(args.tree), "--rounds", str(args.rounds)],
        capture_output=True,
        text=True,
        check=True,
        cwd=args.tree,
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"{args.tree}: {figures['turns']} turns, {figures['turns_per_s']:.0f} turns/s, "
        f"{figures['cpu_ms_per_turn']:.2f} ms CPU a turn"
    )


if __name__ == "__main__":
    main()
