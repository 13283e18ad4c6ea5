"""The NinjaAPI instance: API-key auth with scopes, the one error shape, and the cursor paginator."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import logging
from http import HTTPStatus
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from ninja import Field, NinjaAPI, Schema
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, ValidationError
from ninja.pagination import PaginationBase
from ninja.params.models import BodyModel
from ninja.parser import Parser
from ninja.security import HttpBearer

from reflection_site.errors import ReflectionError
from reflection_site.models import ApiKey as ApiKeyModel

logger = logging.getLogger(__name__)


class ErrorBody(Schema):
    code: str
    message: str
    details: Any = None


class ErrorOut(Schema):
    """Every 4xx and 5xx answer: ``{"error": {"code", "message", "details"?}}``."""

    error: ErrorBody


# The pattern of a text field that must not be blank: one character that ``str.strip()`` keeps. Spelled out, not
# ``\S``: each regex engine has its own ``\s`` (Python's strips U+001C-U+001F, pydantic's Rust one has U+0085, a
# client's ECMAScript one has neither but has U+FEFF), and a value one side took for blank and the other did not was
# refused with an undocumented 400 or a 422 for a schema-valid body (found by the API fuzz test). Tested equal to
# ``str.isspace``.
NOT_BLANK = r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


# --- Auth ----------------------------------------------------------------------------------------
class ApiKey(HttpBearer):
    """``Authorization: Bearer <key>`` with a scope: no or unknown key is a 401, a missing scope a 403."""

    openapi_description = "An API key from `python manage.py apikey create NAME --scope …`."

    def __init__(self, scope: str):
        if scope not in ApiKeyModel.Scope.values:
            raise ValueError(f"unknown scope {scope!r}")
        self.scope = scope
        super().__init__()

    def authenticate(self, request: HttpRequest, token: str) -> ApiKeyModel | None:
        key = authenticate_key(token)
        if key is None:
            return None
        if self.scope not in key.scopes:
            raise AuthorizationError(message=f"This API key lacks the '{self.scope}' scope.")
        return key


def authenticate_key(token: str) -> ApiKeyModel | None:
    import hmac

    prefix = ApiKeyModel.prefix_of(token)
    if prefix is None:
        return None
    key = ApiKeyModel.objects.active_with_prefix(prefix)
    if key is None or not hmac.compare_digest(key.key_hash, ApiKeyModel.hash_key(token)):
        return None
    now = timezone.now()
    # One write per key a minute, not one per request: `apikey list` and the admin show it to the minute.
    if key.last_used_at is None or now - key.last_used_at >= ApiKeyModel.LAST_USED_RESOLUTION:
        ApiKeyModel.objects.filter(id=key.id).update(last_used_at=now)
    return key


def _json_number(text: str) -> int | float:
    """JSON has one number type: ``130.0`` is the integer 130, as JSON Schema says (strict mode would refuse it)."""
    number = float(text)
    return int(number) if number.is_integer() else number


class JsonObjectParser(Parser):
    """Every request body of this API is a JSON object (or absent, where it is optional). Anything else is refused:
    ninja would otherwise read ``null``, a list, a string or a number as ``{}`` and run the operation with its
    defaults."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        data = json.loads(request.body, parse_float=_json_number)
        if not isinstance(data, dict):
            raise ValueError("the request body must be a JSON object")
        return data


def _resolve_body_as_json(cls: type[BodyModel], request: HttpRequest, api: NinjaAPI, path_params: dict) -> BodyModel:
    """Validate a JSON body by JSON's types (pydantic's strict JSON mode), as the OpenAPI schema states them.

    ninja validates a parsed body in pydantic's lax Python mode, which reads ``0`` as ``false``, ``false`` as
    ``0``, ``"5"`` as ``5`` and ``0`` as 1970-01-01: a client's mistake became a stored value. Strict JSON
    mode takes ISO strings for dates, as JSON has no date type, and refuses the rest with a 422.
    """
    data = cls.get_request_data(request, api, path_params)
    if data is None:
        return cls()
    data = cls._map_data_paths(data)
    return cls.model_validate_json(json.dumps(data), strict=True, context={"request": request})


BodyModel.resolve = classmethod(_resolve_body_as_json)  # ninja 1.7 has no setting for it; every body of ours.


api = NinjaAPI(
    title="Reflection API",
    version="1",
    description="Governs an AI agent's long-term memory: turns, gate decisions, audited writes, dataset.",
    urls_namespace="api",
    docs_url="/docs",
    parser=JsonObjectParser(),
)


# --- One error shape -----------------------------------------------------------------------------
def error_response(request: HttpRequest, status: int, code: str, message: str, details: Any = None) -> HttpResponse:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return api.create_response(request, {"error": body}, status=status)


_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    422: "validation_error",
    429: "rate_limited",
    503: "service_unavailable",
}


@api.exception_handler(ReflectionError)
def _reflection_error(request: HttpRequest, exc: ReflectionError) -> HttpResponse:
    return error_response(request, int(exc.status), exc.code, exc.message, exc.details)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(
        request, HTTPStatus.UNAUTHORIZED, "unauthorized", "Send a valid API key as 'Authorization: Bearer <key>'."
    )


@api.exception_handler(AuthorizationError)
def _forbidden(request: HttpRequest, exc: AuthorizationError) -> HttpResponse:
    return error_response(request, HTTPStatus.FORBIDDEN, "forbidden", str(exc.message))


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if exc.status_code == HTTPStatus.BAD_REQUEST:  # ninja's only 400: a body that is not a JSON object.
        return error_response(
            request, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error", "The request body must be a JSON object."
        )
    return error_response(request, exc.status_code, _CODES.get(exc.status_code, "error"), str(exc.message))


