"""The memory files of the workspace profile: lookup by name, reads as they are on disk, atomic writes, locks, history.

A name from a client or an LLM is looked up in the workspace profile's files
(``reflection_site.memory_files.active().files``), never joined to a path. Reflect's pages
(``bank/entities/<Entity>.md``, ``bank/opinions.md``, ``bank/world.md``, ``bank/experience.md``) are a second,
code-generated set: ``bank_page(entity)`` makes an entity's page name from a slug, and any bank name must
match ``BANK_PAGE_PATTERN`` exactly (no other folder, no dot segment, no slash in the entity). Every change
Reflection makes, and every change it notices (a hand edit, a file seen for the first time), becomes a
``FileVersion`` in the file's linear history; ``WorkspaceFile.current_version`` is the last one, and a
content on disk that differs from it is a hand edit.

Locking: ``file_lock(name)`` takes a ``filelock`` lock file under the data dir (every process on this
machine) and, on PostgreSQL, a session-level advisory lock keyed on the file (every machine sharing the
database). Unlike a row lock it holds across the commits inside (the write-ahead audit is committed
before the file is replaced); each transaction inside also locks the ``WorkspaceFile`` row.
Lock order is always file lock, then advisory lock, then row: no deadlock between writers.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import secrets
import stat
import threading
import time
import unicodedata
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from filelock import FileLock
from filelock import Timeout as FileLockTimeout

from guardian_app.errors import FileBusy, UnknownFile, UnsafeFile
from guardian_app.models import (
    BANK_PAGE_PATTERN,
    DAILY_LOG_PATTERN,
    MEMORY_FILES,
    FileSnapshot,
    FileVersion,
    Rollback,
    WorkspaceFile,
    WriteGuardianAudit,
)
from guardian_app.signals import memory_file_changed
from guardian_app.write.diffs import content_hash, diff_and_stats
from reflection_site import memory_files

logger = logging.getLogger(__name__)

__all__ = [
    "MEMORY_FILES",
    "bank_page",
    "canonical_name",
    "check_drift",
    "file_lock",
    "path_for",
    "read_file",
    "reconcile",
    "record_version",
    "remove_file",
    "snapshot_of",
    "unsafe_files",
    "write_file",
]

INTERRUPTED = "interrupted before the write was recorded"


# --- Names and paths -----------------------------------------------------------------------------
_BANK_PAGE = re.compile(BANK_PAGE_PATTERN)
_DAILY_LOG = re.compile(DAILY_LOG_PATTERN)


def bank_page(entity: str) -> str:
    """``bank/entities/<slug>.md`` for an entity name: the only way an entity's page name is made.

    The slug keeps ASCII letters, digits, ``_`` and ``-`` (accents dropped, anything else a hyphen), at
    most 64 characters; a name that loses letters on the way (Chinese, say) gets a short hash of itself
    appended so that two such names never share a page. UnknownFile for a name without a letter or digit.
    """
    name = unicodedata.normalize("NFKC", str(entity or "")).strip().lstrip("@")
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", ascii_name)
    slug = re.sub(r"-{2,}", "-", slug).strip("-_")
    lost = sum(1 for ch in name if ch.isalnum()) > sum(1 for ch in ascii_name if ch.isalnum())
    if lost or not slug:
        digest = hashlib.sha256(name.casefold().encode()).hexdigest()[:8]
        slug = f"{slug[:55]}-{digest}" if slug else digest
    slug = slug[:64].rstrip("-_")
    page = f"bank/entities/{slug}.md"
    if not any(ch.isalnum() for ch in name) or not _BANK_PAGE.fullmatch(page):
        raise UnknownFile(str(entity))
    return page


def canonical_name(name: object) -> str:
    """The memory file or bank page called ``name``; UnknownFile for anything else.

    A bank name is accepted only when it matches ``BANK_PAGE_PATTERN`` exactly.
    """
    found = name if isinstance(name, str) and name in memory_files.active().files else None
    if found is None and isinstance(name, str) and (_BANK_PAGE.fullmatch(name) or _DAILY_LOG.fullmatch(name)):
        found = name  # a daily log only as reflect names it (memory/YYYY-MM-DD.md), for its inferred Retain bullets
    if found is None:
        raise UnknownFile(str(name))
    return found


def path_for(name: str) -> Path:
    """The path of one of the profile's memory files at the root of WORKSPACE_DIR, or of a bank page under
    the profile's ``bank/`` folder (``bank/``, or ``memory/bank/`` where OpenClaw indexes it); UnknownFile
    (404) for any other name. A bank path is built from the parts of the checked name, and never through a
    symbolic link to a folder outside the workspace."""
    name = canonical_name(name)
    root = Path(settings.WORKSPACE_DIR)
    if name in memory_files.active().files:
        return root / name
    if _DAILY_LOG.fullmatch(name):
        if (root / "memory").is_symlink():
            raise UnknownFile(f"{name} (memory/ is a symbolic link)")
        return root / name
    match = _BANK_PAGE.fullmatch(name)
    assert match is not None
    bank = bank_dir()
    if bank.is_symlink() or (bank / "entities").is_symlink() or bank.parent.is_symlink():
        raise UnknownFile(f"{name} (bank/ is a symbolic link)")
    return bank / f"{match.group(1)}.md"  # group 1 is "opinions" or "entities/<slug>"


def bank_dir(root: Path | None = None) -> Path:
    """The folder that holds reflect's pages in this workspace profile (``bank/`` or ``memory/bank/``)."""
    return Path(root or settings.WORKSPACE_DIR) / memory_files.active().pages_dir / "bank"


