"""The one way work is handed to a worker: ``send`` now, ``enqueue_on_commit`` after the transaction (issue 20)."""

from __future__ import annotations

import logging

import pytest
from django.db import transaction
from kombu.exceptions import OperationalError

from reflection_site.celery import BrokerHeldOff, enqueue_on_commit

pytestmark = pytest.mark.django_db


def test_a_task_is_sent_once_the_transaction_commits_and_not_before(sent_tasks, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with transaction.atomic():
            enqueue_on_commit("guardian_app.tasks.run_guardian", "01DECISION")
            assert sent_tasks.calls == []
    assert len(callbacks) == 1
    assert sent_tasks.calls == [("guardian_app.tasks.run_guardian", ("01DECISION",))]


def test_a_rolled_back_transaction_sends_nothing(sent_tasks):
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue_on_commit("guardian_app.tasks.run_guardian", "01DECISION")
        raise RuntimeError("the write failed")
    assert sent_tasks.calls == []


def test_a_dead_broker_is_logged_by_its_callback_name_and_the_caller_goes_on(
    sent_tasks, django_capture_on_commit_callbacks, caplog
):
    """Django logs a failed robust callback by ``__qualname__``; a ``functools.partial`` has none, and the
    AttributeError of that log line escaped as a 500 with the broker down. The callback is a lambda."""
    sent_tasks.error = OperationalError("[Errno 111] Connection refused")
    with caplog.at_level(logging.ERROR), django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("dataset_app.tasks.run_export", "01EXPORT")
    assert "Connection refused" in caplog.text
    assert "enqueue_on_commit.<locals>.<lambda>" in caplog.text


def test_sends_held_off_after_a_failure_are_left_to_the_sweep_without_a_line(
    sent_tasks, django_capture_on_commit_callbacks, caplog
):
    sent_tasks.error = BrokerHeldOff("a send failed a moment ago")
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("sessions_app.tasks.run_gate", "01TURN")
    assert not caplog.records
