"""Retrieval quality: a realistic workspace (55 facts over the five files, daily logs and bank pages) and 40
questions with the line that answers each. Keyword-only recall@5 is held at or above the figure measured
when this was written (the README states it); a change to chunking, tokenising or ranking that loses
answers fails here."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from guardian_app.index import index_workspace
from guardian_app.recall import recall

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recall_workspace"
QUESTIONS: list[dict[str, Any]] = json.loads((FIXTURE / "questions.json").read_text(encoding="utf-8"))
NOW = dt.datetime(2026, 2, 20, 12, 0, tzinfo=dt.UTC)  # Three days after the last daily log.

# Measured: 39 of 40 questions have their answer in the top 5 (keyword-only, decay on).
KEYWORD_RECALL_AT_5 = 39 / 40


def hit(result: Any, expected: str) -> bool:
    path, _, line = expected.partition("#L")
    return result.path == path and result.start_line <= int(line) <= result.end_line


def recall_at_5(mode: str) -> tuple[float, list[str]]:
    misses = []
    for item in QUESTIONS:
        results = recall(item["q"], k=5, mode=mode, now=NOW).results
        if not any(hit(r, e) for r in results for e in item["expect"]):
            misses.append(f"{item['q']} -> {[r.source for r in results]}")
    return 1 - len(misses) / len(QUESTIONS), misses


@pytest.fixture
def quality_workspace(workspace: Path) -> Path:
    shutil.copytree(FIXTURE, workspace, dirs_exist_ok=True)
    (workspace / "questions.json").unlink()
    index_workspace()
    return workspace


def test_the_fixture_is_big_enough():
    facts = sum(
        line.startswith("- ")
        for path in FIXTURE.rglob("*.md")
        for line in path.read_text(encoding="utf-8").splitlines()
    )
    assert facts >= 40 and len(QUESTIONS) >= 30
    for item in QUESTIONS:  # Every expected line exists and is a fact.
        for expected in item["expect"]:
            path, _, line = expected.partition("#L")
            assert (FIXTURE / path).read_text(encoding="utf-8").splitlines()[int(line) - 1].startswith("- ")


def test_keyword_recall_at_5_holds(quality_workspace, capsys):
    score, misses = recall_at_5("keyword")
    with capsys.disabled():
        print(f"\nkeyword-only recall@5 = {score:.3f} ({len(QUESTIONS) - len(misses)}/{len(QUESTIONS)})")
        for miss in misses:
            print(f"  miss: {miss}")
    assert score >= KEYWORD_RECALL_AT_5, misses
