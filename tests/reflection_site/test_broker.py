"""The embedded broker's adaptive poll and the worker's database connection reuse."""

from __future__ import annotations

import socket
import time
from pathlib import Path
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
    from reflection_site.celery import app

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
