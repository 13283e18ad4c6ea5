"""The Celery app, and the one place where each app's default beat entries become database rows."""

from __future__ import annotations

import gc
import importlib
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

from celery import Celery, bootsteps
from celery.signals import beat_embedded_init, task_prerun, worker_ready
from django.db import transaction
from kombu.exceptions import OperationalError
from kombu.utils.imports import symbol_by_name
from kombu.utils.uuid import uuid

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")

app = Celery("reflection")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)

# The cache key a worker's heartbeat renews (reflection_site.health reads it; one key for every worker: /healthz
# asks whether any worker is alive, not which).
HEARTBEAT_KEY = "reflection:worker-heartbeat"


def record_heartbeat(hostname: str) -> None:
    """Note in the shared cache that a worker is alive now (the time as seconds since the epoch)."""
    from django.core.cache import cache

    cache.set(HEARTBEAT_KEY, {"at": time.time(), "hostname": hostname, "pid": os.getpid()}, timeout=None)


class Heartbeat(bootsteps.StartStopStep):
    """A thread in the worker's main process that records a heartbeat every ``WORKER_HEARTBEAT_S`` seconds, from
    the moment the worker has started until it stops: ``/healthz`` and the admin index say ``degraded`` when none
    was recorded for ``WORKER_STALE_S`` (issue 16: a dead worker went unnoticed while the web kept answering 201).
    A cache that fails is logged once per outage and tried again at the next beat."""

    label = "Reflection heartbeat"

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, worker: Any) -> None:
        from django.conf import settings

        self._stopped.clear()
        self._thread = threading.Thread(
            target=self._run, args=(worker.hostname, settings.WORKER_HEARTBEAT_S), name="heartbeat", daemon=True
        )
        self._thread.start()

    def stop(self, worker: Any) -> None:
        self._stopped.set()

    def _run(self, hostname: str, interval: float) -> None:
        failing = False
        while True:
            try:
                record_heartbeat(hostname)
            except Exception as exc:  # noqa: BLE001 - a cache outage must not stop the beats after it
                if not failing:
                    logger.warning("worker heartbeat not recorded: %s", exc)
                failing = True
            else:
                failing = False
            if self._stopped.wait(interval):
                return


app.steps["worker"].add(Heartbeat)


