"""Request and response shapes of the learning API (``guardian_app.api.learning``)."""

import datetime as dt
import re
from typing import Annotated, Any, Literal

from ninja import Field, ModelSchema, Schema
from pydantic import BeforeValidator, field_validator

from guardian_app.learning import DEFAULT_PROJECT
from guardian_app.models import LearningEvent, MemoryItem, Rule

_SKIN_TONES = re.compile("[\U0001f3fb-\U0001f3ff\ufe0f]")
_FEEDBACK_VALUES = {"up": "up", "down": "down", "👍": "up", "👎": "down"}


def _feedback_value(value: Any) -> Any:
    """``up``/``down`` in any case, or the thumbs emoji in any skin tone."""
    if isinstance(value, str):
        return _FEEDBACK_VALUES.get(_SKIN_TONES.sub("", value).strip().lower(), value)
    return value


def _no_control(value: str | None) -> str | None:
    if value is not None and any(ord(c) < 32 and c not in "\t\n\r" or ord(c) == 127 for c in value):
        raise ValueError("must not contain control characters")
    return value


class FeedbackIn(Schema):
    # The schema states what the validators below accept (no control characters; tab and newlines in a reason).
    user_id: str = Field(
        ...,
        min_length=1,
        max_length=255,
        description="Who gave the feedback.",
        json_schema_extra={
            "pattern": r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
        },
    )
    feedback: Annotated[Literal["up", "down"], BeforeValidator(_feedback_value)] = Field(
        ..., description="`up` or `down`; 👍 and 👎 are accepted too."
    )
    reason: str | None = Field(
        None,
        max_length=4000,
        description="Why; for `down` it is the rule to learn.",
        json_schema_extra={"pattern": r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"},
    )
    project_id: str = Field(DEFAULT_PROJECT, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    source: Literal["api_feedback", "discord_reaction"] = "api_feedback"

    _clean = field_validator("user_id", "reason")(_no_control)

    @field_validator("user_id")
    @classmethod
    def _user_id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class GuardrailsOut(Schema):
    accepted: bool = Field(description="The guard accepted it (in shadow mode: would have; nothing applied).")
    deduplicated: bool
    reason: str | None = Field(
        description="mem_accept, rule_accept, or why not: too_short, boilerplate, low_score, duplicate, "
        "project_cap, no_candidate, reason_too_short, unclassified, rule_conflict, duplicate_feedback, "
        "guardrails_disabled, guardrails_error."
    )
    shadow_mode: bool
    event_id: str | None = Field(None, description="The learning event that records the decision.")
    item_id: str | None = Field(None, description="The memory item or rule created.")


class FeedbackOut(Schema):
    ok: bool
    deduplicated: bool
    guardrails: GuardrailsOut


class MemoryItemOut(ModelSchema):
    class Meta:
        model = MemoryItem
        fields = [
            "id", "project_id", "content", "fingerprint", "quality_score", "score", "status", "origin", "source",
            "trace_id", "user_id", "last_hit_at", "hit_count", "expires_at", "created_at", "updated_at",
        ]  # fmt: skip


class RuleOut(ModelSchema):
    class Meta:
        model = Rule
        fields = [
            "id", "project_id", "rule_type", "content", "subject", "stance", "fingerprint", "priority", "confidence",
            "base_confidence", "status", "conflict_with", "source", "trace_id", "user_id", "last_hit_at",
            "hit_count", "created_at", "updated_at",
        ]  # fmt: skip


class LearningEventOut(ModelSchema):
    class Meta:
        model = LearningEvent
        fields = [
            "id", "project_id", "source", "trace_id", "user_id", "event_type", "reason", "ref_id", "shadow",
            "payload_json", "created_at",
        ]  # fmt: skip


class RuleFilter(Schema):
    status: Literal["active", "suppressed", "archived"] | None = None
    rule_type: Literal["safety", "style", "routing"] | None = None
    project_id: str | None = None


class MemoryItemFilter(Schema):
    status: Literal["active", "suppressed", "expired"] | None = None
    project_id: str | None = None


class EventFilter(Schema):
    event_type: str | None = None
    source: str | None = None
    trace_id: str | None = None
    project_id: str | None = None
    shadow: bool | None = None


Kind = Literal["rules", "memory-items"]


class HitOut(Schema):
    kind: str
    id: str
    status: str
    hit_count: int
    last_hit_at: dt.datetime | None


class StatusChangeIn(Schema):
    note: str = Field("", max_length=2000)


NO_NOTE = StatusChangeIn()


class StatusChangeOut(Schema):
    kind: str
    id: str
    status: str
    changed: bool


class MetricCounts(Schema):
    accepted: int
    rejected: int
    conflict: int
    expired: int
    rate_limited: int
    errors: int


class DailyMetrics(MetricCounts):
    day: dt.date


class MetricsOut(MetricCounts):
    window: str
    since: dt.datetime
    until: dt.datetime
    project_id: str | None
    hit_rate: float | None = Field(
        description="Share of active memory items and rules hit at least once in the window."
    )
    shadow: MetricCounts = Field(description="Decisions recorded in shadow mode (not applied).")
    active: dict[str, int]
    hits: dict[str, int]
    daily: list[DailyMetrics]
    shadow_mode: bool
    guardrails_enabled: bool


class DecayOut(Schema):
    memory_items_decayed: int
    rules_decayed: int
    memory_items_expired: int
    rules_archived: int
    memory_items_over_cap: int
    rules_over_cap: int
    requeued: int
    rate_limit_rows_purged: int
    shadow: bool
    enabled: bool
