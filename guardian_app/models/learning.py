"""Seed 002: learning events, memory items, rules, feedback idempotency and rate limits."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from reflection_site.ids import new_ulid


class LearningSource(models.TextChoices):
    """Where a learning decision came from (the seed's ``source``)."""

    API_FEEDBACK = "api_feedback", "feedback API"
    DISCORD_REACTION = "discord_reaction", "Discord reaction"
    SYSTEM = "system", "system (decay)"
    OPERATOR = "operator", "operator (admin or API)"


class LearningEventType(models.TextChoices):
    MEM_ACCEPT = "mem_accept", "memory accepted"
    MEM_REJECT = "mem_reject", "memory rejected"
    MEM_SUPPRESS = "mem_suppress", "memory suppressed"
    MEM_EXPIRE = "mem_expire", "memory expired"
    MEM_REACTIVATE = "mem_reactivate", "memory reactivated"
    RULE_ACCEPT = "rule_accept", "rule accepted"
    RULE_REJECT = "rule_reject", "rule rejected"
    RULE_CONFLICT = "rule_conflict", "rule refused: conflict"
    RULE_SUPPRESS = "rule_suppress", "rule suppressed"
    RULE_ARCHIVE = "rule_archive", "rule archived"
    RULE_REACTIVATE = "rule_reactivate", "rule reactivated"
    RATE_LIMITED = "rate_limited", "rate limited"
    GUARDRAIL_ERROR = "guardrail_error", "guardrail error (failed open)"
    DECAY_RUN = "decay_run", "decay run"


class LearningEvent(models.Model):
    """One decision of the learning guardrails, with its reason and source (the seed's audit log)."""

    EventType = LearningEventType

    # The seed's column is event_id; the field keeps Django's usual name.
    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False, db_column="event_id")
    project_id = models.CharField(max_length=64, default="default")
    source = models.CharField(max_length=32, choices=LearningSource.choices, default=LearningSource.API_FEEDBACK)
    trace_id = models.CharField(
        max_length=64, null=True, blank=True, help_text="The conversation turn the feedback was on."
    )
    user_id = models.CharField(max_length=255, blank=True, default="")
    event_type = models.CharField(max_length=32, choices=EventType.choices)
    reason = models.CharField(max_length=64, blank=True, default="", help_text="The decision's reason code.")
    ref_id = models.CharField(max_length=26, blank=True, default="", help_text="The memory item or rule concerned.")
    shadow = models.BooleanField(default=False, help_text="Recorded in shadow mode: decided, not applied.")
    payload_json = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "learning_events"
        indexes = [
            # Serves guardian_app.learning.guardrails.learning_metrics: counts per type over a window.
            models.Index(fields=["event_type", "created_at"], name="learning_events_type_time"),
            models.Index(fields=["project_id", "-created_at"], name="learning_events_project_time"),
            models.Index(fields=["trace_id"], name="learning_events_trace"),
            models.Index(fields=["-created_at", "-id"], name="learning_events_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(event_type__in=LearningEventType.values),
                name="learning_events_event_type_valid",
            ),
            models.CheckConstraint(
                condition=Q(source__in=["api_feedback", "discord_reaction", "system", "operator"]),
                name="learning_events_source_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.reason} ({self.id})"


class MemoryItem(models.Model):
    """A fact learned from positive feedback; accepted ones are handed to the write guardian for MEMORY.md."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        SUPPRESSED = "suppressed"
        EXPIRED = "expired"

    class Origin(models.TextChoices):
        GATE = "gate", "the gate's candidate fact"
        DISTILLED = "distilled", "distilled from the turn"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    project_id = models.CharField(max_length=64, default="default")
    content = models.TextField()
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the normalised text.")
    quality_score = models.FloatField(default=0, help_text="The memory guard's score when accepted.")
    score = models.FloatField(default=0, help_text="The quality score after decay and activity boost.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.GATE)
    source = models.CharField(max_length=32, choices=LearningSource.choices, default=LearningSource.API_FEEDBACK)
    trace_id = models.CharField(max_length=64, null=True, blank=True)
    user_id = models.CharField(max_length=255, blank=True, default="")
    last_hit_at = models.DateTimeField(null=True, blank=True)
    hit_count = models.IntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Expires unless hit before then.")
    decayed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "mem_items"
        verbose_name = "learned memory item"
        indexes = [
            # Serves GET /learning/memory-items and the per-project cap.
            models.Index(fields=["project_id", "status", "-created_at"], name="mem_items_project_status_time"),
            # Serves the admin changelist's order, newest first (issue 9: a sort of every item before).
            models.Index(fields=["created_at"], name="mem_items_created"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["project_id", "fingerprint"], name="mem_items_project_fingerprint_unique"),
            models.CheckConstraint(
                condition=Q(status__in=["active", "suppressed", "expired"]), name="mem_items_status_valid"
            ),
            models.CheckConstraint(condition=Q(hit_count__gte=0), name="mem_items_hit_count_positive"),
        ]

    def __str__(self) -> str:
        text = self.content if len(self.content) <= 60 else self.content[:59] + "…"
        return f"{self.status}: {text}"


class Rule(models.Model):
    """A behaviour rule learned from negative feedback, fetched by the agent (highest priority first)."""

    class RuleType(models.TextChoices):
        SAFETY = "safety"
        STYLE = "style"
        ROUTING = "routing"

    class Status(models.TextChoices):
        ACTIVE = "active"
        SUPPRESSED = "suppressed"
        ARCHIVED = "archived"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    project_id = models.CharField(max_length=64, default="default")
    rule_type = models.CharField(max_length=16, choices=RuleType.choices)
    content = models.TextField(help_text="The instruction, from the feedback's reason.")
    subject = models.CharField(max_length=255, blank=True, default="", help_text="What it is about, for conflicts.")
    stance = models.SmallIntegerField(default=1, help_text="+1 do / more, -1 don't / less, on the subject.")
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the type and the normalised text.")
    priority = models.IntegerField(default=50)
    confidence = models.FloatField(default=0.5, help_text="After decay and activity boost.")
    base_confidence = models.FloatField(default=0.5, help_text="When accepted.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    conflict_with = models.CharField(
        max_length=26, null=True, blank=True, help_text="The rule it superseded or lost to."
    )
    source = models.CharField(max_length=32, choices=LearningSource.choices, default=LearningSource.API_FEEDBACK)
    trace_id = models.CharField(max_length=64, null=True, blank=True)
    user_id = models.CharField(max_length=255, blank=True, default="")
    last_hit_at = models.DateTimeField(null=True, blank=True)
    hit_count = models.IntegerField(default=0)
    decayed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "rules"
        verbose_name = "learned rule"
        indexes = [
            # Serves GET /learning/rules?status=active (highest priority first) and conflict lookups.
            models.Index(
                fields=["project_id", "status", "-priority", "-updated_at"], name="rules_project_status_priority"
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["project_id", "fingerprint"], name="rules_project_fingerprint_unique"),
            models.CheckConstraint(
                condition=Q(rule_type__in=["safety", "style", "routing"]), name="rules_rule_type_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["active", "suppressed", "archived"]), name="rules_status_valid"
            ),
            models.CheckConstraint(condition=Q(priority__gte=0, priority__lte=100), name="rules_priority_range"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="rules_confidence_range"),
            models.CheckConstraint(condition=Q(hit_count__gte=0), name="rules_hit_count_positive"),
        ]

    def __str__(self) -> str:
        text = self.content if len(self.content) <= 60 else self.content[:59] + "…"
        return f"{self.rule_type}/{self.priority}: {text}"


class FeedbackIdempotency(models.Model):
    """One row per accepted feedback key ``sha256(trace_id + user_id + feedback)``; a repeat hits the key."""

    idem_key = models.CharField(primary_key=True, max_length=64)
    trace_id = models.CharField(max_length=64)
    user_id = models.CharField(max_length=255)
    feedback = models.CharField(max_length=8)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "feedback_idempotency"
        verbose_name_plural = "feedback idempotency keys"

    def __str__(self) -> str:
        return self.idem_key


class LearningRateLimit(models.Model):
    """Per-user feedback counters when there is no Redis: one row per ``learning:feedback:{user}:{minute}``."""

    bucket_key = models.CharField(primary_key=True, max_length=320)
    count = models.IntegerField(default=0)
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "learning_rate_limits"
        # Serves guardian_app.learning.ratelimit.purge_expired.
        indexes = [models.Index(fields=["expires_at"], name="learning_rate_limits_expiry")]

    def __str__(self) -> str:
        return f"{self.bucket_key}={self.count}"
