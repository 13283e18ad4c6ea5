"""Where export files go and how they are opened: the exports folder, owner-only files, and a file that counts and
hashes what it is given (the size and SHA-256 an export records)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import BinaryIO

from django.conf import settings


def export_dir() -> Path:
    return Path(settings.DATASET_EXPORT_DIR) if settings.DATASET_EXPORT_DIR else Path(settings.DATA_DIR) / "exports"


def open_private(path: Path) -> BinaryIO:
    """A new (or emptied) file for an export, readable by its owner only (0600): exports hold conversations, and
    PII when ``include_pii``. Its folder is created 0700."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)  # A file left by an older release keeps its inode: tighten it too.
    return os.fdopen(fd, "wb")


class HashingFile:
    """A binary file that counts and hashes what is written to it."""

    def __init__(self, path: Path):
        self.path = path
        self.fh: BinaryIO = open_private(path)
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.count = 0

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.sha256.update(data)
        self.size += len(data)

    def close(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()

    def discard(self) -> None:
        """Close it unfinished (an export that failed); the caller removes the file."""
        if not self.fh.closed:
            self.fh.close()
