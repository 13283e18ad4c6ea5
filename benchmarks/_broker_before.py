"""benchmarks/broker.py's "before": reflection_site/broker.py as it was before issue 16 (commit 5a7c5d3~1).

The embedded broker (no ``REDIS_URL``): kombu's filesystem transport, polling fast while busy.

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
catching up on 500 turns spent more time listing than deciding).
"""

from __future__ import annotations

import os
from collections import deque
from queue import Empty  # What kombu's virtual transport raises when no queue gave a message.
from time import monotonic, sleep
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads


class FilesystemChannel(filesystem.Channel):
    """kombu's filesystem channel, taking messages from one listing of the folder until it runs out."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listed: dict[str, deque[str]] = {}

    def _get(self, queue: str) -> dict[str, Any]:
        """The oldest message of ``queue`` (file names start with the time they were written), as kombu's."""
        pending = self._listed.get(queue)
        if not pending:
            wanted = f"{queue}.msg"
            names = (name for name in os.listdir(self.data_folder_in) if name.partition(".")[2] == wanted)
            pending = self._listed[queue] = deque(sorted(names))
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
                if not self.store_processed:
                    os.remove(taken)
            except OSError as exc:
                raise ChannelError(f"Cannot read file {taken!r} from queue.") from exc
            return loads(bytes_to_str(payload))
        raise Empty()


class FilesystemTransport(filesystem.Transport):
    """kombu's filesystem transport with an adaptive poll (transport options ``busy_polling_interval``,
    ``busy_window``)."""

    Channel = FilesystemChannel
    default_busy_polling_interval = 0.002
    default_busy_window = 1.0

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
                if timeout is not None and now - started >= timeout:
                    raise TimeoutError() from None
                interval = self.sleep_interval(now)
                if interval is not None:
                    sleep(min(interval, timeout) if timeout else interval)
            else:
                self._last_delivery = monotonic()
                return
