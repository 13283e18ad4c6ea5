"""What ``settings.py`` does on disk as it loads, before Django starts: borrow the running ``make run``'s data,
make the data dir owner-only and never committed, keep the secret key there, create the SQLite file owner-only
and say which PRAGMAs each connection runs, lay out the embedded broker's folders, and hash the inline styles the
CSP allows.

Django-free and reading no environment variable: ``settings.py`` reads them and passes the values in.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
import secrets
import sys
from pathlib import Path


def use_one_sqlite_library() -> str:
    """Give Django pysqlite3's SQLite (3.51, from its wheel) instead of the stdlib's (the system's 3.40): the recall
    index loads sqlite-vec into pysqlite3's, which this Python's ``sqlite3`` cannot (no loadable extensions), and
    two copies of SQLite in one process must never open the same file: closing one's descriptor drops the POSIX
    locks the other holds on it (sqlite.org, "How To Corrupt An SQLite Database File", 2.2.1). Called by
    settings.py before Django's SQLite backend imports ``sqlite3``; a process without the wheel keeps the stdlib's
    (and recall then compares vectors with NumPy). Returns the SQLite version in use."""
    try:
        import pysqlite3
        import pysqlite3.dbapi2
    except ImportError:
        import sqlite3

        return sqlite3.sqlite_version
    sys.modules["sqlite3"] = pysqlite3
    sys.modules["sqlite3.dbapi2"] = pysqlite3.dbapi2
    return pysqlite3.dbapi2.sqlite_version


def use_the_running_instance(pointer: Path) -> None:
    """``make run`` writes ``var/run.env`` while it runs (WORKSPACE_DIR, and DATABASE_URL/REDIS_URL when it was given
    them). A ``manage.py`` command started in another terminal without WORKSPACE_DIR takes the values it lacks from
    there, and says so on stderr, instead of creating a database of its own under var/ (issue 16: an API key created
    that way was unknown to the running service). A file left by a run that was killed names a dead process and
    is ignored."""
    try:
        values = dict(
            line.split("=", 1) for line in pointer.read_text().splitlines() if "=" in line and not line.startswith("#")
        )
        os.kill(int(values.pop("REFLECTION_RUN_PID")), 0)
    except (OSError, KeyError, ValueError):
        return  # No run, or not a live one.
    for name, value in values.items():
        os.environ.setdefault(name, value)
    sys.stderr.write(f"Using the data of the running `make run`: {os.environ.get('WORKSPACE_DIR')} ({pointer})\n")


def owner_only(path: Path, mode: int) -> None:
    """Tighten a file or folder of ours to ``mode`` (0700/0600): the data dir holds the database, the secret key
    and the exports (with PII unless redacted), and a folder made 0755 by an older release kept them readable."""
    try:
        st = path.stat()
        if st.st_uid == os.geteuid() and st.st_mode & 0o777 != mode:
            os.chmod(path, mode)
    except OSError:  # Absent, or not ours: nothing to tighten.
        pass


def ignored_by_git(folder: Path) -> None:
    """A ``.gitignore`` of ``*`` in the data dir, written on every start while missing: OpenClaw git-inits its
    workspace and advises ``git add .``, which must never commit the database or the secret key."""
    try:
        fd = os.open(folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as fh:
        fh.write("# Reflection's data (database, secret key, exports): never committed with the workspace.\n*\n")


def prepare_data_dir(data_dir: Path) -> None:
    """Create the data dir, owner only (0700), with its ``.gitignore``. Whatever is created inside (the database and
    its WAL, broker messages, exports, locks, the cache) is then out of other users' reach whatever the process
    umask, which stays the operator's for the memory files."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    owner_only(data_dir, 0o700)
    ignored_by_git(data_dir)


def secret_key(path: Path) -> str:
    """The key in ``path``, generated on the first start (mode 600), never a constant in the repository."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        key = secrets.token_urlsafe(50)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key)
        return key
    except OSError:  # Another process created it between our read and write.
        return path.read_text().strip()


def prepare_sqlite_file(path: Path) -> None:
    """Create the database 0600 before SQLite opens it (SQLite gives the -wal and -shm files the database's mode);
    an older 0644 file and its companions are tightened."""
    if str(path) == ":memory:" or not path.parent.is_dir():
        return
    with contextlib.suppress(FileExistsError, PermissionError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    for suffix in ("", "-wal", "-shm", "-journal"):
        owner_only(Path(f"{path}{suffix}"), 0o600)


def sqlite_options(
    *,
    auto_vacuum: bool,
    wal_mode: bool,
    synchronous: str,
    busy_timeout_ms: int,
    cache_size_pages: int,
    mmap_size_mb: int,
) -> dict[str, object]:
    """The ``OPTIONS`` of the SQLite database: write transactions that take the lock at once, and the seed's PRAGMAs
    run on every new connection."""
    pragmas = [
        # First: it takes effect only on a new database file, before anything writes its first page, and
        # switching to WAL writes it (an old file keeps its mode; retention runs the incremental vacuum).
        f"PRAGMA auto_vacuum={'INCREMENTAL' if auto_vacuum else 'NONE'}",
        f"PRAGMA journal_mode={'WAL' if wal_mode else 'DELETE'}",
        f"PRAGMA synchronous={synchronous}",
        f"PRAGMA busy_timeout={busy_timeout_ms}",
        f"PRAGMA cache_size={cache_size_pages}",
        f"PRAGMA mmap_size={mmap_size_mb * 1024 * 1024}",
        "PRAGMA foreign_keys=ON",
    ]
    return {"transaction_mode": "IMMEDIATE", "timeout": busy_timeout_ms / 1000, "init_command": ";".join(pragmas)}


def filesystem_broker_options(
    broker_dir: Path, *, fsync: bool, polling_interval: float, busy_polling_interval: float
) -> dict[str, object]:
    """The embedded broker's transport options (``reflection_site/broker.py``), its folders created under
    ``broker_dir``."""
    for sub in ("queue", "processed", "control", "tmp", "bad"):
        (broker_dir / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(broker_dir / "queue"),
        "data_folder_out": str(broker_dir / "queue"),
        "processed_folder": str(broker_dir / "processed"),
        # A message is written and fsynced here, then renamed into the queue (reflection_site/broker.py); a queue
        # file that is not a readable message is moved to bad/ with an ERROR log line.
        "tmp_folder": str(broker_dir / "tmp"),
        "bad_folder": str(broker_dir / "bad"),
        # Off: a message is still visible only once complete (the rename), but a power cut may lose it (the sweeps
        # send its turn or decision again) or leave it empty (then moved to bad/).
        "fsync": fsync,
        "control_folder": str(broker_dir / "control"),
        "store_processed": False,
        # A worker with nothing to take sleeps this long before it looks again (kombu's default of 1 s caps a
        # worker at ~1 task/s); each look is one directory listing. For a second after it last took a
        # message it looks every busy_polling_interval instead (reflection_site/broker.py).
        "polling_interval": polling_interval,
        "busy_polling_interval": busy_polling_interval,
    }


def inline_style_hashes(template: str) -> list[str]:
    """CSP source expressions for the <style> elements that a template of Django's own apps writes verbatim
    (``template`` relative to the ``django`` package)."""
    import django

    text = (Path(django.__file__).parent / template).read_text(encoding="utf-8")
    return [
        f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'"
        for body in re.findall(r"<style>(.*?)</style>", text, flags=re.S)
    ]
