"""The guardian's errors; the API turns each into ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from reflection_site.errors import ReflectionError


class GuardianError(ReflectionError):
    """Base of the write guardian's, rollback's and workspace's refusals."""

    code = "guardian_error"


class UnknownFile(GuardianError):
    """A file name outside the workspace profile's memory files (never joined to a path)."""

    code = "unknown_file"
    status = HTTPStatus.NOT_FOUND

    def __init__(self, name: str):
        from reflection_site.memory_files import active

        super().__init__(
            f"Unknown memory file {name!r}; expected one of {', '.join(active().files)}.",
            details={"file_name": str(name)[:100]},
        )


class UnsafeFile(GuardianError):
    """The path of a memory file holds something other than a regular file of its own (a symbolic link, a
    FIFO, a folder, a hard link shared with another path): it is neither read nor written through."""

    code = "unsafe_file"
    status = HTTPStatus.CONFLICT

    def __init__(self, name: str, found: str):
        self.file_name = name
        self.found = found
        super().__init__(
            f"{name} in the workspace is {found}, not a regular file: Reflection neither reads nor writes it. "
            f"Replace it with a regular file (or remove it) to resume.",
            details={"file_name": name, "found": found},
        )


class RollbackConflict(GuardianError):
    """Later changes overlap the write being rolled back; nothing was changed."""

    code = "rollback_conflict"
    status = HTTPStatus.CONFLICT

    def __init__(
        self,
        message: str,
        *,
        later_audits: list[str] | None = None,
        hand_edits: list[str] | None = None,
        details: Any = None,
    ):
        self.later_audits = list(later_audits or [])
        self.hand_edits = list(hand_edits or [])
        merged = {"later_audits": self.later_audits, "hand_edits": self.hand_edits}
        if details:
            merged.update(details)
        super().__init__(message, details=merged)


class NotRollbackable(GuardianError):
    """The audit was already rolled back, or never wrote anything."""

    code = "not_rollbackable"
    status = HTTPStatus.CONFLICT


class RollbackDisabled(GuardianError):
    """writeGuardianAuditing.enableRollback is off."""

    code = "rollback_disabled"
    status = HTTPStatus.FORBIDDEN


class NotRetryable(GuardianError):
    """A retry that cannot be made (nothing to retry with, or the audit is not a gate/retry write)."""

    code = "not_retryable"
    status = HTTPStatus.CONFLICT


class InvalidCorrection(GuardianError):
    code = "invalid_correction"
    status = HTTPStatus.UNPROCESSABLE_ENTITY


class InvalidEdits(GuardianError):
    """The guardian's edits could not be applied (a ``find`` that is missing or not unique, a bad op)."""

    code = "invalid_edits"
    status = HTTPStatus.UNPROCESSABLE_ENTITY


class FileBusy(GuardianError):
    """Another writer held the file's lock for longer than GUARDIAN_LOCK_TIMEOUT_S; try again shortly."""

    code = "file_busy"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self, name: str):
        super().__init__(f"{name} is busy (another write or rollback holds its lock); retry shortly.")
