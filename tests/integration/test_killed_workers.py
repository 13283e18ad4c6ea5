"""Killed workers (issue 8, item 2): real Celery worker processes on the real Redis broker, SIGKILLed at random
points of gate and guardian tasks and restarted, while turns keep arriving. Afterwards every turn has exactly
one decision, every UPDATE_* decision exactly one audit, no fact appears twice in a file and each file equals
its last recorded version: lost = 0, duplicated = 0.

How a kill is placed: three workers (prefork, one pool process each) take turns. The next victim is a worker
whose log shows a gate or guardian task received and not yet finished; after a random pause (0-0.5 s, the fake
LLM answers in 0.05-0.4 s) it is SIGKILLed, either its whole process group (a crash, an OOM kill of the
machine) or, one kill in three, its pool process only (Celery's main process then requeues the message:
``CELERY_TASK_REJECT_ON_WORKER_LOST``). It is restarted at once, without waiting for it to be ready. A message
held by a dead worker comes back from Redis after ``CELERY_BROKER_VISIBILITY_TIMEOUT_S`` (10 s here; a
starting worker restores such messages), and the gate and guardian sweeps run every few kills as the beat
would (with a grace period of 15 s instead of 120 s); the drift check finishes a write a kill interrupted
between the file and its record.

Default: 50 kills (``KILL_ROUNDS``), two turns posted before each kill while fewer than ``MAX_BACKLOG`` (60)
wait for the gate. The long mode is
``KILL_ROUNDS=500``. The figures (kills by interrupted task, redeliveries, sweeps, duplicate LLM calls,
lost, duplicated) are printed and written to ``test-output/reliability/killed_workers.json``.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path

import pytest
from django.db import connection

from guardian_app.models import MEMORY_FILES, FileVersion, WorkspaceFile, WriteGuardianAudit
from guardian_app.write.history import INTERRUPTED, check_drift
from guardian_app.write.recovery import sweep_pending_decisions
from reflection_site.models import ApiKey
from sessions_app.gate import sweep_pending_turns
from sessions_app.models import ConversationTurn, Decision, GateStatus, MemoryGateDecision
from tests.conftest import ApiClient, turn_payload
from tests.fake_llm import FakeReply, smart_responder
from tests.services import ROOT, Worker, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

KILL_ROUNDS = int(os.environ.get("KILL_ROUNDS", "50"))
TURNS_PER_KILL = int(os.environ.get("KILL_TURNS_PER_ROUND", "2"))
SEED = int(os.environ.get("KILL_SEED", "0")) or random.SystemRandom().randrange(1, 1 << 30)
WORKERS = 3
VISIBILITY_TIMEOUT_S = 10
SWEEP_GRACE_S = 15
MAX_BACKLOG = 60  # Turns waiting for the gate beyond which no more are posted until the workers catch up.
REPORT_DIR = ROOT / "test-output" / "reliability"

WORDS = (
    "amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon marble nectar opal pepper "
    "quartz raven saffron tundra umber velvet willow xenon yarrow zephyr"
).split()
# Eight of ten are UPDATE_* for the offline gate that the fake LLM answers with (every file gets writes).
TEMPLATES = (
    "Remember that project {a} ships from room {n}.",
    "I prefer {a} tea with {b} biscuits on day {n}.",
    "My favourite colour is {a} {b} number {n}.",
    "Your name is {A}{n}.",
    "Please always answer in {a} style when we talk about {b} {n}.",
    "The staging API lives at https://{a}-{n}.example.com/api.",
    "记住{a}项目在{n}号房间发布。",
    "我喜欢{a}{b}{n}号。",
    "Do you like {a} {n}?",
    "Thanks, that's all for {a} {n}.",
)
_TASK_LINE = re.compile(r"Task (\S+)\[([0-9a-f-]{36})\] (received|succeeded|retry|raised|ignored|rejected)")
WATCHED = {"sessions_app.tasks.run_gate": "gate", "guardian_app.tasks.run_guardian": "guardian"}


class KillableWorker(Worker):
    """A worker that can be (re)started without waiting for it to be ready, and killed whole or in part."""

    def spawn(self) -> None:
        self.starts += 1
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "reflection_site",
                "worker",
                "-Q",
                "celery,guardian",
                "-c",
                str(self.concurrency),
                "-n",
                f"kill-{uuid.uuid4().hex[:8]}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel",
                "INFO",
            ],
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def current_log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    @property
    def ready(self) -> bool:
        return self.alive and " ready." in self.current_log()

    def in_flight(self) -> list[str]:
        """The watched tasks this process has received and not finished (per its current log)."""
        return [WATCHED[name] for name in _open_tasks(self.current_log()) if name in WATCHED]

    def pool_children(self) -> list[int]:
        if not self.alive:
            return []
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return [int(pid) for pid in path.read_text().split()]
        except (FileNotFoundError, ValueError):
            return []

    def kill_pool_child(self) -> bool:
        children = self.pool_children()
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return bool(children)


@pytest.fixture
def killable_workers(transactional_db, flush_redis, tmp_path: Path) -> Iterator[list[KillableWorker]]:
    workers = []
    for n in range(WORKERS):
        log_dir = tmp_path / f"kill-worker-{n}"
        log_dir.mkdir()
        workers.append(
            KillableWorker(
                log_dir,
                extra_env={
                    "CELERY_BROKER_VISIBILITY_TIMEOUT_S": str(VISIBILITY_TIMEOUT_S),
                    "LLM_RETRY_BACKOFF_S": "0",
                    "GUARDIAN_LOCK_TIMEOUT_S": "20",
                },
                concurrency=1,
            )
        )
    try:
        yield workers
    finally:
        for worker in workers:
            worker.kill()
        connection.close()


def _message(rng: random.Random, n: int) -> str:
    a, b = rng.sample(WORDS, 2)
    return TEMPLATES[n % len(TEMPLATES)].format(a=a, b=b, A=a.title(), n=1000 + n)


def _open_tasks(log: str) -> list[str]:
    """The names of the tasks a worker's log shows received and not finished; a lost pool process ends
    what it held (its main process requeues the message)."""
    open_tasks: dict[str, str] = {}
    for line in log.splitlines():
        if "WorkerLostError" in line or "exited with 'signal" in line:
            open_tasks.clear()
            continue
        match = _TASK_LINE.search(line)
        if match is None:
            continue
        name, task_id, what = match.groups()
        if what == "received":
            open_tasks[task_id] = name
        else:
            open_tasks.pop(task_id, None)
    return sorted(open_tasks.values())


def _received_counts(workers: list[KillableWorker]) -> Counter[tuple[str, str]]:
    received: Counter[tuple[str, str]] = Counter()
    for worker in workers:
        for name, task_id, what in _TASK_LINE.findall(worker.log()):
            if what == "received":
                received[(name, task_id)] += 1
    return received


def _converged() -> str | None:
    """What is still unfinished, or None."""
    pending = ConversationTurn.objects.exclude(gate_status=GateStatus.DONE).count()
    if pending:
        return f"{pending} turn(s) not decided"
    updates = MemoryGateDecision.objects.exclude(decision=Decision.NO_WRITE)
    without = updates.exclude(id__in=WriteGuardianAudit.objects.values("decision_id")).count()
    if without:
        return f"{without} decision(s) without an audit"
    interrupted = WriteGuardianAudit.objects.filter(status="failed", reason=INTERRUPTED).count()
    if interrupted:
        return f"{interrupted} write(s) interrupted and not yet finished"
    if WorkspaceFile.objects.filter(pending_audit__isnull=False).exists():
        return "a file has a pending write"
    return None


@pytest.mark.timeout(600 + 10 * KILL_ROUNDS)  # About 3 s a kill on this machine; the long mode runs for minutes.
def test_killed_workers_lose_nothing_and_duplicate_nothing(fake_llm, killable_workers, settings, capsys):
    rng = random.Random(SEED)
    llm_lock = threading.Lock()
    delays = random.Random(SEED + 1)

    def slow_smart(body: dict) -> FakeReply:
        with llm_lock:
            delay = delays.uniform(0.05, 0.4)
        return FakeReply(content=smart_responder(body), delay=delay)

    fake_llm.set_default(slow_smart)
    _, key = ApiKey.generate("killed-workers", ["ingest", "read"])
    client = ApiClient(key)
    posted: list[str] = []

    def post_turns(count: int) -> None:
        for _ in range(count):
            n = len(posted)
            session = f"channel:kill:s{n % 7}"
            response = client.post(
                "/api/v1/turns", turn_payload(session_id=session, user=_message(rng, n), agent="OK.")
            )
            assert response.status_code == HTTPStatus.CREATED, response.content
            posted.append(response.json()["id"])

    workers = killable_workers
    for worker in workers:
        worker.spawn()
    post_turns(TURNS_PER_KILL * WORKERS)

    kills: Counter[str] = Counter()  # how: group | pool_child
    interrupted: Counter[str] = Counter()  # which task a kill interrupted: gate | guardian | other | none
    swept = {"turns": 0, "decisions": 0}
    started = time.monotonic()
    victim_index = 0
    while sum(kills.values()) < KILL_ROUNDS:
        # Two more turns, unless a backlog has built up (workers that keep being killed decide fewer turns than
        # arrive): past MAX_BACKLOG the long mode would spend its end waiting for the backlog, not killing.
        if ConversationTurn.objects.filter(gate_status=GateStatus.PENDING).count() < MAX_BACKLOG:
            post_turns(TURNS_PER_KILL)
        # The next ready worker (in turn) inside a gate or a guardian task, each kind in turn when it can.
        wanted = ("gate", "guardian")[sum(kills.values()) % 2]
        picky_until = time.monotonic() + 3
        deadline = time.monotonic() + 20
        victim: KillableWorker | None = None
        while victim is None and time.monotonic() < deadline:
            for offset in range(WORKERS):
                candidate = workers[(victim_index + offset) % WORKERS]
                if not candidate.alive:
                    candidate.spawn()
                    continue
                busy = candidate.in_flight() if candidate.ready else []
                if busy and (wanted in busy or time.monotonic() > picky_until):
                    victim = candidate
                    victim_index = (victim_index + offset + 1) % WORKERS
                    break
            else:
                time.sleep(0.02)
        if victim is None:
            # Every worker idle or starting: more work, and a sweep in case something waits for one.
            swept["turns"] += sweep_pending_turns(grace_s=SWEEP_GRACE_S)
            swept["decisions"] += sweep_pending_decisions(grace_s=SWEEP_GRACE_S)
            continue
        time.sleep(rng.uniform(0.0, 0.5))
        if rng.random() < 1 / 3 and victim.pool_children():
            lost_tasks = _open_tasks(victim.current_log())  # The main process logs the loss at once.
            victim.kill_pool_child()
            kills["pool_child"] += 1
        else:
            victim.kill()
            lost_tasks = _open_tasks(victim.current_log())
            kills["group"] += 1
            victim.spawn()
        lost_tasks = [WATCHED.get(name, "other") for name in lost_tasks]
        for kind in set(lost_tasks) or {"none"}:
            interrupted[kind] += 1
        if sum(kills.values()) % 10 == 0:
            swept["turns"] += sweep_pending_turns(grace_s=SWEEP_GRACE_S)
            swept["decisions"] += sweep_pending_decisions(grace_s=SWEEP_GRACE_S)
    kill_phase_s = time.monotonic() - started

    # No more kills. Redis restores the dead workers' messages once they are older than the visibility
    # timeout (a starting worker restores them); the sweeps and the drift check run as the beat would.
    time.sleep(VISIBILITY_TIMEOUT_S + 1)
    workers[0].stop()
    workers[0].spawn()
    for worker in workers:
        if not worker.alive:
            worker.spawn()
    wait_until(lambda: all(w.ready for w in workers), timeout=120, message="the workers to restart")

    def settled() -> bool:
        swept["turns"] += sweep_pending_turns(grace_s=SWEEP_GRACE_S)
        swept["decisions"] += sweep_pending_decisions(grace_s=SWEEP_GRACE_S)
        check_drift()
        return _converged() is None

    wait_until(settled, timeout=300 + KILL_ROUNDS, interval=2, message=f"the pipeline to settle ({_converged()})")
    for worker in workers:
        worker._signal(signal.SIGTERM)
    for worker in workers:
        worker.stop()
    check_drift()
    total_s = time.monotonic() - started

    # --- Invariants ------------------------------------------------------------------------------
    assert ConversationTurn.objects.count() == len(posted)
    decisions = list(MemoryGateDecision.objects.values_list("turn_id", "run_number", "decision", "id"))
    per_turn = Counter((turn_id, run) for turn_id, run, _, _ in decisions)
    missing_decisions = [t for t in posted if (t, 1) not in per_turn]
    extra_decisions = sum(n - 1 for n in per_turn.values() if n > 1)
    assert missing_decisions == [] and extra_decisions == 0

    updates = {decision_id for _, _, kind, decision_id in decisions if kind != Decision.NO_WRITE}
    audits = list(
        WriteGuardianAudit.objects.filter(decision_id__isnull=False).values(
            "id", "decision_id", "status", "reason", "target_file", "candidate_fact", "retry_of_id"
        )
    )
    per_decision = Counter(a["decision_id"] for a in audits)
    assert set(per_decision) == updates, "every UPDATE_* decision, and only those, has an audit"
    extra_audits = sum(n - 1 for n in per_decision.values() if n > 1)
    assert extra_audits == 0
    statuses = Counter(a["status"] for a in audits)
    assert set(statuses) <= {"written", "refused", "skipped"}, [a for a in audits if a["status"] == "failed"]

    files = {name: (settings.WORKSPACE_DIR / name) for name in MEMORY_FILES}
    texts = {name: path.read_text() if path.exists() else None for name, path in files.items()}
    lost_facts, doubled_facts = [], []
    # A written fact that a later written fact superseded (issue 21: one attribute, one value; "My favourite
    # colour is …" twice) was replaced on purpose, and that later write's reason names it (a write finished after a
    # kill names it from its edits: "written (recorded after an interruption); it replaced: …").
    superseded = {
        fact["candidate_fact"]
        for fact in audits
        for later in audits
        if later["status"] == "written"
        and ((later["reason"] or "").startswith("supersedes") or "; it replaced: " in (later["reason"] or ""))
        and fact["candidate_fact"] in (later["reason"] or "")
    }
    for audit in audits:
        if audit["status"] != "written":
            continue
        text = texts[audit["target_file"]] or ""
        count = text.count(audit["candidate_fact"])
        if count == 0 and audit["candidate_fact"] not in superseded:
            lost_facts.append(audit)
        elif count > 1:
            doubled_facts.append(audit)
    doubled_lines = []
    for name, text in texts.items():
        lines = [line for line in (text or "").splitlines() if line.strip() and not line.startswith("#")]
        doubled_lines += [(name, line) for line, n in Counter(lines).items() if n > 1]
    assert lost_facts == [] and doubled_facts == [] and doubled_lines == []

    for name in MEMORY_FILES:
        row = WorkspaceFile.objects.select_related("current_version__snapshot").filter(file_name=name).first()
        if texts[name] is None:
            assert row is None or row.current_version is None or row.current_version.snapshot is None
            continue
        assert row is not None and row.pending_audit_id is None
        assert row.current_version.snapshot.content == texts[name], f"{name} differs from its last recorded version"
    written_ids = {a["id"] for a in audits if a["status"] == "written"}
    write_versions = Counter(
        FileVersion.objects.filter(kind=FileVersion.Kind.WRITE, audit_id__in=written_ids).values_list(
            "audit_id", flat=True
        )
    )
    assert all(write_versions[audit_id] == 1 for audit_id in written_ids)

    # --- Figures ---------------------------------------------------------------------------------
    received = _received_counts(workers)
    redelivered = Counter(WATCHED.get(name, "other") for (name, _), n in received.items() for _ in range(n - 1))
    gate_calls: Counter[str] = Counter()
    guardian_calls: Counter[str] = Counter()
    for body in fake_llm.chat_requests:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if "ROLE: memory_gate" in system:
            gate_calls[user.split("<turn>")[-1]] += 1
        elif "ROLE: write_guardian" in system:
            guardian_calls[user.split("<fact>")[-1]] += 1
    figures = {
        "seed": SEED,
        "kills": sum(kills.values()),
        "kills_by_signal_target": dict(kills),
        "kills_interrupting": dict(interrupted),
        "worker_starts": sum(w.starts for w in workers),
        "turns": len(posted),
        "update_decisions": len(updates),
        "audits": dict(statuses),
        "redelivered_messages": dict(redelivered),
        "sweep_requeued": swept,
        "llm_calls": {"gate": sum(gate_calls.values()), "guardian": sum(guardian_calls.values())},
        "duplicate_llm_calls": {
            "gate": sum(n - 1 for n in gate_calls.values()),
            "guardian": sum(n - 1 for n in guardian_calls.values()),
        },
        "lost": len(missing_decisions) + len(lost_facts),
        "duplicated": extra_decisions + extra_audits + len(doubled_facts) + len(doubled_lines),
        "kill_phase_s": round(kill_phase_s, 1),
        "total_s": round(total_s, 1),
    }
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "killed_workers.json").write_text(json.dumps(figures, indent=2) + "\n")
    with capsys.disabled():
        print("\nkilled workers:", json.dumps(figures))
    assert figures["kills"] >= KILL_ROUNDS
    assert interrupted["gate"] > 0 and interrupted["guardian"] > 0, figures
    assert figures["lost"] == 0 and figures["duplicated"] == 0
