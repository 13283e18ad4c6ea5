"""No token, key or secret reaches a log line: the logs of a run that ingests secrets are captured and searched.

The run goes through the configured logging (``settings.LOGGING``: the console handler and its redacting
filter) at DEBUG, the most a production ``LOG_LEVEL`` can say, so the ``openai`` and ``httpx`` loggers print
every request they make. It sends turns full of secrets through the API with a bearer key, through the
offline gate and guardian and through the LLM ones (the fake LLM echoes the facts, answers garbage that holds
a secret, and fails), gives feedback with the learning token, and records a gate failure. The API key, the
learning token, the LLM provider's key and every secret in the turns must be absent from what was logged.
"""

from __future__ import annotations

import configparser
import io
import json
import logging
import os
import secrets
import shlex
import signal
import socket
import string
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian_app.write.guardian import write_fact
from reflection_site.logfilter import RedactSecrets
from sessions_app.gate import decide_turn, mark_gate_failed
from sessions_app.models import ConversationTurn, Decision, MemoryGateDecision
from tests.conftest import ApiClient, turn_payload
from tests.fake_llm import FakeReply

pytestmark = pytest.mark.django_db


def _rand(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
# Fresh values each run, so no test fixture or earlier log line can hold them by accident.
SECRETS = {
    "aws access key": "AKIA" + _rand(string.ascii_uppercase + string.digits, 16),
    "github token": "ghp_" + _rand(ALNUM, 36),
    "openai key": "sk-proj-" + _rand(ALNUM, 48),
    "anthropic key": "sk-ant-api03-" + _rand(ALNUM, 40),
    "stripe key": "sk_live_" + _rand(ALNUM, 24),
    "slack token": "xoxb-" + _rand(string.digits, 12) + "-" + _rand(ALNUM, 24),
    "password": "Hx7-" + _rand(ALNUM, 12),
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ." + _rand(ALNUM, 43),
    "private key body": "MIIEow" + _rand(ALNUM, 60),
}
PROVIDER_KEY = "sk-or-v1-" + _rand("0123456789abcdef", 64)
LEARNING_TOKEN = "lt_" + _rand(ALNUM, 40)

TURNS = [
    f"Remember my AWS key {SECRETS['aws access key']} for the deploy scripts.",
    f"My GitHub token is {SECRETS['github token']}, use it for the CI.",
    f"Please store this OpenAI key: {SECRETS['openai key']} and also {SECRETS['anthropic key']}.",
    f"Billing uses {SECRETS['stripe key']}; the Slack bot token is {SECRETS['slack token']}.",
    f"My password is {SECRETS['password']} for the staging box.",
    f"Here is my session token: {SECRETS['jwt']}",
    "Keep this key for the server:\n-----BEGIN RSA PRIVATE KEY-----\n"
    f"{SECRETS['private key body']}\n-----END RSA PRIVATE KEY-----",
]


@pytest.fixture
def captured_logs(settings: Any) -> Iterator[io.StringIO]:
    """The configured console handler, writing into a buffer, with every logger at DEBUG."""
    root = logging.getLogger()
    handlers = [h for h in root.handlers if any(isinstance(f, RedactSecrets) for f in h.filters)]
    assert handlers, "settings.LOGGING no longer puts the redacting filter on the root handler"
    buffer = io.StringIO()
    saved = [(h, h.setStream(buffer)) for h in handlers]
    levels = {name: logging.getLogger(name).level for name in ("", "openai", "httpx", "httpcore", "celery", "django")}
    for name in levels:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield buffer
    finally:
        for handler, stream in saved:
            handler.setStream(stream)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _gate_and_guard(turns: list[ConversationTurn]) -> list[str]:
    statuses = []
    for turn in turns:
        decision = decide_turn(turn)
        if decision is None:
            continue
        if decision.decision == Decision.NO_WRITE:
            # The gate let it go; hand the guardian the turn's text anyway, as a careless gate might.
            decision = MemoryGateDecision.objects.create(
                turn=turn,
                session=turn.session,
                decision=Decision.UPDATE_MEMORY,
                reason="forced by the test",
                candidate_fact=turn.user_message_content,
                llm_model="test",
                run_number=turn.gate_run + 100,
            )
        statuses.append(write_fact(decision).status)
    return statuses


def test_no_key_token_or_secret_reaches_the_logs(captured_logs, make_key, settings, fake_llm):
    settings.LEARNING_FEEDBACK_TOKEN = LEARNING_TOKEN
    settings.LLM_API_KEY = PROVIDER_KEY
    api_key = make_key("ingest", "read", "operate")
    client = ApiClient(api_key)
    llm_base_url = settings.LLM_BASE_URL

    # 1. Ingest, then the offline gate and guardian.
    settings.LLM_BASE_URL = ""
    ids = []
    for n, text in enumerate(TURNS, start=1):
        response = client.post("/api/v1/turns", turn_payload(session_id="channel:logs:eve", user=text, turn_number=n))
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    offline = _gate_and_guard(list(ConversationTurn.objects.filter(id__in=ids)))

    # 2. The same through the LLM gate and guardian (the fake echoes the facts back in its edits), then an
    #    LLM that answers garbage holding a secret, then one that fails: the retries and errors are logged.
    settings.LLM_BASE_URL = llm_base_url
    for turn in ConversationTurn.objects.filter(id__in=ids):
        ConversationTurn.objects.filter(id=turn.id).update(gate_status="pending", gate_run=turn.gate_run + 1)
    with_llm = _gate_and_guard(list(ConversationTurn.objects.filter(id__in=ids)))
    settings.LLM_MAX_RETRIES = 1
    fake_llm.queue(
        FakeReply(content=f"Sure! The key is {SECRETS['openai key']} and I cannot answer in JSON."),
        FakeReply(content=f"Still no JSON, {SECRETS['github token']}."),
        FakeReply(status=500, content="upstream error"),
        FakeReply(status=500, content=f"upstream error near {SECRETS['stripe key']}"),
    )
    failing = ConversationTurn.objects.get(id=ids[0])
    for _ in range(2):
        ConversationTurn.objects.filter(id=failing.id).update(gate_status="pending", gate_run=failing.gate_run + 5)
        failing.refresh_from_db()
        try:
            decide_turn(failing)
        except Exception as exc:  # What the task's failure handler does once retries are spent.
            logging.getLogger("sessions_app.tasks").exception("gate task failed")
            mark_gate_failed(failing.id, error=repr(exc))

    # 3. Feedback with the learning token and a reason holding a secret; a request with a wrong key.
    response = client.post(
        f"/api/v1/traces/{ids[1]}/feedback",
        {"user_id": "eve", "feedback": "down", "reason": f"never store {SECRETS['password']} again please"},
        HTTP_X_LEARNING_TOKEN=LEARNING_TOKEN,
    )
    assert response.status_code == 200, response.content
    assert ApiClient(api_key[:-3] + "xyz").get("/api/v1/sessions").status_code == 401

    logs = captured_logs.getvalue()
    assert "gate: turn" in logs and "guardian" in logs and "LLM attempt" in logs, logs[-3000:]
    assert len(fake_llm.requests) >= len(TURNS)  # The prompts (holding the secrets) went out and were logged.
    assert set(offline) | set(with_llm) <= {"refused", "skipped", "written"}
    leaked = {name: value for name, value in SECRETS.items() if value in logs}
    for name, value in [("API key", api_key), ("learning token", LEARNING_TOKEN), ("LLM provider key", PROVIDER_KEY)]:
        if value in logs:
            leaked[name] = value
    assert not leaked, "\n".join(
        f"{name}: {line}" for name in leaked for line in logs.splitlines() if leaked[name] in line
    )


# --- The same for a whole `make run`: gunicorn and a Celery worker as processes, their output captured -------
ROOT = Path(__file__).resolve().parents[2]


def makefile_command(program: str, variables: dict[str, str]) -> list[str]:
    """The command line ``make run`` starts for ``program`` (gunicorn or celery): its supervisord.conf entry,
    with ``%(here)s`` and the ``%(ENV_…)s`` variables filled in."""
    config = configparser.RawConfigParser(strict=False)
    config.read(ROOT / "supervisord.conf")
    section = {"gunicorn": "program:web", "celery": "program:worker"}[program]
    command = " ".join(config.get(section, "command").split())
    command = command.replace("%(here)s", str(ROOT))
    for name, value in variables.items():
        command = command.replace(f"%(ENV_{name})s", value)
    return shlex.split(command.replace("%%", "%"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_a_make_run_logs_no_key_token_or_secret(tmp_path: Path) -> None:
    from tests.fake_llm import start_fake_llm

    llm = start_fake_llm()
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "WORKSPACE_DIR": str(tmp_path / "workspace"),
        "LOG_LEVEL": "DEBUG",
        "LLM_BASE_URL": llm.base_url,
        "LLM_API_KEY": PROVIDER_KEY,
        "LLM_MODEL": "fake-model-1",
        "LEARNING_FEEDBACK_TOKEN": LEARNING_TOKEN,
        "PYTHONUNBUFFERED": "1",
    }
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([python, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    api_key = (
        subprocess.run(
            [python, "manage.py", "apikey", "create", "agent", "--scope", "ingest", "--scope", "read"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    log = (tmp_path / "run.log").open("wb")
    variables = {"PORT": str(port), "WEB_WORKERS": "1", "WORKER_CONCURRENCY": "1"}
    processes = [
        subprocess.Popen(makefile_command(p, variables), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        for p in ("celery", "gunicorn")
    ]
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _get(f"{base}/healthz")[0] in (200, 503), "gunicorn to answer")
        headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        ids = []
        for n, text in enumerate(TURNS, start=1):
            body = json.dumps(turn_payload(session_id="channel:run:eve", user=text, turn_number=n)).encode()
            status, answer = _post(f"{base}/api/v1/turns", body, headers)
            assert status == 201, answer
            ids.append(json.loads(answer)["id"])
        wait_for(
            lambda: all(json.loads(_get(f"{base}/api/v1/turns/{i}", headers)[1])["gate_status"] == "done" for i in ids),
            "the worker to gate every turn",
        )
        # A secret in a query string, a wrong key, and feedback with the learning token.
        _get(f"{base}/api/v1/recall?q={urllib.parse.quote(TURNS[1])}", headers)
        _get(f"{base}/api/v1/sessions", {"Authorization": f"Bearer {api_key[:-3]}xyz"})
        feedback = json.dumps({"user_id": "eve", "feedback": "down", "reason": TURNS[4]}).encode()
        status, answer = _post(
            f"{base}/api/v1/traces/{ids[0]}/feedback",
            feedback,
            {"X-Learning-Token": LEARNING_TOKEN, "Content-Type": "application/json"},
        )
        assert status == 200, answer
        time.sleep(2)  # The guardian's writes, queued after the gate.
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()
        llm.stop()

    logs = (tmp_path / "run.log").read_text(errors="replace")
    assert "GET /api/v1/recall" in logs and "gate: turn" in logs, logs[-4000:]
    assert len(llm.requests) >= len(TURNS)
    secrets_sent = {**SECRETS, "API key": api_key, "learning token": LEARNING_TOKEN, "LLM provider key": PROVIDER_KEY}
    leaked = {name for name, value in secrets_sent.items() if value in logs or urllib.parse.quote(value) in logs}
    assert not leaked, "\n".join(
        line
        for line in logs.splitlines()
        if any(secrets_sent[n] in line or urllib.parse.quote(secrets_sent[n]) in line for n in leaked)
    )


def wait_for(predicate: Any, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for {what}")


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    return _send(urllib.request.Request(url, headers=headers or {}))


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    return _send(urllib.request.Request(url, data=body, headers=headers, method="POST"))


def _send(request: urllib.request.Request) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