# --- Reading and writing -------------------------------------------------------------------------
# A memory file is opened without following a link in any part of its path below WORKSPACE_DIR, and without
# waiting for a writer (a FIFO opens at once); what was opened is then checked on the descriptor itself, so
# nothing can be swapped in between a check and the open.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _kind_of(mode: int) -> str:
    for test, what in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def _refusal(st: os.stat_result) -> str | None:
    """Why a file with this status is not read or written, or None for a regular file of its own."""
    if not stat.S_ISREG(st.st_mode):
        return _kind_of(st.st_mode)
    if st.st_nlink > 1:
        # A hard link shares its content with another path, which may lie outside the workspace.
        return f"a hard link ({st.st_nlink} names share its content)"
    return None


def _unsafe(name: str, found: str) -> UnsafeFile:
    """The error for an unsafe path, recorded first as a drift finding on the file's row (the operator's view)."""
    logger.warning("workspace: %s is %s; not read or written", name, found)
    reason = found[:200]
    try:
        with transaction.atomic():  # A savepoint: a failure here leaves the caller's transaction usable.
            rows = WorkspaceFile.objects.filter(file_name=name)
            if rows.exclude(unsafe_reason=reason).update(unsafe_reason=reason):
                rows.filter(unsafe_since__isnull=True).update(unsafe_since=timezone.now())
            elif not rows.exists():
                WorkspaceFile.objects.get_or_create(
                    file_name=name, defaults={"unsafe_reason": reason, "unsafe_since": timezone.now()}
                )
    except DatabaseError as exc:  # The refusal stands even when it cannot be recorded.
        logger.error("workspace: could not record the drift finding for %s: %s", name, exc)
    return UnsafeFile(name, found)


def clear_finding(name: str) -> None:
    """The file's path holds a regular file again: its drift finding is closed."""
    WorkspaceFile.objects.filter(file_name=name).exclude(unsafe_reason="").update(unsafe_reason="", unsafe_since=None)


def unsafe_files() -> dict[str, str]:
    """The open drift findings: file name -> what its path holds instead of a regular file."""
    rows = WorkspaceFile.objects.exclude(unsafe_reason="").order_by("file_name")
    return dict(rows.values_list("file_name", "unsafe_reason"))


