"""Issue 18, item 6: production starts from a clean install of ``requirements.txt`` alone.

The project's own venv also holds the dev requirements, which pull in packages the runtime imports without
declaring them: with ``REDIS_URL`` set, the worker died at start because kombu's Redis transport imports
``packaging``, present only through the dev tools. Here a separate venv is built from ``requirements.txt``
alone (cached under ``var/install-check/`` by the file's hash; pip's cache makes a rebuild ~20 s), and from it:
``manage.py migrate`` and ``check --deploy``, an API key, then ``make run``'s own supervisord configuration
(gunicorn and a Celery worker with beat embedded) against PostgreSQL and Redis: ``/healthz`` must see the worker's
heartbeat and the broker, and a turn posted over HTTP must be decided by that worker through Redis.
``make test-install`` runs this test alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from sessions_app.models import ConversationTurn, GateStatus
from tests.conftest import turn_payload
from tests.services import ROOT, database_url, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

REQUIREMENTS = ROOT / "requirements.txt"
CACHE = ROOT / "var" / "install-check"


def _runtime_venv() -> Path:
    """A venv holding requirements.txt and nothing else, rebuilt whenever the file changes."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:16]
    venv = CACHE / f"venv-{digest}"
    if (venv / ".complete").exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    for old in CACHE.glob("venv-*"):
        shutil.rmtree(old, ignore_errors=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(REQUIREMENTS),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if pip.returncode:
        pytest.fail(f"pip install -r requirements.txt failed:\n{pip.stdout[-3000:]}\n{pip.stderr[-3000:]}")
    (venv / ".complete").write_text(digest)
    return venv


@pytest.fixture(scope="module")
def venv() -> Path:
    return _runtime_venv()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The production environment: PostgreSQL (this test's database), Redis, nothing from the test venv."""
    import redis

    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "WORKSPACE_DIR": str(tmp_path / "workspace"),
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "LLM_BASE_URL": "",  # the offline gate and guardian
        "PYTHONUNBUFFERED": "1",
    }


def _run(venv: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)} failed from the clean venv:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_the_clean_venv_holds_the_runtime_only(venv):
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True
    )
    names = {row["name"].lower() for row in json.loads(listed.stdout)}
    assert "django" in names and "celery" in names and "google-re2" in names
    assert not names & {"pytest", "ruff", "pytest-django", "factory-boy"}, "dev requirements leaked in"


def test_the_deploy_check_passes(venv, env):
    _run(venv, env, "check", "--deploy", "--fail-level", "ERROR")  # Exits non-zero on an import error too.


@pytest.fixture
def make_run(venv: Path, env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """``make run``'s supervisord configuration, with the clean venv's programs; yields (base URL, API key, log)."""
    _run(venv, env, "migrate", "--noinput")
    key = _run(venv, env, "apikey", "create", "install-check", "--scope", "ingest", "--scope", "read")
    api_key = key.strip().splitlines()[-1].strip()
    conf = (ROOT / "supervisord.conf").read_text()
    conf = conf.replace("%(here)s/.venv/", f"{venv}/").replace("%(here)s", str(ROOT))
    assert ".venv" not in conf.replace(str(venv), "")
    (tmp_path / "supervisord.conf").write_text(conf)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    port = _free_port()
    run_env = {
        **env,
        "PORT": str(port),
        "WEB_WORKERS": "1",
        "WORKER_CONCURRENCY": "1",
        "REFLECTION_RUN_DIR": str(run_dir),
        "REFLECTION_RUN_FAILED": str(run_dir / "failed"),
    }
    log_path = tmp_path / "run.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(venv / "bin" / "supervisord"), "-c", str(tmp_path / "supervisord.conf")],
            cwd=ROOT,
            env=run_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield f"http://127.0.0.1:{port}", api_key, log_path
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - loopback
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, {}


def test_make_run_with_redis_serves_and_its_worker_decides_a_turn(make_run):
    base, api_key, log_path = make_run

    def healthy() -> dict | None:
        status, body = _get(f"{base}/healthz")
        failed = "FATAL" in log_path.read_text(errors="replace") or "ModuleNotFoundError" in log_path.read_text(
            errors="replace"
        )
        if failed:
            pytest.fail(f"make run from requirements.txt alone failed:\n{log_path.read_text(errors='replace')[-6000:]}")
        return body if status == 200 and body.get("worker", {}).get("ok") else None

    health = wait_until(healthy, timeout=120, interval=0.5, message="/healthz to see the worker's heartbeat")
    assert health["broker"] == {"ok": True, "transport": "redis"}, health
    assert health["database"]["vendor"] == "postgresql"

    request = urllib.request.Request(
        f"{base}/api/v1/turns",
        data=json.dumps(turn_payload(user="I prefer summaries on Fridays.")).encode(),
        headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
        assert response.status == 201
        turn_id = json.loads(response.read())["id"]

    wait_until(
        lambda: ConversationTurn.objects.filter(id=turn_id, gate_status=GateStatus.DONE).exists(),
        timeout=60,
        message="the worker (from the clean venv, through Redis) to decide the turn",
    )
