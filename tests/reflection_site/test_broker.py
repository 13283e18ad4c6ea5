"""The embedded broker's adaptive poll and the worker's database connection reuse."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from queue import Empty
from typing import Any
from unittest import mock

import pytest
from celery.signals import task_prerun
from django.conf import settings
from django.db import connection, connections
from kombu import Connection, Exchange, Queue

from reflection_site.broker import FilesystemTransport


def _connection(folder: Path, **options: Any) -> Connection:
    for sub in ("queue", "processed"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    return Connection(
        "filesystem://",
        transport=FilesystemTransport,
        transport_options={
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "polling_interval": 0.05,
            **options,
        },
    )


def test_the_settings_use_the_adaptive_transport_when_there_is_no_redis() -> None:
    if settings.REDIS_URL:
        pytest.skip("REDIS_URL is set: the broker is Redis")
    assert settings.CELERY_BROKER_TRANSPORT == "reflection_site.broker:FilesystemTransport"
    assert (
        settings.CELERY_BROKER_TRANSPORT_OPTIONS["busy_polling_interval"]
        < (settings.CELERY_BROKER_TRANSPORT_OPTIONS["polling_interval"])
    )
    # A pool process's next task waits in the pool, not for the next look at the folder after an acknowledgement.
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 2
    from reflection_site.celery import app

    assert app.conf.worker_prefetch_multiplier == 2
    with app.connection_for_write() as conn:
        assert isinstance(conn.transport, FilesystemTransport)


def test_it_polls_fast_for_the_busy_window_after_a_delivery_then_slowly(tmp_path: Path) -> None:
    with _connection(tmp_path, busy_polling_interval=0.001, busy_window=0.2) as conn:
        transport = conn.transport
        assert transport.sleep_interval(time.monotonic()) == 0.05  # Nothing delivered yet: idle.
        queue = Queue("q", Exchange("q", type="direct"), routing_key="q")
        received: list[Any] = []
        with conn.Consumer(queue, callbacks=[lambda body, message: (received.append(body), message.ack())]):
            conn.Producer().publish({"n": 1}, exchange=queue.exchange, routing_key="q", declare=[queue])
            conn.drain_events(timeout=2)
            assert received == [{"n": 1}]
            now = time.monotonic()
            assert transport.sleep_interval(now) == 0.001
            assert transport.sleep_interval(now + 0.3) == 0.05
            # An empty queue still times out as kombu's transport does.
            with pytest.raises(socket.timeout):
                conn.drain_events(timeout=0.05)


def test_a_message_published_while_the_worker_sleeps_is_taken(tmp_path: Path) -> None:
    with _connection(tmp_path) as conn:
        queue = Queue("q", Exchange("q", type="direct"), routing_key="q")
        received: list[Any] = []
        with conn.Consumer(queue, callbacks=[lambda body, message: (received.append(body), message.ack())]):
            with pytest.raises(socket.timeout):
                conn.drain_events(timeout=0.1)
            conn.Producer().publish({"n": 2}, exchange=queue.exchange, routing_key="q", declare=[queue])
            conn.drain_events(timeout=2)
    assert received == [{"n": 2}]


@pytest.mark.django_db
def test_a_task_run_eagerly_inside_a_transaction_keeps_its_connection() -> None:
    from reflection_site.celery import app

    @app.task(name="tests.eager_probe")
    def probe() -> int:
        return 7

    with mock.patch.object(type(connections["default"]), "close") as close:
        assert probe.apply().get() == 7
    assert close.call_count == 0


@pytest.mark.django_db(transaction=True)
def test_a_worker_keeps_a_healthy_connection_between_tasks_and_drops_an_expired_one() -> None:
    from reflection_site.celery import app

    # Celery's Django fix-up closes connections around every task unless this is set.
    assert app.conf.get("CELERY_DB_REUSE_MAX")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    # (The test database is in memory, where Django's close() keeps the connection: count the calls.)
    with mock.patch.object(type(connections["default"]), "close") as close:
        task_prerun.send(sender=None, task_id="t1", task=None, args=(), kwargs={})
        assert close.call_count == 0
        connection.close_at = time.monotonic() - 1  # Older than CONN_MAX_AGE.
        task_prerun.send(sender=None, task_id="t2", task=None, args=(), kwargs={})
        assert close.call_count == 1


def _queue() -> Queue:
    return Queue("q", Exchange("q", type="direct"), routing_key="q")


def _drain(conn: Connection, count: int) -> list[Any]:
    received: list[Any] = []
    with conn.Consumer(_queue(), callbacks=[lambda body, message: (received.append(body), message.ack())]):
        while len(received) < count:
            conn.drain_events(timeout=2)
    return received


def test_a_backlog_is_taken_in_order_from_one_listing_of_the_folder(tmp_path: Path) -> None:
    with _connection(tmp_path) as conn:
        producer = conn.Producer()
        for n in range(30):
            producer.publish({"n": n}, exchange=_queue().exchange, routing_key="q", declare=[_queue()])
            time.sleep(0.002)  # File names start with the time in ms: one per ms keeps the order visible.
        with mock.patch("reflection_site.broker.os.listdir", wraps=os.listdir) as listdir:
            received = _drain(conn, 30)
    assert [body["n"] for body in received] == list(range(30))
    # kombu itself lists the folder once to declare the queue (its size); kombu's channel listed it 30 times.
    assert listdir.call_count == 2
    assert not list((tmp_path / "queue").glob("*.msg"))
    deadline = time.monotonic() + 5
    while list((tmp_path / "processed").iterdir()) and time.monotonic() < deadline:
        time.sleep(0.01)  # Taken files are removed on a thread of their own.
    assert not list((tmp_path / "processed").iterdir())


def test_a_message_another_consumer_took_is_skipped_and_a_later_one_is_found(tmp_path: Path) -> None:
    with _connection(tmp_path) as conn:
        producer = conn.Producer()
        for n in range(3):
            producer.publish({"n": n}, exchange=_queue().exchange, routing_key="q", declare=[_queue()])
            time.sleep(0.002)
        assert _drain(conn, 1) == [{"n": 0}]  # Lists the folder: messages 1 and 2 are now known.
        oldest = sorted((tmp_path / "queue").glob("*.msg"))[0]
        oldest.unlink()  # Another worker took message 1.
        producer.publish({"n": 3}, exchange=_queue().exchange, routing_key="q", declare=[_queue()])
        assert _drain(conn, 2) == [{"n": 2}, {"n": 3}]


def test_an_empty_queue_beside_a_backlog_is_listed_again_only_after_ten_times_its_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [100.0]
    monkeypatch.setattr("reflection_site.broker.monotonic", lambda: clock[0])
    backlog, empty = (Queue(name, Exchange(name, type="direct"), routing_key=name) for name in ("backlog", "empty"))
    with _connection(tmp_path) as conn:
        producer = conn.Producer()
        for n in range(50):
            producer.publish({"n": n}, exchange=backlog.exchange, routing_key="backlog", declare=[backlog, empty])
        channel = conn.default_channel
        real_listdir = os.listdir

        def listdir(path: str) -> list[str]:
            clock[0] += 0.001  # A folder of 50 messages, listed in 1 ms.
            return real_listdir(path)

        with mock.patch("reflection_site.broker.os.listdir", side_effect=listdir) as listed:
            with pytest.raises(Empty):
                channel._get("empty")
            producer.publish({"n": "late"}, exchange=empty.exchange, routing_key="empty")
            clock[0] += 0.009
            with pytest.raises(Empty):
                channel._get("empty")  # 9 ms after a 1 ms listing: not listed again.
            assert listed.call_count == 1
            clock[0] += 0.002
            assert channel.Message(channel._get("empty"), channel=channel).decode() == {"n": "late"}
            assert listed.call_count == 2
            assert channel.Message(channel._get("backlog"), channel=channel).decode()["n"] in range(50)


_QUEUE_TURNS = """
from django.utils import timezone
from sessions_app.ingest import enqueue_gate
from sessions_app.models import ConversationSession, ConversationTurn
from sessions_app.tasks import run_gate
ConversationSession.objects.create(id="channel:fs:1", channel_id="fs")
for n in range(1, 41):
    turn = ConversationTurn.objects.create(
        session_id="channel:fs:1", turn_number=n, user_message_content=f"I prefer tea number {n}.",
        agent_message_content="Noted.", gate_enqueued_at=timezone.now(),
    )
    # Half as Celery's delay() sends them, half as ingest does (HotPublisher).
    (run_gate.delay if n % 2 else enqueue_gate)(turn.id)
