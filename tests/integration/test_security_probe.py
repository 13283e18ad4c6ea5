"""The adversarial probe's short mode (benchmarks/security_probe.py --quick, issue 18) against a real gunicorn +
SQLite + Celery worker on a loopback port: the auth matrix, hostile path names, NUL under every Content-Type,
oversized bodies, symlinks and FIFOs in place of memory files, catastrophic correction patterns, national ids through
the whole pipeline into every export, and a fuzz of the schema. Any 5xx, leak or crashed worker task fails it.
The full probe (a few thousand requests, optionally PostgreSQL + Redis) is run by hand; RELIABILITY.md has its
figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def probe() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "WORKSPACE_DIR")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "security_probe.py"), "--quick", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout)["results"][0]


def test_the_probe_covers_every_category(probe):
    assert probe["requests_tried"] >= 700
    for category, at_least in {
        "auth": 300, "paths": 60, "nul": 60, "size": 8, "links": 60, "regex": 20, "ids": 20, "fuzz": 150,
    }.items():  # fmt: skip
        assert probe["by_category"].get(category, 0) >= at_least, (category, probe["by_category"])


def test_the_id_check_read_every_place_an_id_could_reach(probe):
    scanned = probe["scanned"]
    assert scanned.get("export formats") == 5, scanned  # openai, alpaca, sharegpt, raw, csv
    assert scanned.get("samples", 0) >= 4 and scanned.get("conversation export turns", 0) >= 8, scanned


def test_no_request_gets_a_5xx(probe):
    assert probe["server_errors"] == 0, probe["server_error_samples"]


def test_nothing_leaks(probe):
    assert probe["leaks"] == 0, probe["leak_samples"]


def test_no_input_crashes_a_worker_task(probe):
    assert probe["worker_tracebacks"] == 0, probe["worker_log_tail"]
