"""The memory files as they are on disk: reads, atomic writes, and what a path holds instead of a file.

A memory file is read and written only through here (``read_file``, ``write_file``, ``remove_file``), by
its name (``paths``), never through a symbolic link, a FIFO or a hard link: such a path is refused and
recorded as a drift finding on the file's row (``unsafe_files``). Locks are in ``locks``, the files'
history (versions, reconciliation, the write-ahead protocol) in ``history``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from guardian_app.errors import UnsafeFile
from guardian_app.models import WorkspaceFile
from guardian_app.write.diffs import content_hash
from guardian_app.write.paths import canonical_name, path_for
from reflection_site import memory_files, safe_files

logger = logging.getLogger(__name__)

__all__ = [
    "current_state",
    "profile_files",
    "put_back",
    "read_file",
    "refusal_of",
    "remove_file",
    "unsafe_files",
    "write_file",
]


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


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
    folders, _ = _folder_parts(name)
    with contextlib.ExitStack() as stack:
        try:
            fd = stack.enter_context(safe_files.open_folder(Path(settings.WORKSPACE_DIR), folders, create=create))
        except OSError as exc:
            if exc.errno == errno.EPERM:
                raise _unsafe(name, exc.strerror) from exc
            raise
        yield fd


def _open_file(name: str) -> int | None:
    """A descriptor of the memory file opened for reading, None if it does not exist; UnsafeFile otherwise."""
    with _open_folder(name) as folder:
        if folder is None:
            return None
        try:
            fd, _ = safe_files.open_regular(_folder_parts(name)[1], dir_fd=folder)
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
    found = safe_files.refusal(st)
    if found is not None:
        raise _unsafe(name, found)
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