"""


def test_a_real_prefork_worker_on_the_embedded_broker_decides_a_backlog_once_each(tmp_path: Path) -> None:
    import sqlite3
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "LLM_BASE_URL"}}
    env.update(WORKSPACE_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="reflection_site.settings", LOG_LEVEL="WARNING")
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=root, env=env, check=True)
    subprocess.run([*manage, "shell", "-c", _QUEUE_TURNS], cwd=root, env=env, check=True)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "reflection_site", "worker", "-Q", "celery", "-c", "2",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    db = tmp_path / ".openclaw-reflection" / "reflection.db"
    try:
        deadline = time.monotonic() + 90
        rows: list[tuple[str, int]] = []
        while time.monotonic() < deadline:
            with sqlite3.connect(db, timeout=5) as conn:
                rows = conn.execute("SELECT turn_id, run_number FROM memory_gate_decisions").fetchall()
            if len(rows) >= 40:
                break
            time.sleep(0.2)
    finally:
        worker.terminate()
        output = worker.communicate(timeout=30)[0].decode(errors="replace")
    assert len(rows) == 40, output[-3000:]
    assert len(set(rows)) == 40  # Each turn decided once.
    queue = tmp_path / ".openclaw-reflection" / "broker" / "queue"
    assert not list(queue.glob("*.celery.msg"))  # (The guardian queue is not consumed by this worker.)


# --- HotPublisher: ingest's gate hand-off ------------------------------------------------------------------------


def _messages(folder: Path) -> list[dict[str, Any]]:
    import json
    import re

    found = []
    for path in sorted(folder.glob("*.msg")):
        # Ids are new for every message; everything else must be the same.
        found.append(
            json.loads(
                re.sub(r'"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"', '"<id>"', path.read_text())
            )
        )
        path.unlink()
    return found


def test_the_hot_publisher_sends_the_message_delay_sends(tmp_path: Path) -> None:
    from reflection_site.celery import HotPublisher, app
    from sessions_app.tasks import run_gate

    with _connection(tmp_path) as conn, mock.patch.object(app, "connection_for_write", lambda: conn.clone()):
        run_gate.apply_async(("01TURN",), connection=conn)
        [expected] = _messages(tmp_path / "queue")
        task_id = HotPublisher("sessions_app.tasks.run_gate")("01TURN")
        [sent] = _messages(tmp_path / "queue")
    assert sent == expected
    assert expected["headers"]["task"] == "sessions_app.tasks.run_gate" and expected["headers"]["timelimit"] != [
        None,
        None,
    ]
    assert len(task_id) == 36


def test_the_hot_publisher_keeps_its_producer_and_replaces_it_after_a_failed_send_or_a_fork(tmp_path: Path) -> None:
    from reflection_site.celery import HotPublisher, app

    opened: list[Connection] = []

    def connect() -> Connection:
        opened.append(_connection(tmp_path))
        return opened[-1]

    publish = HotPublisher("sessions_app.tasks.run_gate", hold_off_s=0)
    with mock.patch.object(app, "connection_for_write", connect):
        publish("01A")
        publish("01B")
        assert len(opened) == 1  # One connection for every message.
        with mock.patch.object(app.amqp, "send_task_message", side_effect=OSError("broker went away")):
            with pytest.raises(OSError):
                publish("01C")
        publish("01D")
        assert len(opened) == 2  # The failed send dropped its producer.
        with mock.patch("reflection_site.celery.os.getpid", return_value=os.getpid() + 1):
            publish("01E")  # A forked child must not share its parent's connection.
        assert len(opened) == 3
    # (File names start with the time in ms: two messages of the same ms are in either order.)
    assert sorted(m["headers"]["argsrepr"] for m in _messages(tmp_path / "queue")) == [
        "('01A',)",
        "('01B',)",
        "('01D',)",
        "('01E',)",
    ]


def test_after_a_failed_send_the_hot_publisher_holds_its_sends_off_without_trying_the_broker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from kombu.exceptions import OperationalError

    from reflection_site.celery import BrokerHeldOff, HotPublisher, app

    clock = [1000.0]
    tries: list[str] = []

    def dead_broker(producer: Any, name: str, message: Any, **kwargs: Any) -> None:
        tries.append(message.headers["argsrepr"])
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    publish = HotPublisher("sessions_app.tasks.run_gate", hold_off_s=5)
    with (
        mock.patch.object(app, "connection_for_write", lambda: _connection(tmp_path)),
        mock.patch("reflection_site.celery.time.monotonic", lambda: clock[0]),
        mock.patch.object(app.amqp, "send_task_message", side_effect=dead_broker),
        caplog.at_level("WARNING", logger="reflection_site.celery"),
    ):
        with pytest.raises(OperationalError) as first:
            publish("01A")
        assert type(first.value) is OperationalError  # The send that found the broker gone: its own error.
        for turn, at in [("01B", 1000.1), ("01C", 1004.9)]:
            clock[0] = at
            with pytest.raises(BrokerHeldOff):
                publish(turn)
        assert tries == ["('01A',)"]  # Held off: the broker was not tried.
        clock[0] = 1005.0
        with pytest.raises(OperationalError):
            publish("01D")  # The hold-off is over: tried again, and failed again.
        assert tries == ["('01A',)", "('01D',)"]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and all(w.startswith("the broker is unreachable (Error 111") for w in warnings)
    with mock.patch.object(app, "connection_for_write", lambda: _connection(tmp_path)):
        clock[0] = 1010.0
        with mock.patch("reflection_site.celery.time.monotonic", lambda: clock[0]):
            publish("01E")  # The broker is back.
    assert [m["headers"]["argsrepr"] for m in _messages(tmp_path / "queue")] == ["('01E',)"]


def test_the_hot_publisher_runs_the_task_in_eager_mode(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from reflection_site.celery import HotPublisher

    settings.CELERY_TASK_ALWAYS_EAGER = True
    ran: list[str] = []
    monkeypatch.setattr("sessions_app.tasks.decide_turn", ran.append)
    monkeypatch.setattr("sessions_app.tasks.RowReader", mock.Mock(**{"of.return_value.first.return_value": "turn"}))
    HotPublisher("sessions_app.tasks.run_gate")("01TURN")
    assert ran == ["turn"]


# --- Issue 16: a message is visible only once complete; an unreadable one is set aside ----------------------------


def test_a_message_is_renamed_into_the_queue_only_once_written_and_fsynced(tmp_path: Path) -> None:
    seen: list[tuple[str, bytes, list[str]]] = []
    synced: list[int] = []
    real_rename, real_fsync = os.rename, os.fsync

    def rename(src: str, dst: str) -> None:
        if str(src).startswith(str(tmp_path / "tmp")):
            seen.append((dst, Path(src).read_bytes(), os.listdir(tmp_path / "queue")))
        real_rename(src, dst)

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    with _connection(tmp_path) as conn:
        with (
            mock.patch("reflection_site.broker.os.rename", rename),
            mock.patch("reflection_site.broker.os.fsync", fsync),
        ):
            conn.Producer().publish({"n": 1}, exchange=_queue().exchange, routing_key="q", declare=[_queue()])
    [(destination, content, queue_before)] = seen
    assert Path(destination).parent == tmp_path / "queue" and queue_before == []
    assert b'"n": 1' in content or b'"body"' in content  # The whole message, before it is visible.
    assert len(synced) == 1
    assert [p.name for p in (tmp_path / "queue").iterdir()] == [Path(destination).name]
    assert not list((tmp_path / "tmp").iterdir())


_PUBLISH = """
import sys
from kombu import Connection, Exchange, Queue
from reflection_site.broker import FilesystemTransport
folder = sys.argv[1]
queue = Queue("q", Exchange("q", type="direct"), routing_key="q")
with Connection("filesystem://", transport=FilesystemTransport, transport_options={
    "data_folder_in": folder + "/queue", "data_folder_out": folder + "/queue",
    "processed_folder": folder + "/processed"}) as conn:
    producer = conn.Producer()
    for n in range(int(sys.argv[2])):
        producer.publish({"n": n, "pad": "x" * 200_000}, exchange=queue.exchange, routing_key="q", declare=[queue])