def _clean_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pydantic's error dicts, reduced to what serialises and helps: where, what, and the kind."""
    return [
        {"loc": [str(part) for part in err.get("loc", ())], "msg": str(err.get("msg", "")), "type": err.get("type", "")}
        for err in errors
    ]


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    details = _clean_errors(exc.errors)
    first = details[0] if details else {"loc": [], "msg": "invalid input"}
    where = ".".join(p for p in first["loc"] if p not in {"body", "payload", "query", "path"})
    message = f"{where}: {first['msg']}" if where else first["msg"]
    return error_response(request, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error", message, details)


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, HTTPStatus.NOT_FOUND, "not_found", str(exc) or "Not found.")


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error_response(
        request, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large", "The request body is too large."
    )


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def _database_down(request: HttpRequest, exc: DatabaseError) -> HttpResponse:
    logger.error("database unavailable: %s", exc)
    return error_response(
        request, HTTPStatus.SERVICE_UNAVAILABLE, "database_unavailable", "The database is unavailable; retry shortly."
    )


@api.exception_handler(Exception)
def _internal_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unhandled API error on %s", request.path)
    return error_response(request, HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error", "Internal server error.")


# --- Cursor pagination ---------------------------------------------------------------------------
class CursorPagination(PaginationBase):
    """Keyset pagination over a fixed ordering (default newest first by ``created_at`` then ``id``).

    The cursor is an opaque token holding the ordering values of the last row, so a page costs one
    indexed range scan however deep it is, and rows inserted meanwhile never shift pages.
    """

    class Input(Schema):
        limit: int = Field(50, ge=1, le=500, description="Rows per page (1-500).")
        cursor: str | None = Field(None, description="The `next_cursor` of the previous page.")

    class Output(Schema):
        items: list[Any]
        next_cursor: str | None = None

    items_attribute = "items"

    def __init__(self, *, ordering: tuple[str, ...] = ("-created_at", "-id"), **kwargs: Any) -> None:
        self.ordering = ordering
        super().__init__(**kwargs)

    @staticmethod
    def encode(values: list[Any]) -> str:
        raw = json.dumps([v.isoformat() if isinstance(v, dt.datetime) else v for v in values])
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    def decode(self, cursor: str, queryset: QuerySet) -> list[Any]:
        try:
            padded = cursor + "=" * (-len(cursor) % 4)
            values = json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
            if not isinstance(values, list) or len(values) != len(self.ordering):
                raise ValueError
            model = queryset.model
            out: list[Any] = []
            for field_name, value in zip(self.fields, values, strict=True):
                field = model._meta.get_field(field_name.split("__")[0])
                if field.get_internal_type() == "DateTimeField":
                    value = dt.datetime.fromisoformat(value)
                out.append(value)
            return out
        except (ValueError, TypeError, binascii.Error, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HttpError(
                HTTPStatus.UNPROCESSABLE_ENTITY, "The cursor is not valid; start again without one."
            ) from exc

    @property
    def fields(self) -> list[str]:
        return [f.lstrip("-") for f in self.ordering]

    def after(self, values: list[Any]) -> Q:
        """Rows strictly after ``values`` in this ordering: (a < x) or (a = x and b < y) ..."""
        condition = Q()
        for i, spec in enumerate(self.ordering):
            name = spec.lstrip("-")
            lookup = "lt" if spec.startswith("-") else "gt"
            term = Q(**{f"{name}__{lookup}": values[i]})
            for j in range(i):
                term &= Q(**{self.fields[j]: values[j]})
            condition |= term
        if len(self.ordering) > 1:
            # Issue 9: the same rows, with a bound on the first column alone (a <= x) that SQLite and
            # PostgreSQL can range-scan an index on; the OR by itself made them read the table from the top.
            first = self.ordering[0]
            condition &= Q(**{f"{first.lstrip('-')}__{'lte' if first.startswith('-') else 'gte'}": values[0]})
        return condition

    def paginate_queryset(self, queryset: QuerySet, pagination: Input, request: HttpRequest, **params: Any) -> Any:
        queryset = queryset.order_by(*self.ordering)
        if pagination.cursor:
            queryset = queryset.filter(self.after(self.decode(pagination.cursor, queryset)))
        rows = list(queryset[: pagination.limit + 1])
        next_cursor = None
        if len(rows) > pagination.limit:
            rows = rows[: pagination.limit]
            last = rows[-1]
            next_cursor = self.encode([getattr(last, name) for name in self.fields])
        return {"items": rows, "next_cursor": next_cursor}


_mounted = False
ROUTERS = (
    "sessions_app.api.router",
    "guardian_app.api.audits.router",
    "guardian_app.api.learning.router",
    "guardian_app.api.recall.router",
    "guardian_app.api.reflect.router",
    "dataset_app.api.router",
)


def mounted_api() -> NinjaAPI:
    """``api`` with every app's router under ``/v1/`` (once). Called by ``reflection_site.urls``, not when this
    module loads: the apps' API modules import this one (ApiKey, ErrorOut, NOT_BLANK …), and mounting here would
    import them back while they are half loaded whenever one of them is imported first."""
    global _mounted
    if not _mounted:
        for router in ROUTERS:
            api.add_router("/v1/", router)
        _mounted = True
    return api
