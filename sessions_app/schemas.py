"""Request and response shapes of the conversation API."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import (
    BaseModel,
    BeforeValidator,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    field_validator,
    model_serializer,
)

from sessions_app.models import ConversationContext, ConversationTurn, Decision, MemoryGateDecision


def _to_datetime(value: Any) -> Any:
    """Accept epoch milliseconds (the seed's timestamps) or ISO 8601; naive ISO times are UTC."""
    if isinstance(value, bool):
        raise ValueError("expected epoch milliseconds or an ISO 8601 time")
    if isinstance(value, int | float):
        if not 0 <= value < 32503680000000:  # Before the year 3000.
            raise ValueError("epoch milliseconds out of range")
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    if isinstance(value, str):
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
        try:  # stored in UTC: "0001-01-01T00:00+01:00" or "9999-12-31T23:59-01:00" has no UTC time
            return parsed.astimezone(dt.UTC)
        except OverflowError:
            raise ValueError("the time is out of range once in UTC") from None
    return value


Timestamp = Annotated[
    dt.datetime,
    BeforeValidator(_to_datetime),
    # The schema states both forms, so clients (and the API fuzzer) know a number is epoch milliseconds.
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date-time"},
                {"type": "number", "minimum": 0, "exclusiveMaximum": 32503680000000, "description": "epoch ms"},
            ]
        }
    ),
]


def _param_to_datetime(value: Any) -> Any:
    """A query parameter is text: there, a number such as ``1700000000000`` is epoch milliseconds."""
    if isinstance(value, str):
        try:
            return _to_datetime(float(value))
        except ValueError:
            pass
    return _to_datetime(value)


# The same for query parameters (filters), whose values always arrive as text.
TimestampParam = Annotated[Timestamp, BeforeValidator(_param_to_datetime)]


def _no_control(value: str | None) -> str | None:
    if value is not None and any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("must not contain control characters")
    return value


# What the validators below accept, stated in the schema for clients (the validators keep their messages).
_PLAIN_TEXT = {"pattern": r"^[^\x00-\x1f\x7f]*$"}
# Python's whitespace spelled out (str.isspace): "\s" means less in the ECMA regexes of JSON Schema tools (no
# U+0085), so an API fuzzer could take an id ending in U+0085 for valid while the server refused it.
_SPACE = r"\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_PATH_SEGMENT = {"pattern": rf"^[^{_SPACE}\x00-\x1f\x7f/]([^\x00-\x1f\x7f/]*[^{_SPACE}\x00-\x1f\x7f/])?$"}
_PATH_SEGMENT_RE = re.compile(_PATH_SEGMENT["pattern"])


# The ingest body's shapes are plain pydantic models: ninja's Schema (made to read ORM objects) validates through a
# Python wrapper that reads every field of every nested model one attribute at a time, 5 % of a turn's CPU. The
# OpenAPI schema is the same either way.
class SessionIn(BaseModel):
    id: str = Field(
        ...,
        min_length=1,
        max_length=255,
        description="The agent's session key, e.g. channel:xxx:yyy",
        json_schema_extra=_PATH_SEGMENT,
    )
    channel_id: str = Field(..., min_length=1, max_length=255, json_schema_extra=_PLAIN_TEXT)
    conversation_target: str | None = Field(None, max_length=255, json_schema_extra=_PLAIN_TEXT)
    account_id: str | None = Field(None, max_length=255, json_schema_extra=_PLAIN_TEXT)
    metadata: dict[str, Any] | None = None

    @field_validator("id")
    @classmethod
    def _id_is_a_path_segment(cls, value: str) -> str:
        _no_control(value)
        # The schema's own pattern, so that the server accepts exactly what the OpenAPI document says (str.strip()
        # and the pattern's \s disagreed on a character the API fuzzer found).
        if not _PATH_SEGMENT_RE.fullmatch(value):
            raise ValueError("must not contain '/' or surrounding spaces")
        return value

    _clean = field_validator("channel_id", "conversation_target", "account_id")(_no_control)


class UserMessageIn(BaseModel):
    id: str | None = Field(None, min_length=1, max_length=255)
    content: str = Field(..., min_length=1)
    from_: str | None = Field(None, alias="from", max_length=255)
    metadata: dict[str, Any] | None = None


class AgentReplyIn(BaseModel):
    id: str | None = Field(None, min_length=1, max_length=255)
    content: str
    metadata: dict[str, Any] | None = None


class ContextItemIn(BaseModel):
    role: Literal["user", "agent"]
    message: str
    timestamp: Timestamp


class TurnIn(BaseModel):
    session: SessionIn
    turn_number: int | None = Field(None, ge=1, le=2_000_000_000)
    user_message: UserMessageIn
    agent_reply: AgentReplyIn
    context: list[ContextItemIn] = Field(default_factory=list)
    created_at: Timestamp | None = None


