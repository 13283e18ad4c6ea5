"""The learning API: the agent's feedback on a turn (token-checked), and what was learned from it."""

import datetime as dt
import hmac
import re
from http import HTTPStatus
from typing import Any, Literal

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from ninja import Query, Router
from ninja.errors import AuthorizationError, HttpError
from ninja.pagination import paginate
from ninja.security import APIKeyHeader

from guardian_app.api.audits import AnyScope
from guardian_app.api.schemas_learning import (
    NO_NOTE,
    DecayOut,
    EventFilter,
    FeedbackIn,
    FeedbackOut,
    HitOut,
    Kind,
    LearningEventOut,
    MemoryItemFilter,
    MemoryItemOut,
    MetricsOut,
    RuleFilter,
    RuleOut,
    StatusChangeIn,
    StatusChangeOut,
)
from guardian_app.errors import GuardianError
from guardian_app.learning import actions, decay, feedback, metrics, ratelimit
from guardian_app.models import LearningEvent, MemoryItem, Rule
from reflection_site.api import ApiKey, CursorPagination, ErrorOut, api, error_response
from sessions_app.models import ConversationTurn

router = Router(tags=["learning"])

_ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


# --- Auth ----------------------------------------------------------------------------------------
class Throttled(GuardianError):
    """429 with ``Retry-After`` and the limit's ``RateLimit`` headers."""

    code = "rate_limited"
    status = HTTPStatus.TOO_MANY_REQUESTS

    def __init__(self, message: str, limit: ratelimit.RateLimitResult) -> None:
        super().__init__(message, details={"limit_per_min": limit.limit, "retry_after_s": limit.reset_s})
        self.limit = limit


@api.exception_handler(Throttled)
def _throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
    response = error_response(request, exc.status, exc.code, exc.message, exc.details)
    for name, value in exc.limit.headers().items():
        response[name] = value
    return response


class LearningToken(APIKeyHeader):
    """``X-Learning-Token`` must equal ``LEARNING_FEEDBACK_TOKEN`` (constant-time); else 403, always 403 unset.

    Wrong tokens are counted per client address: past ``LEARNING_TOKEN_FAILURES_PER_MIN`` in a minute the address
    gets a 429 with ``Retry-After`` for every request, the right token included, until the minute ends."""

    param_name = "X-Learning-Token"
    openapi_description = (
        "The shared secret LEARNING_FEEDBACK_TOKEN. Missing or wrong: 403; too many wrong ones from one address: 429."
    )

    def authenticate(self, request: HttpRequest, key: str | None) -> str:
        expected = settings.LEARNING_FEEDBACK_TOKEN
        if not expected:
            raise AuthorizationError(message="Feedback is refused: LEARNING_FEEDBACK_TOKEN is not configured.")
        address = ratelimit.client_address(request) or "unknown"
        locked = ratelimit.token_locked_out(address)
        if locked is not None:
            raise Throttled(f"Too many wrong learning tokens from this address; retry in {locked.reset_s} s.", locked)
        if not key or not hmac.compare_digest(key.encode(), expected.encode()):
            counted = ratelimit.count_token_failure(address)
            if not counted.allowed:
                raise Throttled(
                    f"Too many wrong learning tokens from this address; retry in {counted.reset_s} s.", counted
                )
            raise AuthorizationError(message="Send the learning token as 'X-Learning-Token'.")
        return "learning-token"


