"""Soak of the embedded default under a real ``make run`` (issue 16): gunicorn and one Celery worker with beat on the
file broker and SQLite, as a new user starts them, taking bursts of turns from 16 concurrent clients while rollbacks,
dataset exports and recall queries run beside them.

Default: 10 bursts of 300 turns (``SOAK_BURSTS``, ``SOAK_TURNS_PER_BURST``, ``SOAK_CLIENTS``); a longer soak is e.g.
``SOAK_BURSTS=100``. The sweeps' grace periods are an hour here, so that a message the broker lost would show as a
turn never decided instead of being sent again by the sweep. Afterwards:
- 0 worker crashes: supervisord never saw the worker or the web server exit, the worker's pid is the one it started
  with, and its log has no unrecoverable error;
- 0 messages lost or parsed twice: the worker received one gate message per turn posted and one guardian message per
  UPDATE_* decision, each task id once, and no message file is left in the queue, set aside as bad, or half-written;
- every turn decided (once), every UPDATE_* decision has exactly one audit.
The figures are printed and written to ``test-output/reliability/embedded_soak.json``.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration.embedded_run import ROOT, MakeRun

BURSTS = int(os.environ.get("SOAK_BURSTS", "10"))
TURNS_PER_BURST = int(os.environ.get("SOAK_TURNS_PER_BURST", "300"))
CLIENTS = int(os.environ.get("SOAK_CLIENTS", "16"))
# Generous: on a 2-core machine shared with other test runs a worker decided 5-10 turns a second (an idle one ~100).
DRAIN_TIMEOUT_S = float(os.environ.get("SOAK_DRAIN_TIMEOUT_S", str(300 + BURSTS * TURNS_PER_BURST / 5)))

FOODS = ["green tea", "black coffee", "oat porridge", "rye toast", "miso soup", "mango juice", "plain yoghurt"]


def _body(burst: int, n: int) -> dict:
    session = f"channel:soak:{(burst * TURNS_PER_BURST + n) % 40}"
    if n % 4:  # One turn in four states a preference (an UPDATE_USER and a guardian write), the rest is small talk.
        text = f"Thanks, that answer was helpful ({burst}-{n})."
    else:
        text = f"I prefer {FOODS[n % len(FOODS)]} with item {burst}-{n} for breakfast on weekdays."
    return {
        "session": {"id": session, "channel_id": "soak"},
        "user_message": {"id": f"soak-{burst}-{n}-{uuid.uuid4().hex[:8]}", "content": text},
        "agent_reply": {"content": "Noted."},
        "context": [{"role": "user", "message": "Good morning", "timestamp": 1_700_000_000_000}],
    }


class Beside(threading.Thread):
    """Runs ``action`` every ``every`` seconds until stopped, counting HTTP statuses."""

    def __init__(self, name: str, every: float, action) -> None:
        super().__init__(name=name, daemon=True)
        self.every, self.action = every, action
        self.statuses: Counter[int] = Counter()
        self.errors: list[str] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                for status in self.action():
                    self.statuses[status] += 1
            except Exception as exc:  # noqa: BLE001 - reported by the test, not raised in a thread
                self.errors.append(repr(exc))
            self.stopped.wait(self.every)


def test_soak_of_the_embedded_default_loses_and_repeats_nothing(tmp_path: Path) -> None:
    run = MakeRun(
        tmp_path / "workspace",
        log_path=tmp_path / "make-run.log",
        GATE_SWEEP_GRACE_S="3600",
        GUARDIAN_SWEEP_GRACE_S="3600",
    )
    run.start()
    try:
        run.wait_ready()
        key = run.create_key("soak")
        worker_pid = run.program_pid("worker")
        figures = _soak(run, key)
        _settle(run, figures["turns"])
        _check(run, worker_pid, figures)
    finally:
        leftovers = run.stop()
    assert not leftovers, leftovers


def _soak(run: MakeRun, key: str) -> dict:
    rolled: set[str] = set()
    rng = random.Random(16)

    def rollback() -> list[int]:
        status, page = run.request("GET", "/api/v1/guardian/audits?status=written&limit=20", key=key)
        if status != 200:
            return [status]
        items = [a for a in page["items"] if a["id"] not in rolled]
        if not items:
            return []
        audit = rng.choice(items)
        rolled.add(audit["id"])
        status, _ = run.request(
            "POST", f"/api/v1/guardian/audits/{audit['id']}/rollback", {"reason": "soak: undo one write"}, key
        )
        return [status]

    exports: list[str] = []

    def export() -> list[int]:
        collected, _ = run.request("POST", "/api/v1/dataset/collect", {}, key)
        status, body = run.request("POST", "/api/v1/dataset/exports", {"format": "raw"}, key)
        if status == 202:
            exports.append(body["id"])
        return [collected, status]

    def recall() -> list[int]:
        status, _ = run.request("GET", "/api/v1/recall?q=breakfast+tea", key=key)
        return [status]

    # At a pace a person or an agent keeps beside an agent's turns (each takes one of make run's two web workers).
    beside = [Beside("rollbacks", 2, rollback), Beside("exports", 10, export), Beside("recall", 1, recall)]
    for thread in beside:
        thread.start()

    ingest: Counter[int] = Counter()
    turn_ids: list[str] = []
    burst_rates: list[float] = []
    lock = threading.Lock()

    def post(args: tuple[int, int]) -> None:
        status, body = run.request("POST", "/api/v1/turns", _body(*args), key, timeout=60)
        with lock:
            ingest[status] += 1
            if status == 201:
                turn_ids.append(body["id"])

    started = time.monotonic()
    with ThreadPoolExecutor(CLIENTS) as pool:
        for burst in range(BURSTS):
            burst_started = time.monotonic()
            list(pool.map(post, [(burst, n) for n in range(TURNS_PER_BURST)]))
            burst_rates.append(TURNS_PER_BURST / (time.monotonic() - burst_started))
            time.sleep(1)
    posted_s = time.monotonic() - started

    def drained() -> bool:
        pending = run.query("SELECT COUNT(*) FROM conversation_turns WHERE gate_status='pending'")[0][0]
        unaudited = run.query(
            "SELECT COUNT(*) FROM memory_gate_decisions d WHERE d.decision LIKE 'UPDATE_%' AND NOT EXISTS "
            "(SELECT 1 FROM write_guardian_audit a WHERE a.decision_id = d.id)"
        )[0][0]
        return pending == 0 and unaudited == 0

    run.wait_for(drained, DRAIN_TIMEOUT_S, "every turn decided and every UPDATE_* audited")
    drained_s = time.monotonic() - started
    run.wait_for(
        lambda: not run.query("SELECT COUNT(*) FROM dataset_exports WHERE status IN ('pending', 'running')")[0][0],
        120,
        "the exports to finish",
    )
    for thread in beside:
        thread.stopped.set()
        thread.join(timeout=60)
    return {
        "bursts": BURSTS,
        "turns_per_burst": TURNS_PER_BURST,
        "clients": CLIENTS,
        "ingest_statuses": dict(ingest),
        "turns": len(turn_ids),
        "burst_turns_per_s": [round(r, 1) for r in burst_rates],
        "posting_s": round(posted_s, 1),
        "all_decided_s": round(drained_s, 1),
        "beside": {t.name: {"statuses": dict(t.statuses), "errors": t.errors[:5]} for t in beside},
        "exports": len(exports),
    }


GATE_RECEIVED = re.compile(r"Task sessions_app\.tasks\.run_gate\[[0-9a-f-]{36}\] received")


def _settle(run: MakeRun, turns: int, timeout_s: float = 180.0) -> None:
    """Wait until the run is quiet before counting: the broker's queue empty (the index tasks that the writes
    trigger drain after the last decision) and the worker's log, which reaches us through supervisord's output,
    holding a "received" line for every gate message. On time-out the checks below say what is missing."""
    broker = run.data_dir / "broker"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        queued = len(list((broker / "queue").glob("*.msg"))) + len(list((broker / "tmp").iterdir()))
        if queued == 0 and len(GATE_RECEIVED.findall(run.log())) >= turns - 2:
            time.sleep(2)  # the last lines of the log
            return
        time.sleep(1)


def _check(run: MakeRun, worker_pid: int, figures: dict) -> None:
    log = run.log()
    turns = figures["turns"]
    decisions = dict(run.query("SELECT decision, COUNT(*) FROM memory_gate_decisions GROUP BY decision"))
    updates = sum(count for decision, count in decisions.items() if decision.startswith("UPDATE_"))
    audits = dict(
        run.query(
            "SELECT a.status, COUNT(*) FROM write_guardian_audit a JOIN memory_gate_decisions d ON d.id = a.decision_id "
            "GROUP BY a.status"
        )
    )
    received = Counter(re.findall(r"Task ([\w.]+)\[([0-9a-f-]{36})\] received", log))
    by_task = Counter(name for name, _ in received)
    broker = run.data_dir / "broker"
    figures.update(
        decisions=decisions,
        audits_by_status=audits,
        messages_received=dict(by_task),
        messages_received_twice=sum(1 for count in received.values() if count > 1),
        worker_crashes=len(re.findall(r"exited: (worker|web) ", log)),
        bad_messages=len(list((broker / "bad").iterdir())),
        messages_left=len(list((broker / "queue").glob("*.msg"))) + len(list((broker / "tmp").iterdir())),
        rollbacks=sum(1 for _ in run.query("SELECT id FROM rollbacks")),
    )
    print(json.dumps(figures, indent=2))
    out = ROOT / "test-output" / "reliability"
    out.mkdir(parents=True, exist_ok=True)
    (out / "embedded_soak.json").write_text(json.dumps(figures, indent=2))

    assert figures["ingest_statuses"] == {201: BURSTS * TURNS_PER_BURST}, figures["ingest_statuses"]
    assert figures["worker_crashes"] == 0 and run.program_pid("worker") == worker_pid, run.tail()
    assert "Unrecoverable error" not in log and "CRITICAL" not in log.replace("CRIT Supervisor is running as root", "")
    # Every turn decided, once.
    assert run.query("SELECT gate_status, COUNT(*) FROM conversation_turns") == [("done", turns)]
    assert sum(decisions.values()) == turns
    assert not run.query("SELECT turn_id FROM memory_gate_decisions GROUP BY turn_id HAVING COUNT(*) > 1")
    # Every message once: a gate message per turn, a guardian message per UPDATE_*; none lost, none twice.
    # Lost is checked in the database above (every turn decided, once); the worker's "received" lines reach us
    # through supervisord's merged output, which copies each program's pipe in the chunks it reads, not in lines:
    # a worker line cut by a web line is lost to the count (1 in 3,000 in two runs, 3 in 3,000 in a run beside
    # other suites; each time its turn was decided once and no message was left or quarantined). The log may
    # count a receipt short, never over: up to 0.5 % short is the merge, over is a message taken twice.
    short = max(2, turns // 200)
    assert turns - short <= by_task["sessions_app.tasks.run_gate"] <= turns, by_task
    assert updates - short <= by_task["guardian_app.tasks.run_guardian"] <= updates, by_task
    assert figures["messages_received_twice"] == 0
    assert figures["bad_messages"] == 0 and figures["messages_left"] == 0
    # Every UPDATE_* has exactly one audit (a rolled-back write keeps its one audit).
    assert sum(audits.values()) == updates
    assert not run.query("SELECT decision_id FROM write_guardian_audit GROUP BY decision_id HAVING COUNT(*) > 1")
    assert updates >= turns // 8, decisions  # The soak did write: a quarter of its turns state a preference.
    # What ran beside the bursts got answers, never a server error.
    for name, seen in figures["beside"].items():
        assert not seen["errors"], (name, seen["errors"])
        assert seen["statuses"] and all(status < 500 for status in seen["statuses"]), (name, seen["statuses"])
    assert figures["rollbacks"] >= 1 and figures["exports"] >= 1
    assert not run.query("SELECT id FROM dataset_exports WHERE status != 'completed'")


pytestmark = pytest.mark.timeout(int(DRAIN_TIMEOUT_S) + 600)