def _folder_parts(name: str) -> tuple[list[str], str]:
    """The folders below WORKSPACE_DIR that hold the file, and its own name in the last of them."""
    path = path_for(name).relative_to(Path(settings.WORKSPACE_DIR))
    return list(path.parts[:-1]), path.parts[-1]


@contextlib.contextmanager
def _open_folder(name: str, *, create: bool = False) -> Iterator[int | None]:
    """A descriptor of the folder that holds ``name``, reached from WORKSPACE_DIR one part at a time without
    following a link; None when a folder is missing (and ``create`` is off). UnsafeFile for a link."""
    root = Path(settings.WORKSPACE_DIR)
    if create:
        root.mkdir(parents=True, exist_ok=True)
    folders, _ = _folder_parts(name)
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # WORKSPACE_DIR itself is the operator's.
    except FileNotFoundError:
        yield None
        return
    try:
        for part in folders:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                yield None
                return
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    found = os.stat(part, dir_fd=fd, follow_symlinks=False)
                    raise _unsafe(name, f"inside {part}/, which is {_kind_of(found.st_mode)}") from exc
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def open_regular(path: Path | str, *, dir_fd: int | None = None) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading if it is a regular file of its own: not through a symbolic link, without
    blocking on a FIFO; the check is made on the opened descriptor. Returns ``(fd, its status)``.

    Raises FileNotFoundError when it does not exist, and ``OSError(EPERM)`` with what was found as its
    ``strerror`` ("a symbolic link", "a FIFO (named pipe)" …) for anything else; the caller closes the
    descriptor.
    """
    try:
        fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.EPERM, "a symbolic link", str(path)) from exc
        if exc.errno == errno.ENXIO:  # A socket cannot be opened.
            raise OSError(errno.EPERM, "a socket", str(path)) from exc
        raise
    try:
        st = os.fstat(fd)
        refusal = _refusal(st)
        if refusal is not None:
            raise OSError(errno.EPERM, refusal, str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _open_file(name: str) -> int | None:
    """A descriptor of the memory file opened for reading, None if it does not exist; UnsafeFile otherwise."""
    with _open_folder(name) as folder:
        if folder is None:
            return None
        try:
            fd, _ = open_regular(_folder_parts(name)[1], dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.EPERM:
                raise _unsafe(name, exc.strerror) from exc
            raise
    return fd


def refusal_of(name: str) -> UnsafeFile | None:
    """The UnsafeFile error (recorded as a drift finding) when the file's path holds anything but a regular
    file of its own; None when it is one or absent. A writer asks before it starts; ``read_file`` and
    ``write_file`` check again on their own descriptors."""
    try:
        fd = _open_file(canonical_name(name))
    except UnsafeFile as exc:
        return exc
    if fd is not None:
        os.close(fd)
    return None


def read_file(name: str) -> str | None:
    """The file as it is on disk now (people edit these files by hand); None if it does not exist.

    Bytes are decoded as UTF-8; an invalid byte becomes U+FFFD rather than failing the write. The file is
    opened without following a symbolic link and without waiting on a FIFO; anything but a regular file of
    its own raises UnsafeFile (recorded as a drift finding) and nothing of it is read.
    """
    fd = _open_file(canonical_name(name))
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")


def _existing_mode(name: str, folder: int, file_name: str) -> int | None:
    """The permission bits of the file about to be replaced (None: no file); UnsafeFile when it is not a
    regular file of its own (the link itself would be replaced, but the operator should see it first)."""
    try:
        st = os.stat(file_name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    refusal = _refusal(st)
    if refusal is not None:
        raise _unsafe(name, refusal)
    return st.st_mode & 0o777


def _process_umask() -> int:
    """This process's umask, read without changing it (os.umask would, for every thread at once)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _mkstemp_at(folder: int, prefix: str) -> tuple[int, str]:
    """A new temp file in the folder (mode 0600, never through a link); ``(fd, its name)``."""
    for _ in range(100):
        tmp = f"{prefix}{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o600, dir_fd=folder), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temp file name", prefix)


def _write_all(fh: BinaryIO, data: bytes) -> None:
    fh.write(data)
    fh.flush()