# --- Feedback ------------------------------------------------------------------------------------
@router.post(
    "/traces/{turn_id}/feedback",
    auth=LearningToken(),
    response={200: FeedbackOut, 429: ErrorOut, **_ERRORS},
    url_name="trace_feedback",
)
def trace_feedback(request: HttpRequest, response: HttpResponse, turn_id: str, payload: FeedbackIn) -> Any:
    """Thumbs up or down on a turn: stored on the turn, deduplicated, rate-limited, then guarded.

    A repeat of the same `(turn, user, feedback)` answers `deduplicated: true` and writes nothing. Over
    `LEARNING_RATE_LIMIT_PER_CLIENT_PER_MIN` a minute from one client address, or `LEARNING_RATE_LIMIT_PER_MIN`
    per user: 429 with `Retry-After`. Errors inside the guardrails never fail the request: the feedback is
    acknowledged with `guardrails.reason = "guardrails_error"`.
    """
    # First, before any lookup: a client that varies user_id (its own word) is still one client.
    client = ratelimit.check_feedback_client(ratelimit.client_address(request) or "unknown")
    if not client.allowed:
        raise Throttled(
            f"More than {client.limit} feedback requests a minute from this address; retry in {client.reset_s} s.",
            client,
        )
    turn = get_object_or_404(
        ConversationTurn.objects.only("id", "user_message_content", "agent_message_content"), id=turn_id
    )
    outcome, limit = feedback.receive_feedback(
        turn,
        user_id=payload.user_id,
        feedback=payload.feedback,
        reason=payload.reason,
        project_id=payload.project_id,
        source=payload.source,
    )
    if outcome is None:
        assert limit is not None
        refused = error_response(
            request,
            HTTPStatus.TOO_MANY_REQUESTS,
            "rate_limited",
            f"More than {limit.limit} feedback requests a minute from this user; retry in {limit.reset_s} s.",
            {"limit_per_min": limit.limit, "retry_after_s": limit.reset_s},
        )
        for name, value in limit.headers().items():
            refused[name] = value
        return refused
    if limit is not None:
        for name, value in limit.headers().items():
            response[name] = value
    return {"ok": True, "deduplicated": outcome.deduplicated, "guardrails": outcome.guardrails()}


# --- What was learned ----------------------------------------------------------------------------
@router.get("/learning/rules", auth=ApiKey("read"), response={200: list[RuleOut], **_ERRORS}, url_name="list_rules")
@paginate(CursorPagination, ordering=("-priority", "-updated_at", "-id"))
def list_rules(request: HttpRequest, filters: Query[RuleFilter]) -> QuerySet[Rule]:
    """Learned rules, highest priority first; the agent asks for `status=active`."""
    rules = Rule.objects.all()
    if filters.status:
        rules = rules.filter(status=filters.status)
    if filters.rule_type:
        rules = rules.filter(rule_type=filters.rule_type)
    if filters.project_id:
        rules = rules.filter(project_id=filters.project_id)
    return rules


@router.get("/learning/rules/{rule_id}", auth=ApiKey("read"), response={200: RuleOut, **_ERRORS}, url_name="get_rule")
def get_rule(request: HttpRequest, rule_id: str) -> Rule:
    return get_object_or_404(Rule, id=rule_id)


@router.get(
    "/learning/memory-items",
    auth=ApiKey("read"),
    response={200: list[MemoryItemOut], **_ERRORS},
    url_name="list_memory_items",
)
@paginate(CursorPagination, ordering=("-created_at", "-id"))
def list_memory_items(request: HttpRequest, filters: Query[MemoryItemFilter]) -> QuerySet[MemoryItem]:
    """Learned memory items, newest first."""
    items = MemoryItem.objects.all()
    if filters.status:
        items = items.filter(status=filters.status)
    if filters.project_id:
        items = items.filter(project_id=filters.project_id)
    return items


@router.get(
    "/learning/memory-items/{item_id}",
    auth=ApiKey("read"),
    response={200: MemoryItemOut, **_ERRORS},
    url_name="get_memory_item",
)
def get_memory_item(request: HttpRequest, item_id: str) -> MemoryItem:
    return get_object_or_404(MemoryItem, id=item_id)


