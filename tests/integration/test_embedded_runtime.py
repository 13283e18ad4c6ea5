"""The embedded default under a real ``make run`` (issue 16): supervisord, gunicorn and one Celery worker with beat
on the file broker and SQLite, in a fresh workspace.

One run serves the tests of this module in order (a run takes 20-40 s to start on a busy 2-core machine): a second
terminal finds its data and the CLI is quiet; unreadable message files are set aside while the worker goes on;
``/healthz`` says ``degraded`` while the worker is stopped; a SIGKILLed worker is back within 30 s and the turns
posted meanwhile are decided; Ctrl-C stops everything within 10 s, cleanly. A second, short run shows that a worker
that cannot start stops the whole run with a message and a non-zero status.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.integration.embedded_run import PYTHON, ROOT, MakeRun

STALE_S = 4  # WORKER_STALE_S of this run: a stopped worker shows as degraded within seconds.


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRun]:
    folder = tmp_path_factory.mktemp("embedded")
    make_run = MakeRun(
        folder / "workspace", log_path=folder / "make-run.log", WORKER_STALE_S=str(STALE_S), WORKER_HEARTBEAT_S="1"
    )
    make_run.start()
    try:
        make_run.wait_ready()
        yield make_run
    finally:
        leftovers = make_run.stop()
        assert not leftovers, f"processes outlived make run: {leftovers}"


@pytest.fixture(scope="module")
def key(run: MakeRun) -> str:
    return run.create_key("embedded")


def _turn(text: str) -> dict:
    return {
        "session": {"id": f"channel:embedded:{uuid.uuid4().hex[:6]}", "channel_id": "embedded"},
        "user_message": {"id": uuid.uuid4().hex, "content": text},
        "agent_reply": {"content": "Noted."},
    }


def _post_turns(run: MakeRun, key: str, count: int, label: str) -> list[str]:
    ids = []
    for n in range(count):
        status, body = run.request("POST", "/api/v1/turns", _turn(f"I prefer {label} number {n} for breakfast."), key)
        assert status == 201, body
        ids.append(body["id"])
    return ids


def _undecided(run: MakeRun, ids: list[str]) -> int:
    marks = ",".join("?" * len(ids))
    return run.query(
        f"SELECT COUNT(*) FROM conversation_turns WHERE id IN ({marks}) AND gate_status='pending'", tuple(ids)
    )[0][0]


def test_a_second_terminal_without_workspace_dir_uses_the_running_instance(run: MakeRun) -> None:
    terminal = {k: v for k, v in run.env.items() if k not in {"WORKSPACE_DIR", "PORT"}}
    out = run.manage("apikey", "create", "second-terminal", env=terminal)
    assert out.returncode == 0, out.stderr
    assert (
        out.stderr.strip() == f"Using the data of the running `make run`: {run.workspace} ({ROOT / 'var' / 'run.env'})"
    )
    new_key = out.stdout.strip().splitlines()[-1]
    status, body = run.request("POST", "/api/v1/turns", _turn("I prefer green tea."), new_key)
    assert status == 201, body  # The key is in the running instance's database (it was a 401 before).


def test_the_cli_prints_only_its_own_output_and_ends_quietly_when_its_reader_goes(run: MakeRun) -> None:
    out = run.manage("gate", "sweep")
    assert (out.stdout, out.stderr) == ("Requeued 0 pending turn(s)\n", "")  # No INFO line, no kombu warning.
    piped = subprocess.run(
        f"{PYTHON} manage.py gate stats --days 3000 | head -1",
        shell=True,
        cwd=ROOT,
        env=run.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert piped.stdout.startswith("DATE") and piped.stdout.count("\n") == 1
    assert piped.stderr == ""  # No BrokenPipeError traceback.


def test_unreadable_message_files_are_set_aside_and_the_worker_goes_on(run: MakeRun, key: str) -> None:
    worker = run.program_pid("worker")
    queue = run.data_dir / "broker" / "queue"
    bad = {
        # Older than any real message (names start with the time in ms): taken first.
        "0_truncated.celery.msg": b'{"body": "W1siMDEiXSwge31d", "content-encoding": "utf-8", "properties": {"deliv',
        "0_empty.celery.msg": b"",
    }
    for name, content in bad.items():
        (queue / name).write_bytes(content)
    ids = _post_turns(run, key, 20, "fault")
    run.wait_for(lambda: _undecided(run, ids) == 0, 90, "the turns posted after the bad files to be decided")
    for name, content in bad.items():
        assert (run.data_dir / "broker" / "bad" / name).read_bytes() == content
        assert run.supervisor_lines(rf"ERROR reflection_site\.broker unreadable message {re.escape(name)} moved to")
    assert not list(queue.glob("0_*"))
    assert run.program_pid("worker") == worker  # The same worker: it never crashed.
    assert not run.supervisor_lines(r"exited: (worker|web)")


def test_healthz_says_degraded_while_the_worker_is_stopped(run: MakeRun) -> None:
    worker = run.program_pid("worker")
    os.kill(worker, signal.SIGSTOP)  # Frozen: no heartbeat, no task taken; supervisord sees nothing.
    try:
        health = run.wait_for(
            lambda: (h := run.health()) and h["status"] == "degraded" and h, STALE_S + 15, "/healthz to say degraded"
        )
        # last_seen_s is rounded to a tenth: a worker 4.04 s silent is stale (> 4) and shows as 4.0.
        assert health["worker"]["ok"] is False and health["worker"]["last_seen_s"] >= STALE_S
        assert health["database"]["ok"] and health["broker"]["ok"]  # (Only the worker; HTTP 200: run.health().)
    finally:
        os.kill(worker, signal.SIGCONT)
    health = run.wait_for(lambda: (h := run.health()) and h["status"] == "ok" and h, 30, "/healthz to say ok again")
    assert health["worker"]["last_seen_s"] < STALE_S


def test_a_killed_worker_is_back_within_30_s_and_the_pending_turns_drain(run: MakeRun, key: str) -> None:
    old = run.program_pid("worker")
    old_group = [old, *(p.pid for p in psutil.Process(old).children(recursive=True))]
    killed_at = time.monotonic()
    os.kill(old, signal.SIGKILL)
    ids = _post_turns(run, key, 20, "restart")  # Stored and queued while no worker runs.
    new = run.wait_for(lambda: _worker_other_than(run, old), 30, "supervisord to start a new worker")
    run.wait_for(lambda: (h := run.health()) and h["worker"]["ok"], 30, "the new worker's heartbeat")
    back_in = time.monotonic() - killed_at
    assert back_in <= 30, f"the worker was back after {back_in:.1f} s"
    run.wait_for(lambda: _undecided(run, ids) == 0, 60, "the turns posted while it was dead to be decided")
    assert run.supervisor_lines(r"WARN exited: worker \(terminated by SIGKILL; not expected\)")
    assert run.supervisor_lines(rf"INFO spawned: 'worker' with pid {new}")
    # What the dead worker left (its pool and its beat) exits with it: no second beat, no stray process.
    run.wait_for(lambda: not any(psutil.pid_exists(p) and _alive(p) for p in old_group), 30, "the old pool to exit")


def _worker_other_than(run: MakeRun, old: int) -> int | None:
    try:
        pid = run.program_pid("worker")
    except AssertionError:
        return None
    return pid if pid != old else None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_ctrl_c_stops_every_process_within_10_s_cleanly(run: MakeRun) -> None:
    pointer = ROOT / "var" / "run.env"
    before = len(run.log())
    status, elapsed = run.interrupt()
    log = run.log()[before:]  # What the stop printed (a task's own failure earlier is not the stop's).
    # 0 when make saw supervisord end normally, 130 (-SIGINT here) when it passed the interrupt on.
    assert status in (0, 130, -signal.SIGINT), log[-3000:]
    assert elapsed <= 10, f"make run took {elapsed:.1f} s to stop"
    assert "Segmentation fault" not in log and "Traceback" not in log, log[-3000:]
    assert "stopped: worker (exit status 0)" in log and "stopped: web (exit status 0)" in log
    assert not pointer.exists() or f"WORKSPACE_DIR={run.workspace}" not in pointer.read_text()
    assert not run.stop()  # Nothing left running.


def test_a_worker_that_cannot_start_stops_the_run_with_a_message(tmp_path: Path) -> None:
    failing = MakeRun(tmp_path / "workspace", log_path=tmp_path / "make-run.log", WORKER_CONCURRENCY="not-a-number")
    failing.start()
    try:
        assert failing.process is not None
        status = failing.process.wait(timeout=150)
    finally:
        leftovers = failing.stop()
    log = failing.log()
    assert status == 2, log[-3000:]  # make's own status for a recipe that failed (it exited 1).
    assert "make run: the worker process exited on every start" in log
    assert len(re.findall(r"INFO spawned: 'worker'", log)) == 6  # The first start and startretries=5 back-offs.
    assert "gave up: worker entered FATAL state" in log
    assert not leftovers