@beat_embedded_init.connect
def _end_with_the_worker(**kwargs: Any) -> None:
    """The beat that ``worker --beat`` runs in a child process is told to end (SIGTERM) when the worker's main process
    dies. A worker killed with SIGKILL (by the OOM killer, or by the integration test) left its beat running as an
    orphan, so the worker supervisord started in its place ran a second beat beside it: every schedule twice (issue
    16). Its pool processes end by themselves (their pipe to the main process closes); the beat has no such pipe."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1  # <linux/prctl.h>
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM) != 0:
        logger.warning("beat: cannot ask to end with the worker (prctl errno %d)", ctypes.get_errno())


@worker_ready.connect
def _freeze_start_up_objects(**kwargs: Any) -> None:
    """Move what the worker built while starting (Django, the apps, Celery) out of the garbage collector's reach,
    as the WSGI module does for the web processes: the collection Python makes when the worker exits walked all of
    it and took 5 s of a stop that must end within 10 s (issue 16), and the collections while it runs skip it too."""
    gc.freeze()


@task_prerun.connect
def _close_old_connections(task: Any = None, **kwargs: Any) -> None:
    """Before each task a worker runs, what Django does before each request: drop a connection that is broken (an
    error since its last use, or a failed health check on PostgreSQL) or older than CONN_MAX_AGE, and keep the
    rest (CELERY_DB_REUSE_MAX stops Celery's fix-up from closing every connection around every task). Not for a
    task run eagerly in the caller's process, which may be inside a transaction."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


class BrokerHeldOff(OperationalError):
    """A ``HotPublisher`` send refused without trying: a send failed a moment ago (the broker is down)."""


class HotPublisher:
    """``task.delay(*args)`` for a task sent once per request on a hot path (ingest's gate hand-off).

    ``delay()`` works out the task's route and options again and borrows a producer from Celery's pool on every
    call: about 0.2 ms of CPU, a tenth of what ingesting a turn costs. This sends the same message, built by Celery's
    own ``create_task_message`` and sent by its ``send_task_message`` (signals, serializer, declared queue), with the
    route worked out once (this project routes by task name, never by arguments) and a producer kept per thread and
    process: a forked process, or a send that failed (the broker went away), starts with a new one. Messages carry no
    parent or root task id (it is for requests, not for tasks that start tasks). In eager mode (tests) it is
    ``delay()``.

    A send to a dead broker waits for the connection's own attempts (2 s a send with Redis stopped, measured by
    ``tests/integration/test_outages.py``); after a failed send the process holds its sends off for ``hold_off_s``
    seconds, raising ``BrokerHeldOff`` at once, so that one request in that time waits for the broker, not every
    one. Callers that have a sweep behind them (the gate's) leave the message to it.
    """

    def __init__(self, task_path: str, *, hold_off_s: float = 5.0) -> None:
        self.task_path = task_path  # "module.function", imported on first use (the web process has no worker)
        self.hold_off_s = hold_off_s
        self._task: Any = None
        self._local = threading.local()
        self._held_off_until = 0.0  # Per process, for every thread: the broker is the same for all of them.

    def __call__(self, *args: Any) -> str:
        task = self._task = self._task or symbol_by_name(self.task_path)
        if app.conf.task_always_eager:
            return task.delay(*args).id
        if time.monotonic() < self._held_off_until:
            raise BrokerHeldOff(f"{task.name} not sent: the last send failed less than {self.hold_off_s:g} s ago")
        state = self._local
        if getattr(state, "pid", None) != os.getpid():
            # What send_task works out from the task's options on every call (a task with ``expires`` is refused:
            # that depends on the time of the call).
            options = {k: v for k, v in task._get_exec_options().items() if v is not None}
            if options.pop("expires", None) is not None:
                raise ValueError(f"{task.name} has expires; send it with delay()")
            state.message_options = {
                "time_limit": options.pop("time_limit", None),
                "soft_time_limit": options.pop("soft_time_limit", None),
                "ignore_result": options.pop("ignore_result", task.ignore_result),
            }
            state.route = app.amqp.router.route(options, task.name, args, {}, task)
            state.producer, state.pid = None, os.getpid()
        if state.producer is None:
            state.producer = app.amqp.Producer(app.connection_for_write(), auto_declare=False)
        task_id = uuid()
        message = app.amqp.create_task_message(
            task_id, task.name, args, {}, reply_to=app.thread_oid, **state.message_options
        )
        producer = state.producer
        try:
            with producer.connection._reraise_as_library_errors():
                app.amqp.send_task_message(producer, task.name, message, **state.route)
        except BaseException as exc:
            state.producer = None
            producer.connection.release()
            if isinstance(exc, OperationalError | OSError):
                self._held_off_until = time.monotonic() + self.hold_off_s
                logger.warning(
                    "the broker is unreachable (%s): %s messages are held off for %g s and left to its sweep",
                    exc,
                    task.name,
                    self.hold_off_s,
                )
            raise
        return task_id


_publishers: dict[str, HotPublisher] = {}


def send(task_path: str, *args: Any) -> str:
    """Send the task at ``task_path`` (``"guardian_app.tasks.run_guardian"``) with ``args`` now; its task id.

    Work is sent by the task's name: the domain module that asks for it never imports its app's ``tasks`` (the
    tasks import the domain), and the name is resolved once per process. A broker error propagates (a sweep's loop
    stops at it); within ``hold_off_s`` of a failed send, ``BrokerHeldOff`` is raised without trying.
    """
    publisher = _publishers.get(task_path)
    if publisher is None:
        publisher = _publishers.setdefault(task_path, HotPublisher(task_path))
    return publisher(*args)


def enqueue_on_commit(task_path: str, *args: Any) -> None:
    """The one way to hand work to a worker from inside a transaction: ``send(task_path, *args)`` once it commits
    (at once when none is open).

    The work is recorded before it is sent (a pending turn, a decision without an audit, a queued run), so a dead
    broker only delays it to its stage's sweep: the send's error is logged by Django (``robust=True``) and the
    caller's answer stands; the sends held off after it are left to the sweep without a line each. A lambda, never
    ``functools.partial``: Django 5.2 names a failed robust callback by its ``__qualname__``, which a partial lacks,
    and that turned a dead broker into a 500 (Django ticket #36487).
    """
    transaction.on_commit(lambda: _send_unless_held_off(task_path, args), robust=True)


def _send_unless_held_off(task_path: str, args: tuple[Any, ...]) -> None:
    try:
        send(task_path, *args)
    except BrokerHeldOff:
        pass  # The failed send a moment ago was logged; the stage's sweep sends this one.


SCHEDULE_MODULES = (
    "reflection_site.schedules",
    "sessions_app.schedules",
    "guardian_app.schedules",
    "dataset_app.schedules",
)


def default_schedules() -> dict[str, tuple[str, str]]:
    """Every app's ``SCHEDULES``: name -> (task path, crontab "m h dom mon dow")."""
    entries: dict[str, tuple[str, str]] = {}
    for module_name in SCHEDULE_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        entries.update(module.SCHEDULES)
    return entries


# Beat rows whose timing a setting owns: name -> the setting. Applied at every ``migrate`` until an operator
# edits the row in the admin (the value we applied is kept in the row's description to tell).
SETTINGS_OWNED = {"conversation-jsonl-export": "JSONL_EXPORT_SCHEDULE", "consolidation": "CONSOLIDATION_SCHEDULE"}
OWNED_MARK = "Timing owned by the setting {setting}; last applied: {cron}"


def _cron_of(crontab: Any) -> str:
    return " ".join((crontab.minute, crontab.hour, crontab.day_of_month, crontab.month_of_year, crontab.day_of_week))


def _crontab_for(cron: str) -> Any:
    from django.conf import settings
    from django_celery_beat.models import CrontabSchedule

    minute, hour, day_of_month, month_of_year, day_of_week = cron.split()
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=minute,
        hour=hour,
        day_of_month=day_of_month,
        month_of_year=month_of_year,
        day_of_week=day_of_week,
        timezone=settings.CELERY_TIMEZONE,
    )
    return crontab