def _replace_at(folder: int, tmp: str, file_name: str) -> None:
    os.replace(tmp, file_name, src_dir_fd=folder, dst_dir_fd=folder)


def _unlink_at(folder: int, file_name: str) -> None:
    os.unlink(file_name, dir_fd=folder)


class FileSystem:
    """The file-system steps of ``write_file`` and ``remove_file``, looked up at call time.

    The seam through which tests/guardian_app/test_file_faults.py makes any step fail (a full disk, an
    fsync error, a failed rename, a process killed in between); nothing else replaces them. Each works
    relative to the descriptor of the file's folder, so no step follows a link.
    """

    mkstemp = staticmethod(_mkstemp_at)
    write = staticmethod(_write_all)
    fsync = staticmethod(os.fsync)
    chmod = staticmethod(os.fchmod)
    replace = staticmethod(_replace_at)
    unlink = staticmethod(_unlink_at)
    fsync_dir = staticmethod(os.fsync)


fs = FileSystem()


def write_file(name: str, text: str) -> None:
    """Atomic: a temp file in the same folder, fsync, rename over the file, fsync of the folder.

    A reader sees the old or the new content, never a mix; after a power cut the file holds one of them.
    The file keeps its permission bits (a new one gets 0644 less the umask). Every step works on the
    folder's descriptor, reached without following a link; a path that holds a symbolic link, a FIFO or
    another non-regular file raises UnsafeFile and nothing is written.
    """
    name = canonical_name(name)
    file_name = _folder_parts(name)[1]
    with _open_folder(name, create=True) as folder:
        assert folder is not None
        mode = _existing_mode(name, folder, file_name)
        if mode is None:
            mode = 0o644 & ~_process_umask()
        fd, tmp = fs.mkstemp(folder, f".{file_name}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fs.write(fh, text.encode("utf-8"))
                fs.fsync(fh.fileno())
                fs.chmod(fh.fileno(), mode)
            fs.replace(folder, tmp, file_name)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)
            raise
        fs.fsync_dir(folder)


def remove_file(name: str) -> None:
    """Delete the file (a rollback of the write that created it); absent already is fine. UnsafeFile when
    its path holds anything but a regular file of its own."""
    name = canonical_name(name)
    file_name = _folder_parts(name)[1]
    with _open_folder(name) as folder:
        if folder is None:
            return
        if _existing_mode(name, folder, file_name) is None:
            return
        with contextlib.suppress(FileNotFoundError):
            fs.unlink(folder, file_name)
        fs.fsync_dir(folder)


def put_back(name: str, content: str | None) -> bool:
    """After ``write_file`` or ``remove_file`` raised: make the file hold ``content`` (what it held before)
    again, since the failure may have come after the rename (the folder's fsync). True when it does."""
    if read_file(name) == content:
        return True
    try:
        if content is None:
            remove_file(name)
        else:
            write_file(name, content)
    except OSError as exc:
        logger.error("could not put %s back after a failed write: %s", name, exc)
    return read_file(name) == content


# --- Locks ---------------------------------------------------------------------------------------
_held = threading.local()
_ADVISORY_CLASS = 0x52464C54  # "RFLT": the advisory-lock namespace of memory files.


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
    lock = FileLock(str(lock_dir / f"{name.replace('/', '~')}.lock"), timeout=timeout)
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
    if connection.vendor == "postgresql":
        if WorkspaceFile.objects.select_for_update().filter(file_name=name).values_list("file_name").first():
            return
    elif WorkspaceFile.objects.filter(file_name=name).exists():
        return
    WorkspaceFile.objects.select_for_update().get_or_create(file_name=name)


# --- Snapshots and versions ----------------------------------------------------------------------
def snapshot_of(name: str, content: str | None) -> FileSnapshot | None:
    """The snapshot holding ``content`` (stored once per file and content); None for "no file"."""
    if content is None:
        return None
    digest = content_hash(content)
    snapshot = FileSnapshot.objects.filter(file_name=name, content_hash=digest).defer("content").first()
    if snapshot is not None:
        return snapshot
    snapshot, _ = FileSnapshot.objects.get_or_create(file_name=name, content_hash=digest, defaults={"content": content})
    return snapshot


