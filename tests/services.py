"""Real services for the integration and browser suites: checks, a polling helper, Celery worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def services_problem() -> str | None:
    """Why the real services cannot be used, or None when they can."""
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        return "DATABASE_URL does not point at PostgreSQL (run `make test-integration`)"
    if not settings.REDIS_URL:
        return "REDIS_URL is not set (run `make test-integration`)"
    try:
        import redis

        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as exc:
        return f"Redis at {settings.REDIS_URL} is not reachable: {exc}"
    try:
        import psycopg

        db = settings.DATABASES["default"]
        psycopg.connect(
            host=db.get("HOST") or "127.0.0.1",
            port=db.get("PORT") or 5432,
            user=db.get("USER") or "postgres",
            password=db.get("PASSWORD") or None,
            dbname="postgres",
            connect_timeout=3,
        ).close()
    except Exception as exc:
        return f"PostgreSQL is not reachable: {exc}"
    return None


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1, message: str = "") -> Any:
    """Poll until ``predicate()`` is truthy and return its value; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {message or predicate}")
        time.sleep(interval)


def database_url() -> str:
    """The URL of the database this test process uses (the test database pytest-django created)."""
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


class Worker:
    """A real ``celery worker`` process (queues celery and guardian) against this test's database and workspace."""

    def __init__(self, log_dir: Path, extra_env: dict[str, str] | None = None, concurrency: int = 1):
        self.log_dir = log_dir
        self.extra_env = extra_env or {}
        self.concurrency = concurrency
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "reflection_site.settings",
                "DATABASE_URL": database_url(),
                "REDIS_URL": settings.REDIS_URL,
                "WORKSPACE_DIR": str(settings.WORKSPACE_DIR),
                "LLM_BASE_URL": settings.LLM_BASE_URL,
                "LLM_API_KEY": settings.LLM_API_KEY,
                "LLM_MODEL": settings.LLM_MODEL,
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(self.extra_env)
        return env

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"worker-{self.starts}.log"

    def start(self, timeout: float = 60.0) -> Worker:
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
                f"it-{uuid.uuid4().hex[:8]}@%h",
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
        wait_until(
            lambda: self.process.poll() is not None or b"ready." in self.log_path.read_bytes(),
            timeout=timeout,
            message="the Celery worker to start",
        )
        if self.process.poll() is not None:
            pytest.fail(f"the Celery worker exited at start:\n{self.log_path.read_text()[-4000:]}")
        return self

    def _signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        """SIGKILL the worker and its pool children at once, as a crash or an OOM kill would."""
        self._signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=30)

    def stop(self) -> None:
        self._signal(signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.log_dir.glob("worker-*.log")))


@pytest.fixture
def flush_redis() -> None:
    """Start every test with an empty broker database: no message of an earlier test is delivered."""
    import redis

    redis.Redis.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture
def worker(transactional_db: None, flush_redis: None, tmp_path: Path) -> Iterator[Worker]:
    """A started worker; stopped (and its log attached on failure) after the test."""
    log_dir = tmp_path / "worker-logs"
    log_dir.mkdir()
    process = Worker(log_dir).start()
    try:
        yield process
    finally:
        process.stop()
        connection.close()


@pytest.fixture
def make_worker(transactional_db: None, flush_redis: None, tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    """Workers with settings of the test's choosing (``make_worker(extra_env={...}, concurrency=2)``), not started."""
    made: list[Worker] = []

    def make(**kwargs: Any) -> Worker:
        log_dir = tmp_path / f"worker-logs-{len(made)}"
        log_dir.mkdir()
        made.append(Worker(log_dir, **kwargs))
        return made[-1]

    yield make
    for process in made:
        process.stop()
