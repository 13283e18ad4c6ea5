"""The embedded broker (no ``REDIS_URL``): kombu's filesystem transport, polling fast while busy.

The filesystem transport cannot wait on a socket; a worker looks at its queue folder, and when there is
nothing it may take (an empty queue, or its one prefetched message not yet acknowledged) it sleeps
``polling_interval`` and looks again. With one fixed interval a prefork worker waits up to that long after
every task before it takes the next, which halved its throughput at 20 ms (BENCHMARKS.md, memory gate),
while a short fixed interval costs an idle worker 5 % of a core. This transport sleeps
``busy_polling_interval`` for ``busy_window`` seconds after it last delivered a message, and the usual
``polling_interval`` once the queue has been quiet that long: a busy worker takes the next task within a
few milliseconds, an idle one costs what it did.

Its channel also lists the queue folder once per batch instead of once per message: kombu's lists and sorts
the whole folder for every message it takes, which made draining a backlog of n messages cost n² (a worker
catching up on 500 turns spent more time listing than deciding). A queue found empty is not listed again at every
poll while the folder is big (the other queues' backlog): it waits ten times what the listing took.

A message becomes visible only once it is complete and durable (issue 16), as in the maildir protocol: kombu's
channel created the message file in the queue folder and then wrote it, so a consumer listing the folder could
take a file its producer had not finished writing, fail to parse it and take the worker down. Here the producer
writes the message under its final name in a folder of its own (``tmp_folder``, on the same file system), fsyncs
it and renames it into the queue folder: a rename is atomic, so a consumer sees the whole message or nothing. A
file in the queue folder that still cannot be read as a message (written by hand, cut short by a full disk, or
left by an older version) is moved to ``bad_folder`` with an ERROR log line naming it, and the consumer goes on
with the next message.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections import deque
from functools import cached_property
from queue import (
    Empty,  # What kombu's virtual transport raises when no queue gave a message.
    SimpleQueue,
)
from time import monotonic, sleep
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)


class FilesystemChannel(filesystem.Channel):
    """kombu's filesystem channel: messages renamed in once written and fsynced, taken from one listing of the
    folder until it runs out, and a message that cannot be read set aside instead of raised."""

    # A taken message's file is removed on a thread of its own: unlinking a file whose data was fsynced waits for the
    # file system's journal (0.4-3.5 ms here, most of a message's cost to the consumer when the disk is busy).
    _removals: SimpleQueue[str] | None = None
    _remover_pid = 0
    _removals_lock = threading.Lock()

    # A queue a listing found empty is listed again once this many times that listing's duration has passed. The folder
    # holds every queue's messages: with 1,650 turns waiting for the gate, each look at the empty guardian queue listed
    # them all (1 ms) and took half of the worker's main process. A small folder is still listed at every poll.
    EMPTY_RELIST_FACTOR = 10

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listed: dict[str, deque[str]] = {}
        self._empty_until: dict[str, float] = {}

    @classmethod
    def _remove_later(cls, path: str) -> None:
        with cls._removals_lock:
            if cls._removals is None or cls._remover_pid != os.getpid():  # (A forked child starts its own.)
                cls._removals, cls._remover_pid = SimpleQueue(), os.getpid()
                threading.Thread(target=cls._remove_taken, args=(cls._removals,), name="broker-rm", daemon=True).start()
        cls._removals.put(path)

    @staticmethod
    def _remove_taken(removals: SimpleQueue[str]) -> None:
        while True:
            try:
                os.remove(removals.get())
            except OSError:  # Gone already; a file left behind in processed/ is only a taken message's copy.
                pass

    def _folder(self, option: str, beside: str, name: str) -> str:
        """The transport option's folder, else ``name`` beside the folder ``beside``; created if missing."""
        folder = self.transport_options.get(option) or os.path.join(os.path.dirname(os.path.abspath(beside)), name)
        os.makedirs(folder, exist_ok=True)
        return folder

    @cached_property
    def tmp_folder(self) -> str:
        """Where a message is written before it is renamed into the queue folder (same file system)."""
        return self._folder("tmp_folder", self.data_folder_out, "tmp")

    @cached_property
    def fsync(self) -> bool:
        """Whether a message's data reaches the disk before the message is visible (transport option ``fsync``)."""
        return bool(self.transport_options.get("fsync", True))

    @cached_property
    def bad_folder(self) -> str:
        """Where a queue file that is not a readable message is moved."""
        return self._folder("bad_folder", self.data_folder_in, "bad")

    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:
        """Put a message on ``queue``: written and fsynced under ``tmp_folder``, then renamed into the queue.

        The name is kombu's (the time in ms first, so a listing sorted by name is oldest first)."""
        filename = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        written = os.path.join(self.tmp_folder, filename)
        try:
            with open(os.open(written, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
                if self.fsync:
                    file.flush()
                    os.fsync(file.fileno())
            os.rename(written, os.path.join(self.data_folder_out, filename))
        except OSError as exc:
            raise ChannelError(f"Cannot add file {filename!r} to directory") from exc

    def _get(self, queue: str) -> dict[str, Any]:
        """The oldest message of ``queue`` (file names start with the time they were written), as kombu's."""
        pending = self._listed.get(queue)
        if not pending:
            started = monotonic()
            if started < self._empty_until.get(queue, 0.0):
                raise Empty()
            wanted = f"{queue}.msg"
            names = (name for name in os.listdir(self.data_folder_in) if name.partition(".")[2] == wanted)
            pending = self._listed[queue] = deque(sorted(names))
            if not pending:
                now = monotonic()
                self._empty_until[queue] = now + self.EMPTY_RELIST_FACTOR * (now - started)
        while pending:
            filename = pending.popleft()
            taken = os.path.join(self.processed_folder, filename)
            try:
                # Taking the file is renaming it out of the queue folder (the processed folder is on the same
                # file system; any other failure is raised, not skipped); a file another consumer took is gone.
                os.rename(os.path.join(self.data_folder_in, filename), taken)
            except FileNotFoundError:
                continue
            try:
                with open(taken, "rb") as message:
                    payload = message.read()
            except OSError as exc:
                raise ChannelError(f"Cannot read file {taken!r} from queue.") from exc
            try:
                decoded = loads(bytes_to_str(payload))
                self.Message(decoded, channel=self)  # What the consumer will build: it must not fail there.
            except Exception as exc:  # noqa: BLE001 - any unreadable message is set aside, never raised
                self._set_aside(taken, filename, exc)
                continue
            if not self.store_processed:
                self._remove_later(taken)
            return decoded
        raise Empty()

    def _set_aside(self, taken: str, filename: str, exc: Exception) -> None:
        bad = os.path.join(self.bad_folder, filename)
        try:
            os.rename(taken, bad)
        except OSError as move_error:
            logger.error("unreadable message %s (%s) could not be moved to %s: %s", taken, exc, bad, move_error)
            return
        logger.error("unreadable message %s moved to %s: %s: %s", filename, bad, type(exc).__name__, exc)


def _worker_stopping() -> bool:
    """Whether this process is a Celery worker asked to stop (SIGTERM, SIGINT, SIGQUIT): its loop then stops
    waiting for messages at once instead of after the 2 s it asks ``drain_events`` to wait (issue 16: Ctrl-C
    stops everything within 10 s)."""
    from celery.worker import state

    # As celery.worker.state.maybe_shutdown tests them: the exit code may be 0.
    return any(flag is not None and flag is not False for flag in (state.should_stop, state.should_terminate))


class FilesystemTransport(filesystem.Transport):
    """kombu's filesystem transport with an adaptive poll (transport options ``busy_polling_interval``,
    ``busy_window``)."""

    Channel = FilesystemChannel
    default_busy_polling_interval = 0.002
    default_busy_window = 1.0
    # There is no host: kombu's default of "localhost" made every connection log "No hostname was supplied" (a
    # WARNING in each manage.py command that sends a task, issue 16).
    default_connection_params = {"port": None, "hostname": None}

    def __init__(self, client: Any, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        options = client.transport_options or {}
        self.busy_polling_interval = float(options.get("busy_polling_interval", self.default_busy_polling_interval))
        self.busy_window = float(options.get("busy_window", self.default_busy_window))
        self._last_delivery = float("-inf")

    def sleep_interval(self, now: float) -> float | None:
        """How long to sleep after a look that found nothing to take."""
        if self.polling_interval is None:
            return None
        if now - self._last_delivery < self.busy_window:
            return min(self.busy_polling_interval, self.polling_interval)
        return self.polling_interval

    def drain_events(self, connection: Any, timeout: float | None = None) -> None:
        started = monotonic()
        get = self.cycle.get
        while True:
            try:
                get(self._deliver, timeout=timeout)
            except Empty:
                now = monotonic()
                if (timeout is not None and now - started >= timeout) or _worker_stopping():
                    raise TimeoutError() from None
                interval = self.sleep_interval(now)
                if interval is not None:
                    sleep(min(interval, timeout) if timeout else interval)
            else:
                self._last_delivery = monotonic()
                return
