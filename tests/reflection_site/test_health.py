from __future__ import annotations

from http import HTTPStatus
from unittest import mock

import pytest
from django.db import OperationalError

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