@router.get(
    "/learning/events", auth=ApiKey("read"), response={200: list[LearningEventOut], **_ERRORS}, url_name="list_events"
)
@paginate(CursorPagination, ordering=("-created_at", "-id"))
def list_events(request: HttpRequest, filters: Query[EventFilter]) -> QuerySet[LearningEvent]:
    """Every decision of the guardrails, newest first, with its reason and source."""
    events = LearningEvent.objects.all()
    for name in ("event_type", "source", "trace_id", "project_id", "shadow"):
        value = getattr(filters, name)
        if value is not None:
            events = events.filter(**{name: value})
    return events


# A hit postpones decay and expiry: a write, so the agent's `ingest` key (or an operator's), never `read`.
@router.post(
    "/learning/{kind}/{item_id}/hit",
    auth=AnyScope("ingest", "operate"),
    response={200: HitOut, **_ERRORS},
    url_name="record_hit",
)
def record_hit(request: HttpRequest, kind: Kind, item_id: str) -> dict[str, Any]:
    """The agent used this rule or memory item; decay honours hits (and a hit postpones expiry)."""
    obj = actions.record_hit(kind, item_id)
    return {
        "kind": kind,
        "id": obj.id,
        "status": obj.status,
        "hit_count": obj.hit_count,
        "last_hit_at": obj.last_hit_at,
    }


@router.post(
    "/learning/{kind}/{item_id}/{action}",
    auth=ApiKey("operate"),
    response={200: StatusChangeOut, **_ERRORS},
    url_name="change_learning_status",
)
def change_status(
    request: HttpRequest,
    kind: Kind,
    item_id: str,
    action: Literal["suppress", "archive", "reactivate"],
    payload: StatusChangeIn = NO_NOTE,  # Optional: no body is no note (an object, never null).
) -> dict[str, Any]:
    """Suppress, archive (memory items: expire) or reactivate; recorded as a learning event."""
    obj = get_object_or_404(actions.KINDS[kind], id=item_id)
    actor = f"api:{getattr(request.auth, 'name', 'key')}"
    changed = actions.change_status(obj, action, actor=actor, note=payload.note if payload else "")
    return {"kind": kind, "id": obj.id, "status": obj.status, "changed": changed}


_WINDOW = re.compile(r"^(\d{1,4})([hdw])$")


def parse_window(window: str) -> dt.timedelta:
    match = _WINDOW.match(window.strip())
    if not match:
        raise HttpError(HTTPStatus.UNPROCESSABLE_ENTITY, "window must look like 24h, 7d or 4w.")
    amount, unit = int(match.group(1)), match.group(2)
    delta = {"h": dt.timedelta(hours=amount), "d": dt.timedelta(days=amount), "w": dt.timedelta(weeks=amount)}[unit]
    if not dt.timedelta(hours=1) <= delta <= dt.timedelta(days=366):
        raise HttpError(HTTPStatus.UNPROCESSABLE_ENTITY, "window must be between 1h and 366d.")
    return delta


@router.get(
    "/learning/metrics", auth=ApiKey("read"), response={200: MetricsOut, **_ERRORS}, url_name="learning_metrics"
)
def learning_metrics(request: HttpRequest, window: str = "7d", project_id: str | None = None) -> dict[str, Any]:
    """Accepted, rejected, conflict, expired and rate-limited decisions in the window, and the hit rate."""
    now = timezone.now()
    counts = metrics.learning_metrics(since=now - parse_window(window), until=now, project_id=project_id)
    return {
        **counts,
        "window": window.strip(),
        "shadow_mode": settings.LEARNING_SHADOW_MODE,
        "guardrails_enabled": settings.LEARNING_GUARDRAILS_ENABLED,
    }


@router.post("/learning/decay", auth=ApiKey("operate"), response={200: DecayOut, **_ERRORS}, url_name="run_decay")
def run_decay(request: HttpRequest) -> dict[str, Any]:
    """Run the daily decay now (the beat entry `learning-decay` runs it at 03:00)."""
    return decay.decay_learning().summary()


__all__ = ["router", "LearningToken"]
