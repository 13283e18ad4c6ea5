"""Reading a file below a folder without following a link or waiting on a FIFO (Django-free).

A memory file or workspace page is opened relative to its root one folder at a time, each with ``O_NOFOLLOW``,
and the file itself with ``O_NONBLOCK`` (a FIFO opens at once instead of waiting for a writer); what was opened
is then checked on the descriptor itself, so nothing can be swapped in between a check and the open. Anything
but a regular file of its own (a symbolic link, a FIFO, a folder, a socket, a device, a hard link) is refused with
``OSError(EPERM)`` whose ``strerror`` says what was found. ``guardian_app.write.workspace`` adds the drift finding
and the atomic writes; the gate reads the files' headings through ``read_text``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

__all__ = ["DIR_FLAGS", "READ_FLAGS", "kind_of", "open_folder", "open_regular", "read_text", "refusal"]


def kind_of(mode: int) -> str:
    """What a file of this mode is, in words ("a symbolic link", "a FIFO (named pipe)" …)."""
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


def refusal(st: os.stat_result) -> str | None:
    """Why a file with this status is not read or written, or None for a regular file of its own."""
    if not stat.S_ISREG(st.st_mode):
        return kind_of(st.st_mode)
    if st.st_nlink > 1:
        # A hard link shares its content with another path, which may lie outside the workspace.
        return f"a hard link ({st.st_nlink} names share its content)"
    return None


def open_regular(path: Path | str, *, dir_fd: int | None = None) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading if it is a regular file of its own: not through a symbolic link, without
    blocking on a FIFO; the check is made on the opened descriptor. Returns ``(fd, its status)``.

    Raises FileNotFoundError when it does not exist, and ``OSError(EPERM)`` with what was found as its
    ``strerror`` ("a symbolic link", "a FIFO (named pipe)" …) for anything else; the caller closes the
    descriptor.
    """
    try:
        fd = os.open(path, READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.EPERM, "a symbolic link", str(path)) from exc
        if exc.errno == errno.ENXIO:  # A socket cannot be opened.
            raise OSError(errno.EPERM, "a socket", str(path)) from exc
        raise
    try:
        st = os.fstat(fd)
        found = refusal(st)
        if found is not None:
            raise OSError(errno.EPERM, found, str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


@contextlib.contextmanager
def open_folder(root: Path, folders: list[str], *, create: bool = False) -> Iterator[int | None]:
    """A descriptor of ``root/folders…``, reached one part at a time without following a link; None when a
    folder is missing (and ``create`` is off). ``OSError(EPERM)`` naming the part for a link or a non-folder.
    ``root`` itself is the operator's and may be a link."""
    if create:
        root.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        yield None
        return
    try:
        for part in folders:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                yield None
                return
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    found = os.stat(part, dir_fd=fd, follow_symlinks=False)
                    raise OSError(errno.EPERM, f"inside {part}/, which is {kind_of(found.st_mode)}", part) from exc
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def read_text(root: Path, relative: str) -> str | None:
    """The text of ``root/relative`` (UTF-8, an invalid byte read as U+FFFD), None when it does not exist;
    ``OSError(EPERM)`` when its path holds anything but a regular file of its own."""
    *folders, name = Path(relative).parts
    with open_folder(root, folders) as folder:
        if folder is None:
            return None
        try:
            fd, _ = open_regular(name, dir_fd=folder)
        except FileNotFoundError:
            return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")