"""


def test_a_consumer_polling_while_a_producer_writes_big_messages_gets_each_whole_once(tmp_path: Path) -> None:
    """kombu's own channel created the file in the queue folder and then wrote it: a consumer listing the folder in
    between took a partial file and failed to parse it (issue 16). Here a producer process writes 200 kB messages
    while this process takes them as fast as it can."""
    import subprocess
    import sys

    count = 150
    with _connection(tmp_path, polling_interval=0.001) as conn:
        received: list[int] = []
        with conn.Consumer(_queue(), callbacks=[lambda body, message: (received.append(body["n"]), message.ack())]):
            conn.Producer().publish(
                {"n": -1, "pad": ""}, exchange=_queue().exchange, routing_key="q", declare=[_queue()]
            )
            producer = subprocess.Popen(
                [sys.executable, "-c", _PUBLISH, str(tmp_path), str(count)], cwd=Path(__file__).resolve().parents[2]
            )
            deadline = time.monotonic() + 60
            while len(received) < count + 1 and time.monotonic() < deadline:
                try:
                    conn.drain_events(timeout=0.5)
                except TimeoutError:
                    pass
            assert producer.wait(timeout=30) == 0
    assert sorted(received) == list(range(-1, count))  # Every message once, none partial.
    assert not (tmp_path / "bad").exists() or not list((tmp_path / "bad").iterdir())


@pytest.mark.parametrize(
    "content",
    [b"", b'{"body": "eyJu", "properties": {"deli', b"[1, 2]", b'{"body": "x"}', b"\xff\xfe not json"],
    ids=["empty", "truncated", "not-an-object", "no-properties", "not-utf8"],
)
def test_an_unreadable_message_file_is_set_aside_and_the_next_message_is_taken(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with _connection(tmp_path) as conn:
        producer = conn.Producer()
        producer.publish({"n": 1}, exchange=_queue().exchange, routing_key="q", declare=[_queue()])
        # Older than the real message: taken first.
        (tmp_path / "queue" / "0_bad.q.msg").write_bytes(content)
        time.sleep(0.002)
        producer.publish({"n": 2}, exchange=_queue().exchange, routing_key="q", declare=[_queue()])
        with caplog.at_level("ERROR", logger="reflection_site.broker"):
            assert _drain(conn, 2) == [{"n": 1}, {"n": 2}]
    assert (tmp_path / "bad" / "0_bad.q.msg").read_bytes() == content
    assert not list((tmp_path / "queue").iterdir())
    [record] = caplog.records
    assert record.levelname == "ERROR" and "0_bad.q.msg" in record.getMessage()


def test_without_fsync_a_message_is_still_renamed_in_whole_but_not_synced(tmp_path: Path) -> None:
    with _connection(tmp_path, fsync=False) as conn:
        with mock.patch("reflection_site.broker.os.fsync") as fsync:
            conn.Producer().publish({"n": 5}, exchange=_queue().exchange, routing_key="q", declare=[_queue()])
        assert fsync.call_count == 0
        assert not list((tmp_path / "tmp").iterdir()) and len(list((tmp_path / "queue").glob("*.q.msg"))) == 1
        assert _drain(conn, 1) == [{"n": 5}]
