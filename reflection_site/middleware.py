"""Request limits applied before a view reads a body: its size, and characters that cannot be stored."""

from __future__ import annotations

import re
from collections.abc import Callable
from http import HTTPStatus

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


def error_response(status: int, code: str, message: str, details: object = None) -> JsonResponse:
    body: dict[str, object] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return JsonResponse({"error": body}, status=status)


class RequestSizeLimitMiddleware:
    """A body over MAX_REQUEST_BYTES is a 413 before anything is parsed or stored."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_response(HTTPStatus.BAD_REQUEST, "bad_request", "Content-Length is not a number.")
        if length > settings.MAX_REQUEST_BYTES:
            return error_response(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                "payload_too_large",
                f"The request body is {length} bytes; the limit is {settings.MAX_REQUEST_BYTES} (MAX_REQUEST_BYTES).",
            )
        return self.get_response(request)


# A JSON "\u0000" escape that is not itself escaped ("\\u0000" is a backslash and the text "u0000").
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000", re.IGNORECASE)
# The only request body the JSON API reads (with or without a charset parameter).
_API_CONTENT_TYPES = frozenset({"application/json"})
_API_PREFIX = "/api/"


def _has_body(request: HttpRequest) -> bool:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) > 0
    except ValueError:
        return False


def body_holds_nul(body: bytes, content_type: str) -> bool:
    """Whether a request body carries U+0000 by content, whatever its Content-Type claims: a raw NUL byte, a
    JSON ``\\u0000`` escape, or (form encoding) ``%00``. A multipart body is left to Django's form fields,
    since its uploaded files (an XLSX import) are binary."""
    if content_type == "multipart/form-data":
        return False
    if b"\x00" in body or _JSON_NUL.search(body):
        return True
    return content_type == "application/x-www-form-urlencoded" and b"%00" in body


class NulCharacterMiddleware:
    """A NUL character (U+0000) in the path, the query or a body is a 422 before anything is stored; a body
    under ``/api/`` that is not ``application/json`` is a 415.

    PostgreSQL cannot store NUL in text or JSON columns (the insert would fail with a 500 halfway through
    a request), and no message, fact or name needs it. The body is inspected by content, not by its
    Content-Type: django-ninja parses a JSON body sent as ``text/plain``, without a Content-Type or as
    ``application/vnd.api+json`` all the same, so the check cannot trust the label; and the API then refuses
    every label but JSON, the one it documents.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        nul_in_url = "\x00" in request.path or "%00" in query or "\x00" in query
        has_body = _has_body(request)
        content_type = (request.content_type or "").strip().lower()
        if nul_in_url or (has_body and body_holds_nul(request.body, content_type)):
            return error_response(
                HTTPStatus.UNPROCESSABLE_ENTITY,
                "invalid_character",
                "The request holds a NUL character (U+0000), which cannot be stored; remove it and send again.",
            )
        if has_body and request.path.startswith(_API_PREFIX) and content_type not in _API_CONTENT_TYPES:
            shown = (request.META.get("CONTENT_TYPE") or "none")[:100]
            return error_response(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                f"The API reads JSON bodies only: send Content-Type: application/json (got {shown}).",
                details={"content_type": shown, "accepted": sorted(_API_CONTENT_TYPES)},
            )
        return self.get_response(request)
