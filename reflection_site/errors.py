"""The base of every domain error; the API turns each into ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any


class ReflectionError(Exception):
    """A refusal the caller can act on. Each app's base error subclasses this."""

    code: str = "error"
    status: int = HTTPStatus.BAD_REQUEST

    def __init__(self, message: str, *, details: Any = None, code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.details = details
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status


class NotFound(ReflectionError):
    code = "not_found"
    status = HTTPStatus.NOT_FOUND


class Conflict(ReflectionError):
    code = "conflict"
    status = HTTPStatus.CONFLICT
