from __future__ import annotations

import datetime as dt
import time
from http import HTTPStatus
from unittest import mock

import pytest
from django.db import OperationalError
from django.utils import timezone

pytestmark = pytest.mark.django_db


def test_healthz_reports_each_part_without_auth(client):
    response = client.get("/healthz")
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["database"]["ok"] is True
    assert body["cache"]["ok"] is True
    assert "broker" in body


def test_healthz_is_503_when_the_database_is_down(client):
    with mock.patch("reflection_site.health.connection.cursor", side_effect=OperationalError("down")):
        response = client.get("/healthz")
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json()["status"] == "down"


def test_default_schedules_are_created_once_and_keep_operator_edits():
    from django_celery_beat.models import PeriodicTask

    from reflection_site.celery import default_schedules, ensure_schedules

    ensure_schedules()
    names = set(default_schedules())
    assert names <= set(PeriodicTask.objects.values_list("name", flat=True))
    if names:
        name = sorted(names)[0]
        PeriodicTask.objects.filter(name=name).update(enabled=False)
        assert ensure_schedules() == 0
        assert PeriodicTask.objects.get(name=name).enabled is False


# --- Issue 16: the worker's heartbeat and the gate's backlog ------------------------------------------------------


@pytest.fixture
def heartbeat(settings):
    """The heartbeat key as a worker leaves it; removed afterwards (the cache outlives a test)."""
    from django.core.cache import cache

    from reflection_site.celery import HEARTBEAT_KEY

    settings.WORKER_STALE_S = 30

    def beat(seconds_ago: float | None) -> None:
        if seconds_ago is None:
            cache.delete(HEARTBEAT_KEY)
        else:
            cache.set(HEARTBEAT_KEY, {"at": time.time() - seconds_ago, "hostname": "w@test", "pid": 1}, None)

    yield beat
    cache.delete(HEARTBEAT_KEY)


def _pending_turn(age_s: float, status: str = "pending") -> None:
    from sessions_app.models import ConversationSession, ConversationTurn

    session, _ = ConversationSession.objects.get_or_create(id="channel:health:1", defaults={"channel_id": "health"})
    ConversationTurn.objects.create(
        session=session,
        turn_number=ConversationTurn.objects.count() + 1,
        user_message_content="hello",
        agent_message_content="hi",
        created_at=timezone.now() - dt.timedelta(seconds=age_s),
        gate_status=status,
    )


def test_healthz_is_ok_with_a_fresh_heartbeat_and_no_backlog(client, heartbeat):
    heartbeat(2)
    _pending_turn(5)
    _pending_turn(10_000, status="done")  # Decided long ago: not waiting.
    body = client.get("/healthz").json()
    assert body["worker"]["ok"] is True and 1.5 <= body["worker"]["last_seen_s"] < 30
    assert body["pending_turns"]["ok"] is True and 4 <= body["pending_turns"]["oldest_pending_s"] < 60
    assert body["status"] == "ok"


@pytest.mark.parametrize("seconds_ago", [None, 31])
def test_healthz_is_degraded_but_200_while_no_worker_was_seen(client, heartbeat, seconds_ago):
    heartbeat(seconds_ago)
    response = client.get("/healthz")
    assert response.status_code == HTTPStatus.OK  # A load balancer keeps the API: turns are stored and wait.
    body = response.json()
    assert body["status"] == "degraded"
    assert body["worker"]["ok"] is False
    if seconds_ago is None:
        assert body["worker"]["last_seen_s"] is None
    else:
        assert 30 < body["worker"]["last_seen_s"] < 60


def test_healthz_is_degraded_while_a_turn_waits_longer_than_the_sweep_allows(client, heartbeat, settings):
    heartbeat(1)
    settings.PENDING_TURN_STALE_S = 240
    _pending_turn(30)
    _pending_turn(300)
    body = client.get("/healthz").json()
    assert body["worker"]["ok"] is True
    assert body["pending_turns"] == {"ok": False, "oldest_pending_s": pytest.approx(300, abs=5), "stale_after_s": 240}
    assert body["status"] == "degraded"


def test_the_admin_index_shows_a_red_banner_only_while_degraded(admin_client, heartbeat):
    heartbeat(None)
    page = admin_client.get("/admin/").content.decode()
    assert 'class="runtime-degraded"' in page and "No background worker has been seen" in page
    heartbeat(45)
    page = admin_client.get("/admin/").content.decode()
    assert "No background worker seen for 45 s" in page
    heartbeat(1)
    page = admin_client.get("/admin/").content.decode()
    assert "runtime-degraded" not in page
    assert "Site administration" in page or "Agent memory, audited" in page  # The index itself still renders.


def test_the_worker_heartbeat_step_beats_until_it_is_stopped(heartbeat, settings):
    from django.core.cache import cache

    from reflection_site.celery import HEARTBEAT_KEY, Heartbeat

    heartbeat(None)
    settings.WORKER_HEARTBEAT_S = 0.05
    worker = mock.Mock(hostname="celery@probe")
    step = Heartbeat(worker)
    step.start(worker)
    try:
        first = _wait_for(lambda: cache.get(HEARTBEAT_KEY))
        assert first["hostname"] == "celery@probe"
        assert _wait_for(lambda: (cache.get(HEARTBEAT_KEY) or {}).get("at", 0) > first["at"])  # It renews.
    finally:
        step.stop(worker)
    step._thread.join(timeout=2)
    assert not step._thread.is_alive()


def test_the_heartbeat_survives_a_cache_outage(heartbeat, settings, caplog):
    from reflection_site.celery import Heartbeat

    settings.WORKER_HEARTBEAT_S = 0.02
    worker = mock.Mock(hostname="celery@probe")
    step = Heartbeat(worker)
    with mock.patch("reflection_site.celery.record_heartbeat", side_effect=ConnectionError("cache down")) as beat:
        step.start(worker)
        _wait_for(lambda: beat.call_count >= 3)
        step.stop(worker)
        step._thread.join(timeout=2)
    assert [r.getMessage() for r in caplog.records if r.name == "reflection_site.celery"] == [
        "worker heartbeat not recorded: cache down"
    ]  # Once per outage, not once per beat.


def _wait_for(predicate, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError("timed out")
