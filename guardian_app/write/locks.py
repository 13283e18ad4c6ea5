"""Locks on a memory file: one writer at a time, across processes and machines.

``file_lock(name)`` takes a ``filelock`` lock file under the data dir (every process on this machine) and,
on PostgreSQL, a session-level advisory lock keyed on the file (every machine sharing the database). Unlike
a row lock it holds across the commits inside (the write-ahead audit is committed before the file is
replaced); each transaction inside also locks the ``WorkspaceFile`` row (``lock_row``).
Lock order is always file lock, then advisory lock, then row: no deadlock between writers.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection
from filelock import FileLock
from filelock import Timeout as FileLockTimeout

from guardian_app.errors import FileBusy
from guardian_app.models import WorkspaceFile
from guardian_app.write.paths import canonical_name
from reflection_site import memory_files

logger = logging.getLogger(__name__)

__all__ = ["file_lock", "file_locks", "lock_row"]

_held = threading.local()
_ADVISORY_CLASS = 0x52464C54  # "RFLT": the advisory-lock namespace of memory files.
# How often a writer waiting for a file's lock tries it again. filelock's default, 50 ms, is five to ten times as long
# as a guarded write holds the lock: two workers writing to USER.md spent a tenth of their time asleep on it.
POLL_INTERVAL_S = 0.002


def _held_names() -> set[str]:
    if not hasattr(_held, "names"):
        _held.names = set()
    return _held.names


@contextlib.contextmanager
def _advisory_lock(name: str, deadline: float) -> Iterator[None]:
    if connection.vendor != "postgresql":
        yield
        return
    # The memory files are keys 0-5; a bank page a hash of its name above them (a clash only serialises more).
    known = memory_files.ALL_FILES
    key = known.index(name) if name in known else 16 + zlib.crc32(name.encode()) % 2_000_000_000
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_ADVISORY_CLASS, key])
            if cursor.fetchone()[0]:
                break
            if time.monotonic() > deadline:
                raise FileBusy(name)
            time.sleep(0.02)
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_ADVISORY_CLASS, key])
        except DatabaseError:
            # A broken connection: closing it ends the session, and the session's locks with it.
            logger.warning("could not release the advisory lock of %s; closing the connection", name)
            connection.close()


@contextlib.contextmanager
def file_lock(name: str) -> Iterator[None]:
    """Hold the file's cross-process lock (and, on PostgreSQL, its cross-machine advisory lock).

    Re-entrant within a thread. Raises FileBusy after ``GUARDIAN_LOCK_TIMEOUT_S``.
    """
    name = canonical_name(name)
    held = _held_names()
    if name in held:
        yield
        return
    timeout = float(settings.GUARDIAN_LOCK_TIMEOUT_S)
    deadline = time.monotonic() + timeout
    lock_dir = Path(settings.DATA_DIR) / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_dir / f"{name.replace('/', '~')}.lock"), timeout=timeout, poll_interval=POLL_INTERVAL_S)
    try:
        lock.acquire()
    except FileLockTimeout as exc:
        raise FileBusy(name) from exc
    held.add(name)
    try:
        with _advisory_lock(name, deadline):
            yield
    finally:
        held.discard(name)
        lock.release()


@contextlib.contextmanager
def file_locks(names: list[str]) -> Iterator[None]:
    """Several files' locks, always taken in name order so that two callers cannot deadlock."""
    with contextlib.ExitStack() as stack:
        for name in sorted({canonical_name(n) for n in names}):
            stack.enter_context(file_lock(name))
        yield


def lock_row(name: str) -> None:
    """Make sure the file's row exists and lock it for this transaction (SELECT … FOR UPDATE on PostgreSQL;
    SQLite has no row locks, and its IMMEDIATE transactions already hold the database's write lock)."""
    quote = connection.ops.quote_name
    lock = " FOR UPDATE" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:  # A written statement: twice a guarded write, where the ORM took 0.3 ms.
        cursor.execute(
            f"SELECT 1 FROM {quote(WorkspaceFile._meta.db_table)} WHERE {quote('file_name')} = %s{lock}", [name]
        )
        if cursor.fetchone() is not None:
            return
    WorkspaceFile.objects.select_for_update().get_or_create(file_name=name)