def version_content(version: FileVersion | None) -> str | None:
    if version is None or version.snapshot_id is None:
        return None
    return version.snapshot.content


@dataclass
class FileState:
    """A file as it is on disk now, and the version of its history that holds that content."""

    name: str
    content: str | None
    content_hash: str | None
    seen: bool  # Reflection has recorded a version of it
    seq: int
    snapshot_id: str | None  # the current version's snapshot (None: no file)
    known_hash: str | None  # its content hash
    pending_audit_id: str | None
    added: list[FileVersion] = field(default_factory=list)


def _known(name: str) -> dict[str, object] | None:
    return (
        WorkspaceFile.objects.filter(file_name=name)
        .values(
            "pending_audit_id",
            "current_version_id",
            "current_version__seq",
            "current_version__snapshot_id",
            "current_version__snapshot__content_hash",
            "unsafe_reason",
        )
        .first()
    )


def _state(name: str, content: str | None, known: dict[str, object] | None) -> FileState:
    return FileState(
        name=name,
        content=content,
        content_hash=content_hash(content) if content is not None else None,
        seen=bool(known and known["current_version_id"]),
        seq=int((known or {}).get("current_version__seq") or 0),
        snapshot_id=(known or {}).get("current_version__snapshot_id"),  # type: ignore[arg-type]
        known_hash=(known or {}).get("current_version__snapshot__content_hash"),  # type: ignore[arg-type]
        pending_audit_id=(known or {}).get("pending_audit_id"),  # type: ignore[arg-type]
    )


def record_version(
    name: str,
    content: str | None,
    *,
    kind: str,
    previous_content: str | None,
    audit: WriteGuardianAudit | None = None,
    rollback: object | None = None,
    snapshot: FileSnapshot | None | object = ...,
    seq: int | None = None,
) -> FileVersion:
    """Append a version to the file's history and make it the current one (in a transaction, file lock held).

    ``previous_content`` is the current version's content (for the diff); ``snapshot`` the snapshot of
    ``content`` and ``seq`` the version's number when the caller has them. Sends ``memory_file_changed``
    after commit.
    """
    if seq is None:
        last = FileVersion.objects.filter(file_name=name).order_by("-seq").values_list("seq", flat=True).first()
        seq = (last or 0) + 1
    diff, stats = diff_and_stats(previous_content, content, name)
    version = FileVersion.objects.create(
        file_name=name,
        seq=seq,
        snapshot=snapshot_of(name, content) if snapshot is ... else snapshot,
        kind=kind,
        audit=audit,
        rollback=rollback,
        diff=diff,
        lines_added=stats.added,
        lines_removed=stats.removed + stats.modified,
    )
    WorkspaceFile.objects.filter(file_name=name).update(
        current_version=version, pending_audit=None, updated_at=timezone.now()
    )
    transaction.on_commit(lambda: memory_file_changed.send(sender=FileVersion, file_name=name), robust=True)
    return version


def finish_write(
    name: str,
    audit: WriteGuardianAudit,
    *,
    reason: str | None = None,
    previous_content: str | None | object = ...,
    seq: int | None = None,
) -> FileVersion:
    """Record a write that is on disk: the audit becomes ``written`` and the file gets a version."""
    fields: dict[str, object] = {"status": WriteGuardianAudit.Status.WRITTEN}
    if reason is not None:
        fields["reason"] = reason
    elif audit.reason and audit.reason.startswith(INTERRUPTED):
        fields["reason"] = "written (recorded after an interruption)"
    WriteGuardianAudit.objects.filter(id=audit.id).update(**fields)
    for key, value in fields.items():
        setattr(audit, key, value)
    if previous_content is ...:
        previous_content = audit.before_snapshot.content if audit.before_snapshot_id else None
    after = audit.after_snapshot.content if audit.after_snapshot_id else None
    return record_version(
        name,
        after,
        kind="write",
        audit=audit,
        previous_content=previous_content,
        snapshot=audit.after_snapshot,
        seq=seq,
    )


