"""Broker and cache outages, and a database connection dropped mid-request (issue 8, item 3).

Redis: a private ``redis-server`` of this test (never the shared one) is the broker, the cache and the rate
limiter of a real web server (gunicorn) and a real Celery worker. It is stopped while turns are ingested
and feedback is given: ingest still answers 201 and stores every turn, feedback still answers (the rate
limiter fails open and the outage is counted as a ``guardrail_error`` learning event), nothing answers
5xx; the health check says "degraded". When Redis comes back, the worker reconnects and the gate sweep
(``manage.py gate sweep``, as the beat runs it) enqueues every turn left pending, which all get decided.

PostgreSQL: the connection of a request is terminated (``pg_terminate_backend`` from a second connection)
at a chosen statement of the ingest transaction: a clean 503 ``database_unavailable``, no partial turn,
and the same request sent again is stored once. The connection is also dropped before each statement of an
ingest request in turn (authentication included): every answer is a 503 or a 201, never a 5xx of another
kind, and the turn is stored whole or not at all.

Default: one Redis outage of ``OUTAGE_TURNS`` (20) turns. The long mode is ``OUTAGE_TURNS=20
OUTAGE_CYCLES=5`` (five outages in a row, each followed by recovery and the sweep). The gate hand-off that
finds the broker gone waits it out (about 2 s) and the process holds the next ones off for 5 s
(``HotPublisher``): fewer tries than turns, each logged. The figures are printed
and written to ``test-output/reliability/outages_redis.json`` and ``outages_postgres.json``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import close_old_connections, connection

from guardian_app.models import LearningEvent
from reflection_site.models import ApiKey
from sessions_app.models import (
    ConversationContext,
    ConversationSession,
    ConversationTurn,
    GateStatus,
    MemoryGateDecision,
)
from tests.conftest import ApiClient, turn_payload
from tests.services import ROOT, Worker, database_url, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "outage-learning-token"
OUTAGE_TURNS = int(os.environ.get("OUTAGE_TURNS", "20"))
OUTAGE_CYCLES = int(os.environ.get("OUTAGE_CYCLES", "1"))
REPORT_DIR = ROOT / "test-output" / "reliability"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A ``redis-server`` of this test alone (no persistence), stopped and started on the same port."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.folder / "redis.log").open("ab")
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            cwd=self.folder,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        wait_until(lambda: _pings(client), timeout=20, message="the private redis-server to start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)


def _pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:  # noqa: BLE001 - not up yet.
        return False


class WebServer:
    """``gunicorn reflection_site.wsgi`` on a free port, against this test's database and the private Redis."""

    def __init__(self, folder: Path, env: dict[str, str]):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / "gunicorn.log"
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "reflection_site.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "1",
                "--threads",
                "4",
                "--timeout",
                "60",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        wait_until(self._up, timeout=90, message="gunicorn to answer")

    def _up(self) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"gunicorn exited:\n{self.log_path.read_text()[-3000:]}")
        try:
            self.request("GET", "/healthz")
        except OSError:
            return False
        return True

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, float]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers or {})
        if data is not None:
            req.add_header("Content-Type", "application/json")
        started = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                status, raw, self.last_headers = response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            status, raw, self.last_headers = exc.code, exc.read(), dict(exc.headers)
        elapsed = time.monotonic() - started
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        return status, parsed, elapsed

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.timeout(300 + OUTAGE_CYCLES * (60 + 3 * OUTAGE_TURNS))  # At worst, each ingest waits 2 s for the broker.
def test_a_redis_outage_keeps_ingest_and_feedback_answering_and_the_sweep_catches_up(
    transactional_db, private_redis, settings, tmp_path, capsys
):
    settings.REDIS_URL = private_redis.url  # The worker and the commands below get it from here.
    settings.LLM_BASE_URL = ""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reflection_site.settings",
        "DATABASE_URL": database_url(),
        "REDIS_URL": private_redis.url,
        "WORKSPACE_DIR": str(settings.WORKSPACE_DIR),
        "LLM_BASE_URL": "",
        "LEARNING_FEEDBACK_TOKEN": TOKEN,
        "LEARNING_GUARDRAILS_ENABLED": "true",
        "LEARNING_RATE_LIMIT_PER_MIN": "1000",
        "PYTHONUNBUFFERED": "1",
    }
    (tmp_path / "worker-logs").mkdir()
    worker = Worker(tmp_path / "worker-logs")
    web = WebServer(tmp_path, env)
    try:
        _, key = ApiKey.generate("outage", ["ingest", "read", "operate"])
        auth = {"Authorization": f"Bearer {key}"}
        statuses: Counter[int] = Counter()

        def ingest(n: int) -> tuple[str, float]:
            body = turn_payload(session_id="channel:outage:alice", user=f"I prefer summaries on day {n}.", agent="OK.")
            status, answer, elapsed = web.request("POST", "/api/v1/turns", body, auth)
            statuses[status] += 1
            assert status == HTTPStatus.CREATED, answer
            return answer["id"], elapsed

        def feedback(turn_id: str, user: str) -> tuple[int, bool]:
            """The status, and whether the rate limiter answered (its headers; none when it failed open)."""
            body = {"user_id": user, "feedback": "up", "reason": "A useful and precise answer, thank you."}
            status, answer, _ = web.request(
                "POST", f"/api/v1/traces/{turn_id}/feedback", body, {"X-Learning-Token": TOKEN}
            )
            statuses[status] += 1
            return status, "RateLimit" in web.last_headers

        # Redis up: the pipeline works.
        worker.start()
        first, _ = ingest(0)
        wait_until(lambda: MemoryGateDecision.objects.filter(turn_id=first).exists(), timeout=60, message="a decision")
        assert web.request("GET", "/healthz")[1]["status"] == "ok"

        assert feedback(first, "user-before") == (HTTPStatus.OK, True)  # Limited in Redis while it is up.

        latencies: list[float] = []
        hand_off_tries: list[int] = []
        feedback_answers: list[tuple[int, bool]] = []
        sweeps: list[str] = []
        for cycle in range(OUTAGE_CYCLES):
            # Redis down.
            private_redis.stop()
            during = [ingest(cycle * OUTAGE_TURNS + n) for n in range(1, OUTAGE_TURNS + 1)]
            outage_turns = [turn_id for turn_id, _ in during]
            latencies += [elapsed for _, elapsed in during]
            answers = [feedback(first, f"user-{cycle}-{n}") for n in range(5)] + [
                feedback(turn_id, f"user-{cycle}-x") for turn_id in outage_turns[:5]
            ]
            assert set(answers) == {(HTTPStatus.OK, False)}, answers  # Answered, failed open.
            feedback_answers += answers
            health = web.request("GET", "/healthz")
            assert health[0] == HTTPStatus.OK and health[1]["status"] == "degraded"
            assert not health[1]["broker"]["ok"] and not health[1]["cache"]["ok"]
            reads = [web.request("GET", path, None, auth)[0] for path in ("/api/v1/sessions", f"/api/v1/turns/{first}")]
            assert reads == [HTTPStatus.OK, HTTPStatus.OK]
            statuses.update(reads)
            assert not [s for s in statuses if s >= 500], statuses
            stored = ConversationTurn.objects.filter(id__in=outage_turns)
            assert stored.count() == OUTAGE_TURNS
            assert set(stored.values_list("gate_status", flat=True)) == {"pending"}
            # The web process tried the dead broker, then held its hand-offs off rather than wait on each.
            tries = web.log_path.read_text(errors="replace").count("the broker is unreachable")
            assert 1 <= tries - sum(hand_off_tries) < OUTAGE_TURNS, tries
            hand_off_tries.append(tries - sum(hand_off_tries))
            # Counted: the process counts every request that failed open and records the outage as a
            # learning event (one a minute per process, carrying its running count).
            fail_open = LearningEvent.objects.filter(event_type="guardrail_error", reason="ratelimit")
            assert fail_open.count() >= 1 and "redis" in fail_open.order_by("created_at").first().payload_json["error"]

            # Redis back (empty: the messages sent before the outage are gone too). The worker reconnects;
            # the sweep, as the beat runs it every minute, enqueues every pending turn.
            private_redis.start()
            wait_until(lambda: web.request("GET", "/healthz")[1]["status"] == "ok", timeout=30, message="health ok")
            sweep = subprocess.run(
                [sys.executable, "manage.py", "gate", "sweep", "--grace", "0"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert sweep.returncode == 0, sweep.stderr[-3000:]
            sweeps.append(sweep.stdout.strip())
            decided = wait_until(
                lambda ids=outage_turns: (
                    ConversationTurn.objects.filter(id__in=ids, gate_status=GateStatus.DONE).count() == OUTAGE_TURNS
                    or None
                ),
                timeout=120 + OUTAGE_TURNS,
                message=f"the swept turns to be decided (worker log: {worker.log()[-2000:]})",
            )
            assert decided
            assert MemoryGateDecision.objects.filter(turn_id__in=outage_turns).count() == OUTAGE_TURNS
        # Every turn ingested, before or during an outage, has one decision: none lost, none twice.
        all_turns = ConversationTurn.objects.count()
        decided_turns = MemoryGateDecision.objects.values("turn_id").distinct().count()
        lost = all_turns - decided_turns
        duplicated = MemoryGateDecision.objects.count() - decided_turns
        assert all_turns == 1 + OUTAGE_CYCLES * OUTAGE_TURNS and lost == 0 and duplicated == 0
        latencies.sort()
        figures = {
            "outages": OUTAGE_CYCLES,
            "turns_during_outages": OUTAGE_CYCLES * OUTAGE_TURNS,
            "ingest_201": len(latencies),
            "ingest_latency_max_s": round(latencies[-1], 3),
            "ingest_latency_median_s": round(latencies[len(latencies) // 2], 3),
            "gate_hand_offs_tried_on_the_dead_broker": hand_off_tries,
            "feedback_answered_200": sum(1 for status, _ in feedback_answers if status == HTTPStatus.OK),
            "feedback_failed_open": sum(1 for _, limited in feedback_answers if not limited),
            "guardrail_error_events": fail_open.count(),
            "responses": {str(k): v for k, v in sorted(statuses.items())},
            "responses_5xx": sum(n for s, n in statuses.items() if s >= 500),
            "swept_and_decided_after_recovery": OUTAGE_CYCLES * OUTAGE_TURNS,
            "lost": lost,
            "duplicated": duplicated,
            "sweep_output": sweeps,
        }
        REPORT_DIR.mkdir(parents=True, exist_ok=True)
        (REPORT_DIR / "outages_redis.json").write_text(json.dumps(figures, indent=2) + "\n")
        with capsys.disabled():
            print("\nredis outage:", json.dumps(figures))
    finally:
        worker.stop()
        web.stop()
        connection.close()


# --- PostgreSQL: the request's connection dropped mid-transaction ------------------------------------
def _terminate(pid: int) -> None:
    db = connection.settings_dict
    with psycopg.connect(
        host=db.get("HOST") or "127.0.0.1",
        port=db.get("PORT") or 5432,
        user=db.get("USER") or "postgres",
        dbname=db["NAME"],
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    time.sleep(0.05)  # The backend exits asynchronously.


@pytest.mark.parametrize("table", ["sessions", "conversation_turns", "conversation_contexts"])
def test_a_connection_dropped_mid_ingest_is_a_clean_503_and_no_partial_turn(transactional_db, table):
    _, key = ApiKey.generate("pg-drop", ["ingest", "read"])
    client = ApiClient(key)
    body = turn_payload(
        session_id="channel:pgdrop:bob", user_message={"id": "msg-1", "content": "I prefer tea in the morning."}
    )
    dropped: list[str] = []

    def drop_before(execute, sql, params, many, context):  # noqa: ANN001 - Django's execute_wrapper signature.
        if not dropped and sql.lstrip().upper().startswith("INSERT") and f'"{table}"' in sql:
            dropped.append(sql)
            _terminate(context["connection"].connection.info.backend_pid)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(drop_before):
        response = client.post("/api/v1/turns", body)

    assert dropped, f"no INSERT into {table} was seen"
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE, response.content
    assert response.json()["error"]["code"] == "database_unavailable"
    # Nothing of the turn was stored: not the session, not the turn, not its context.
    assert not ConversationTurn.objects.exists()
    assert not ConversationContext.objects.exists()
    assert not ConversationSession.objects.filter(id="channel:pgdrop:bob").exists()

    again = client.post("/api/v1/turns", body)  # The client retries: stored once.
    assert again.status_code == HTTPStatus.CREATED, again.content
    assert ConversationTurn.objects.count() == 1 and ConversationContext.objects.count() == 2
    assert client.post("/api/v1/turns", body).status_code == HTTPStatus.OK  # Its id makes a resend a no-op.


def test_a_connection_dropped_during_a_read_is_a_clean_503(transactional_db):
    _, key = ApiKey.generate("pg-drop-read", ["read"])
    client = ApiClient(key)
    dropped: list[str] = []

    def drop_on_select(execute, sql, params, many, context):  # noqa: ANN001
        if not dropped and 'FROM "sessions"' in sql and sql.lstrip().upper().startswith("SELECT"):
            dropped.append(sql)
            _terminate(context["connection"].connection.info.backend_pid)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(drop_on_select):
        response = client.get("/api/v1/sessions")
    assert dropped
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE, response.content
    assert response.json()["error"]["code"] == "database_unavailable"
    # A WSGI server ends each request with request_finished, which discards a broken connection (Django's
    # test client leaves that signal out); the next request connects afresh.
    close_old_connections()
    assert client.get("/api/v1/sessions").status_code == HTTPStatus.OK


def _statement_kind(sql: str) -> str:
    """``INSERT conversation_turns``, ``SELECT api_keys``, ``SAVEPOINT``: what a statement does, for the figures."""
    table = re.search(r'(?:FROM|INTO|UPDATE)\s+"(\w+)"', sql)
    verb = sql.split(None, 1)[0].upper()
    return f"{verb} {table.group(1)}" if table else verb


def _drop_before_statement(index: int, dropped: list[str]) -> Any:
    """An execute wrapper that drops the connection before the statement numbered ``index`` (from 0)."""
    count = iter(range(1 << 30))

    def drop(execute, sql, params, many, context):  # noqa: ANN001 - Django's execute_wrapper signature.
        if next(count) == index:
            dropped.append(sql)
            _terminate(context["connection"].connection.info.backend_pid)
        return execute(sql, params, many, context)

    return drop


def test_a_connection_dropped_before_any_statement_of_ingest_stores_the_turn_whole_or_not_at_all(
    transactional_db, capsys
):
    """The drop before each statement of an ingest request in turn (authentication, the session upsert and
    lock, the turn, its context), until a request ends before the statement numbered for it. Each request has
    a key of its own, so that each records its key's first use as well."""
    keys = iter(range(1 << 30))

    def body(n: int) -> dict[str, Any]:
        return turn_payload(
            session_id=f"channel:pgdrop:each{n}",
            user_message={"id": f"msg-{n}", "content": f"I prefer tea at {n} o'clock."},
        )

    answers: Counter[int] = Counter()
    stored_whole = stored_none = duplicated = 0
    partial: list[tuple[int, str]] = []
    lost: list[tuple[int, str]] = []
    statements: list[str] = []
    for index in range(200):
        close_old_connections()
        dropped: list[str] = []
        n = index + 1
        sender = ApiClient(ApiKey.generate(f"pg-drop-each-{next(keys)}", ["ingest", "read"])[1])
        with connection.execute_wrapper(_drop_before_statement(index, dropped)):
            response = sender.post("/api/v1/turns", body(n))
        if not dropped:  # The request made fewer statements than that: every one has been dropped once.
            assert response.status_code == HTTPStatus.CREATED, response.content
            break
        statements.append(_statement_kind(dropped[0]))
        answers[response.status_code] += 1
        assert response.status_code in (HTTPStatus.CREATED, HTTPStatus.SERVICE_UNAVAILABLE), (
            index,
            dropped[0],
            response.content,
        )
        if response.status_code == HTTPStatus.SERVICE_UNAVAILABLE:
            assert response.json()["error"]["code"] == "database_unavailable"
        close_old_connections()
        session_id = f"channel:pgdrop:each{n}"
        turns = ConversationTurn.objects.filter(session_id=session_id)
        contexts = ConversationContext.objects.filter(turn__session_id=session_id)
        if turns.exists():
            if turns.count() == 1 and contexts.count() == 2:
                stored_whole += 1
            else:
                partial.append((index, dropped[0]))
        elif contexts.exists() or ConversationSession.objects.filter(id=session_id).exists():
            partial.append((index, dropped[0]))
        else:
            stored_none += 1
            if response.status_code != HTTPStatus.SERVICE_UNAVAILABLE:
                lost.append((index, dropped[0]))  # Acknowledged but not stored.
        again = sender.post("/api/v1/turns", body(n))  # The client retries: stored once.
        assert again.status_code in (HTTPStatus.CREATED, HTTPStatus.OK), again.content
        duplicated += turns.count() - 1
        assert contexts.count() == 2 * turns.count()

    figures = {
        "drops": len(statements),
        "statements_dropped_before": statements,
        "answers": {str(k): v for k, v in sorted(answers.items())},
        "stored_whole": stored_whole,
        "stored_none": stored_none,
        "partial_turns": len(partial),
        "lost": len(lost),
        "duplicated_after_retry": duplicated,
    }
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "outages_postgres.json").write_text(json.dumps(figures, indent=2) + "\n")
    with capsys.disabled():
        print("\npostgres drops:", json.dumps(figures))
    assert len(statements) >= 5 and "INSERT conversation_turns" in statements, statements
    assert partial == [] and lost == [] and duplicated == 0, figures