def _apply_setting(row: Any, setting: str, cron: str) -> None:
    """Re-time a settings-owned row to ``cron``, unless an operator edited it since we last applied a value.

    A row from before this rule has no mark; it counts as untouched if it still runs at the seed's default."""
    mark = OWNED_MARK.format(setting=setting, cron=cron)
    applied = row.description.rsplit("last applied: ", 1)[1] if "last applied: " in row.description else "0 0 * * *"
    current = _cron_of(row.crontab) if row.crontab is not None else None
    if current not in (cron, applied):
        logger.warning(
            "beat schedule %s was edited in the admin (it runs at %r): %s=%r is not applied; set the row's "
            "crontab to it, or delete the row and run migrate",
            row.name,
            current,
            setting,
            cron,
        )
        return
    if current != cron:
        row.crontab = _crontab_for(cron)
        logger.info("beat schedule %s now runs at %r (%s)", row.name, cron, setting)
    elif row.description == mark:
        return
    row.description = mark
    row.save(update_fields=["crontab", "description"])


def ensure_schedules(sender: Any = None, **kwargs: Any) -> int:
    """Create missing beat entries by name; code owns the task path, the operator owns timing and `enabled`.

    Connected to ``post_migrate``; rows are only ever added or have their task path updated, never deleted.
    Their timing is never changed, except for a row a setting owns (``SETTINGS_OWNED``), which follows its
    setting at every ``migrate`` until an operator edits it in the admin (then a warning says so).
    """
    if sender is not None and getattr(sender, "name", None) != "reflection_site":
        return 0
    from django.conf import settings
    from django_celery_beat.models import PeriodicTask

    created = 0
    for name, (task, cron) in default_schedules().items():
        setting = SETTINGS_OWNED.get(name)
        cron = getattr(settings, setting) if setting else cron
        defaults: dict[str, Any] = {"task": task, "crontab": _crontab_for(cron), "enabled": True}
        if setting:
            defaults["description"] = OWNED_MARK.format(setting=setting, cron=cron)
        row, was_created = PeriodicTask.objects.get_or_create(name=name, defaults=defaults)
        if not was_created and row.task != task:
            row.task = task
            row.save(update_fields=["task"])
        if setting and not was_created:
            _apply_setting(row, setting, cron)
        created += int(was_created)
    if created:
        logger.info("created %d default schedule(s)", created)
    return created