# --- Reconciliation: hand edits, first sightings, interrupted writes ----------------------------
def _finish_pending(name: str, audit: WriteGuardianAudit, disk: str | None, state: FileState) -> list[FileVersion]:
    """A write-ahead audit left by a crash (we hold the lock, so its writer is gone): finish or close it.

    - the file holds the audit's after-snapshot: the write happened; record it.
    - the file still holds the before-snapshot: the write never happened; do it now (the decision was
      already durable, like a write-ahead log's redo) and record it.
    - anything else: the file changed by hand in between; keep the audit failed and let the caller
      record the hand edit.
    """
    if audit.status == WriteGuardianAudit.Status.WRITTEN:
        return _finish_pending_rollback(name, audit, disk, state)
    after = audit.after_snapshot.content if audit.after_snapshot_id else None
    before_id = audit.before_snapshot_id
    if after is not None and disk == after:
        return [finish_write(name, audit)]
    before_hash = audit.before_snapshot.content_hash if before_id else None
    if after is not None and state.content_hash == before_hash and state.known_hash == before_hash:
        logger.warning("guardian: completing interrupted write %s of %s", audit.id, name)
        write_file(name, after)
        return [finish_write(name, audit)]
    logger.warning("guardian: interrupted write %s of %s superseded by a hand edit", audit.id, name)
    WriteGuardianAudit.objects.filter(id=audit.id).update(
        reason=f"{INTERRUPTED}; the file was changed by hand before it could be, so nothing was written"
    )
    WorkspaceFile.objects.filter(file_name=name).update(pending_audit=None)
    return []


def _finish_pending_rollback(
    name: str, audit: WriteGuardianAudit, disk: str | None, state: FileState
) -> list[FileVersion]:
    """A rollback of ``audit`` left by a crash (its ``Rollback`` row committed, the audit still ``written``):
    if the file holds what the rollback restores, record it; otherwise it never reached the file, and the
    row goes (a hand edit since is recorded by the caller)."""
    rollback = Rollback.objects.select_related("restored_snapshot").filter(audit=audit).first()
    WorkspaceFile.objects.filter(file_name=name).update(pending_audit=None)
    if rollback is None:
        return []
    restored = rollback.restored_snapshot
    if disk == (restored.content if restored is not None else None):
        logger.warning("guardian: recording interrupted rollback of %s of %s", audit.id, name)
        WriteGuardianAudit.objects.filter(id=audit.id).update(status=WriteGuardianAudit.Status.ROLLED_BACK)
        previous = FileSnapshot.objects.get(id=state.snapshot_id).content if state.snapshot_id else None
        return [
            record_version(
                name,
                disk,
                kind=FileVersion.Kind.ROLLBACK,
                audit=audit,
                rollback=rollback,
                previous_content=previous,
                snapshot=restored,
            )
        ]
    logger.warning("guardian: interrupted rollback of %s of %s never reached the file", audit.id, name)
    rollback.delete()
    return []