class UserMessageOut(Schema):
    id: str | None
    content: str
    from_: str | None = Field(None, alias="from")
    metadata: dict[str, Any] | None

    @model_serializer(mode="wrap")
    def _from_as_sent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Answers carry "from", as the request does (ninja serialises by field name)."""
        data = handler(self)
        if "from_" in data:
            data["from"] = data.pop("from_")
        return data


class AgentReplyOut(Schema):
    id: str | None
    content: str
    metadata: dict[str, Any] | None


class TurnOut(Schema):
    id: str
    session_id: str
    turn_number: int
    created_at: dt.datetime
    gate_status: str
    gate_attempts: int
    gate_last_error: str | None
    user_message: UserMessageOut
    agent_reply: AgentReplyOut

    @staticmethod
    def resolve_user_message(turn: ConversationTurn) -> dict[str, Any]:
        return {
            "id": turn.user_message_id,
            "content": turn.user_message_content,
            "from": turn.user_from,
            "metadata": turn.user_metadata,
        }

    @staticmethod
    def resolve_agent_reply(turn: ConversationTurn) -> dict[str, Any]:
        return {"id": turn.agent_message_id, "content": turn.agent_message_content, "metadata": turn.agent_metadata}


class SessionOut(Schema):
    id: str
    channel_id: str
    conversation_target: str | None
    account_id: str | None
    created_at: dt.datetime
    last_activity_at: dt.datetime
    metadata: dict[str, Any] | None


class SessionDetailOut(SessionOut):
    turn_count: int


class ContextItemOut(Schema):
    id: int
    turn_id: str
    role: str
    message: str
    timestamp: dt.datetime
    sequence_number: int

    @staticmethod
    def resolve_turn_id(item: ConversationContext) -> str:
        return item.turn_id


# --- The memory gate (REQ-002) ---------------------------------------------------------------------
class DecisionFilter(Schema):
    session: str | None = Field(None, description="Only this session's decisions.")
    decision: Decision | None = Field(None, description="Only this decision type.")
    since: TimestampParam | None = Field(None, description="Created at or after (ISO 8601 or epoch ms).")
    until: TimestampParam | None = Field(None, description="Created before (ISO 8601 or epoch ms).")
    model: str | None = Field(None, description="Only decisions by this model, e.g. heuristic-gate-v1.")
    q: str | None = Field(None, max_length=200, description="Text in the candidate fact or the reason.")
    with_context: bool = Field(False, description="Include each decision's turn and context window.")


class DecisionRecordOut(Schema):
    """The seed's MemoryGateDecisionRecord, flat."""

    id: str
    turn_id: str
    session_id: str
    turn_number: int | None = None
    run_number: int
    decision: str
    reason: str
    candidate_fact: str | None
    confidence: float | None
    target_file: str | None
    llm_model: str
    llm_latency_ms: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    prompt_version: str
    created_at: dt.datetime


class DecisionOut(DecisionRecordOut):
    """A row of the decision list; ``turn`` and ``context`` only with ``with_context=true``."""

    turn: TurnOut | None = None
    context: list[ContextItemOut] | None = None

    @staticmethod
    def resolve_turn(decision: MemoryGateDecision) -> ConversationTurn | None:
        return decision.turn if getattr(decision, "include_context", False) else None

    @staticmethod
    def resolve_context(decision: MemoryGateDecision) -> list[ConversationContext] | None:
        if not getattr(decision, "include_context", False):
            return None
        return getattr(decision.turn, "window", None) or []


class DecisionDetailOut(DecisionRecordOut):
    raw_response: str | None


class DecisionWithContextOut(Schema):
    """The seed's MemoryGateDecisionWithContext; ``context`` only with ``with_context=true``."""

    decision: DecisionDetailOut
    turn: TurnOut
    context: list[ContextItemOut] | None = None


class GateStatsFilter(Schema):
    period: Literal["daily", "weekly", "session"] = "daily"
    days: int = Field(30, ge=1, le=3660, description="Days covered by daily and per-session figures.")
    weeks: int = Field(12, ge=1, le=520, description="Weeks covered by weekly figures.")
    limit: int = Field(50, ge=1, le=500, description="Sessions listed by the per-session figures.")


class GateStatsRowOut(Schema):
    date: dt.date | None = None
    week_start: dt.date | None = None
    session_id: str | None = None
    session_count: int | None = None
    total_decisions: int
    no_write_count: int
    update_memory_count: int
    update_user_count: int
    update_soul_count: int
    update_identity_count: int
    update_tools_count: int
    avg_latency_ms: int | None
    last_decision_at: dt.datetime | None = None


class DecisionLatencyOut(Schema):
    decision: str
    count: int
    avg_latency_ms: int | None


class GateStatsOut(Schema):
    period: str
    rows: list[GateStatsRowOut]
    by_decision: list[DecisionLatencyOut]
