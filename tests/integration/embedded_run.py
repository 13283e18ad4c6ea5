"""``make run`` as a user starts it, for the embedded-default tests (issue 16): SQLite, the file broker, supervisord
with gunicorn and one Celery worker (beat embedded), in a fresh workspace on a free port.

The run is its own process group (``start_new_session``), so ``interrupt()`` is what Ctrl-C in its terminal does:
SIGINT to make and supervisord (supervisord puts each program in a group of its own). Whatever the test does, the
run is stopped at the end (``stop()``), and a process it left behind is killed and reported.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def embedded_env(workspace: Path, **extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PostgreSQL, Redis or LLM from the test suite's own settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "LLM_BASE_URL", "DJANGO_SETTINGS_MODULE", "PYTEST_CURRENT_TEST"}
    }
    env.update(WORKSPACE_DIR=str(workspace), WORKSPACE_PROFILE="seed", **extra)
    return env


class MakeRun:
    def __init__(self, workspace: Path, *, log_path: Path, **env: str) -> None:
        self.workspace = workspace
        self.data_dir = workspace / ".openclaw-reflection"
        self.port = free_port()
        self.log_path = log_path
        self.env = embedded_env(workspace, PORT=str(self.port), **env)
        self.process: subprocess.Popen[bytes] | None = None
        self.seen: set[int] = set()  # Every process of the run observed, to check that none outlives it.

    # --- life cycle -------------------------------------------------------------------------------------
    def start(self) -> MakeRun:
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            ["make", "--no-print-directory", "run"],
            cwd=ROOT,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        return self

    def wait_ready(self, timeout: float = 180) -> dict[str, Any]:
        """Until /healthz says the worker is alive; fails with the log's tail if the run died or took too long."""
        return self.wait_for(lambda: (h := self.health()) and h["worker"]["ok"] and h, timeout, "the run to be ready")

    def wait_for(self, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"make run exited ({self.process.returncode}) waiting for {what}:\n{self.tail()}")
            value = predicate()
            if value:
                self.note_processes()
                return value
            time.sleep(0.25)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}:\n{self.tail()}")

    def interrupt(self) -> tuple[int, float]:
        """Ctrl-C: SIGINT to the run's process group; (exit status, seconds until make exited)."""
        assert self.process is not None
        self.note_processes()
        started = time.monotonic()
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            status = self.process.wait(timeout=60)
        finally:
            elapsed = time.monotonic() - started
        return status, elapsed

    def stop(self) -> list[str]:
        """Stop the run if it still runs; kill and name every process of it still alive afterwards."""
        if self.process is not None and self.process.poll() is None:
            try:
                self.interrupt()
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        time.sleep(0.5)
        leftovers = []
        for pid in self.seen:
            try:
                proc = psutil.Process(pid)
                if proc.status() != psutil.STATUS_ZOMBIE:
                    leftovers.append(f"{pid} {' '.join(proc.cmdline())[:120]}")
                    proc.kill()
            except psutil.Error:
                pass
        if hasattr(self, "_log"):
            self._log.close()
        return leftovers

    def note_processes(self) -> None:
        if self.process is None:
            return
        try:
            root = psutil.Process(self.process.pid)
            self.seen.update(p.pid for p in [root, *root.children(recursive=True)])
        except psutil.Error:
            pass

    # --- what it runs -----------------------------------------------------------------------------------
    def program_pid(self, name: str) -> int:
        """The pid of supervisord's program ``name`` (web: gunicorn's master, worker: Celery's main process)."""
        marker = {"web": "gunicorn", "worker": "celery"}[name]
        assert self.process is not None
        for proc in psutil.Process(self.process.pid).children(recursive=True):
            try:
                if proc.parent() and "supervisord" in " ".join(proc.parent().cmdline()):
                    if marker in " ".join(proc.cmdline()):
                        return proc.pid
            except psutil.Error:
                continue
        raise AssertionError(f"no {name} process under supervisord:\n{self.tail()}")

    def tail(self, chars: int = 6000) -> str:
        return self.log()[-chars:]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def manage(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PYTHON, "manage.py", *args],
            cwd=ROOT,
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def create_key(self, name: str = "soak") -> str:
        out = self.manage(
            "apikey", "create", name, *(f"--scope={s}" for s in ("ingest", "read", "operate", "annotate"))
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip().splitlines()[-1]

    # --- HTTP ---------------------------------------------------------------------------------------------
    def request(
        self, method: str, path: str, body: Any = None, key: str | None = None, timeout: float = 30
    ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            headers = {"Content-Type": "application/json"}
            if key:
                headers["Authorization"] = f"Bearer {key}"
            conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            response = conn.getresponse()
            data = response.read()
            try:
                return response.status, json.loads(data) if data else None
            except ValueError:
                return response.status, data.decode(errors="replace")
        finally:
            conn.close()

    def health(self) -> dict[str, Any] | None:
        try:
            status, body = self.request("GET", "/healthz", timeout=5)
        except OSError:
            return None
        return body if status == 200 and isinstance(body, dict) else None

    # --- the database, read as an operator would --------------------------------------------------------
    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.data_dir / "reflection.db", timeout=10) as db:
            return db.execute(sql, params).fetchall()

    def supervisor_lines(self, pattern: str) -> list[str]:
        return [line for line in self.log().splitlines() if re.search(pattern, line)]