def sync(name: str) -> FileState:
    """Bring the history up to the disk (call with the file lock held) and return the file's state.

    Finishes an interrupted write, then records a file seen for the first time (``initial``) or a
    content that differs from the last known version (``hand_edit``; ``agent_edit`` for a file the agent
    writes itself in the workspace profile, OpenClaw's MEMORY.md and memory/). When nothing changed this costs
    one indexed query and a hash of the file.
    """
    name = canonical_name(name)
    disk = read_file(name)  # UnsafeFile (a drift finding) for a link, a FIFO …: no history is recorded.
    known = _known(name)
    if known and known["unsafe_reason"]:
        clear_finding(name)
    state = _state(name, disk, known)
    unchanged = state.content_hash == state.known_hash if state.seen else disk is None
    if state.pending_audit_id is None and unchanged:
        return state
    added: list[FileVersion] = []
    with transaction.atomic():
        lock_row(name)
        state = _state(name, disk, _known(name))
        if state.pending_audit_id is not None:
            audit = WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot").get(
                id=state.pending_audit_id
            )
            added += _finish_pending(name, audit, disk, state)
            disk = read_file(name)
            state = _state(name, disk, _known(name))
        if not state.seen:
            if disk is not None:
                added.append(record_version(name, disk, kind="initial", previous_content=None))
        elif state.content_hash != state.known_hash:
            previous = FileSnapshot.objects.get(id=state.snapshot_id).content if state.snapshot_id else None
            # openclaw profile: the agent writes MEMORY.md and memory/ itself; nobody else's hand is assumed there.
            kind = FileVersion.Kind.AGENT_EDIT if memory_files.active().written_by_agent(name) else "hand_edit"
            added.append(record_version(name, disk, kind=kind, previous_content=previous))
    state = _state(name, disk, _known(name))
    state.added = added
    return state


def reconcile(name: str) -> list[FileVersion]:
    """``sync`` for callers that only want the versions it added (hand edits, first sightings, finished writes)."""
    return sync(name).added


def check_drift(names: list[str] | None = None) -> list[FileVersion]:
    """The drift check (beat, every 10 minutes): snapshot every file changed by hand since its last known
    version and reconcile interrupted writes. A file that is busy is left for the next run; a path that
    holds a symbolic link, a FIFO or another non-regular file is not read, and stays a finding
    (``unsafe_files()``) until a regular file is back."""
    added: list[FileVersion] = []
    if not names:  # The profile's memory files, and the bank pages Reflection has written or seen.
        bank = WorkspaceFile.objects.filter(file_name__startswith="bank/").order_by("file_name")
        names = [*memory_files.active().files, *bank.values_list("file_name", flat=True)]
    for name in names:
        try:
            with file_lock(name):
                added += reconcile(name)
        except FileBusy:
            logger.info("drift check: %s is busy; next run", name)
        except UnsafeFile as exc:  # Recorded on the file's row (the admin's workspace files, `guardian drift`).
            logger.warning("drift check: %s", exc.message)
    return added


def current_state(name: str) -> dict[str, object]:
    """The file as on disk now, with its hash and what Reflection knows of it (for the API)."""
    name = canonical_name(name)
    content = read_file(name)
    row = WorkspaceFile.objects.select_related("current_version__snapshot").filter(file_name=name).first()
    if row is not None and row.unsafe_reason:
        clear_finding(name)
    last_hash = None
    if row is not None and row.current_version is not None and row.current_version.snapshot is not None:
        last_hash = row.current_version.snapshot.content_hash
    digest = content_hash(content) if content is not None else None
    return {
        "file_name": name,
        "exists": content is not None,
        "content": content or "",
        "content_hash": digest,
        "size": len(content.encode("utf-8")) if content is not None else 0,
        "known_hash": last_hash,
        "changed_by_hand": row is not None and row.current_version_id is not None and digest != last_hash,
    }


def profile_files() -> list[dict[str, object]]:
    """The workspace profile's memory files in order (for the API, the admin and the CLI): where each lives,
    the decision that writes it (and the one heading it writes under), its length as the agent counts it and
    the most the agent loads of it (None: no limit)."""
    profile = memory_files.active()
    decision_for = {name: decision for decision, name in profile.file_for_decision.items()}
    listing: list[dict[str, object]] = []
    for name in profile.files:
        try:
            content, unsafe = read_file(name), ""
        except UnsafeFile as exc:
            content, unsafe = None, exc.found
        listing.append(
            {
                "file_name": name,
                "path": profile.disk_path(name),
                "decision": decision_for.get(name),
                "section": profile.section_for(name),
                "exists": content is not None,
                "chars": memory_files.prompt_chars(content),
                "max_chars": profile.limit_for(name),
                "written_by_agent": profile.written_by_agent(name),
                "unsafe": unsafe,
            }
        )
    return listing
