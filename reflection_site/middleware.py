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


class NulCharacterMiddleware:
    """A NUL character (U+0000) in the path, the query or a JSON body is a 422 before anything is stored.

    PostgreSQL cannot store it in text or JSON columns (the insert would fail with a 500 halfway through
    a request), and no message, fact or name needs it. Form posts (the admin) are checked by Django's
    form fields, which refuse it themselves.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        nul_in_url = "\x00" in request.path or "%00" in query or "\x00" in query
        if nul_in_url or (request.content_type == "application/json" and _JSON_NUL.search(request.body)):
            return error_response(
                HTTPStatus.UNPROCESSABLE_ENTITY,
                "invalid_character",
                "The request holds a NUL character (U+0000), which cannot be stored; remove it and send again.",
            )
        return self.get_response(request)
