"""Seeds 001 and 004: reflect runs, opinions and their evidence, skill drafts, report deliveries."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from reflection_site.ids import new_ulid


# Reflection keeps bank/ pages (entity pages, opinions) true as evidence accumulates, projects the index into
# daily views, reports what changed, resumes its jobs after a crash, and proposes skill drafts. Its page
# writes are ordinary write-guardian audits (source "reflect", source_ref "<run id>:<page>").
class ReflectRun(models.Model):
    """One reflect job over the facts of a period: what it read, which pages it wrote, which opinions moved."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    since = models.DateTimeField(help_text="Facts from this time on (daily logs from this day on).")
    until = models.DateTimeField(help_text="Facts before this time; also the date the pages say they were updated.")
    dry_run = models.BooleanField(default=False, help_text="Computed what would change; wrote nothing.")
    requested_by = models.CharField(max_length=255, default="system")
    stage = models.CharField(max_length=32, blank=True, default="", help_text="collect, opinions, pages, skills, done")
    facts_count = models.IntegerField(default=0)
    entities_count = models.IntegerField(default=0)
    pages_written = models.IntegerField(default=0)
    pages_unchanged = models.IntegerField(default=0)
    pages_refused = models.IntegerField(default=0)
    opinions_created = models.IntegerField(default=0)
    opinions_updated = models.IntegerField(default=0)
    memory_proposals = models.IntegerField(default=0)
    skill_drafts = models.IntegerField(default=0)
    llm_model = models.CharField(max_length=255, blank=True, default="", help_text="Empty: the offline summariser.")
    stats = models.JSONField(default=dict, blank=True, help_text="Per page outcome, excluded facts, opinion moves.")
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "reflect_runs"
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="reflect_runs_created"),
            # Serves guardian_app.reflect.reflect.sweep_stale_runs and the "since the last run" of the daily job.
            models.Index(fields=["status", "created_at"], name="reflect_runs_status_time"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed"]), name="reflect_runs_status_valid"
            ),
            models.CheckConstraint(condition=Q(since__lte=models.F("until")), name="reflect_runs_since_before_until"),
        ]
        permissions = [("run_reflectrun", "Can start a reflect run")]

    def __str__(self) -> str:
        return f"reflect {self.id} ({self.status})"


class Opinion(models.Model):
    """Seed 001's opinion: a statement, its confidence in [0, 1], last updated, and its evidence."""

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    entity = models.CharField(max_length=255, blank=True, default="", help_text="Empty: about no entity in particular.")
    entity_key = models.CharField(max_length=255, blank=True, default="", help_text="The entity, compared lower-case.")
    statement = models.TextField()
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the normalised statement.")
    confidence = models.FloatField()
    supporting_count = models.IntegerField(default=0)
    contradicting_count = models.IntegerField(default=0)
    contradiction_streak = models.IntegerField(
        default=0, help_text="Strong contradictions since the last support: a large drop needs several in a row."
    )
    source = models.CharField(max_length=512, blank=True, default="", help_text="Where it was first stated.")
    created_by_run = models.ForeignKey(
        ReflectRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="opinions_created_set"
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_updated = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "opinions"
        indexes = [
            # Serves GET /opinions?entity=… (newest first) and reflect's candidate lookup per entity.
            models.Index(fields=["entity_key", "-last_updated", "-id"], name="opinions_entity_time"),
            models.Index(fields=["-last_updated", "-id"], name="opinions_updated"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["entity_key", "fingerprint"], name="opinions_entity_fingerprint_unique"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="opinions_confidence_range"),
        ]

    def __str__(self) -> str:
        about = f"@{self.entity}: " if self.entity else ""
        return f"{about}{self.statement[:60]} (c={self.confidence:.2f})"


class OpinionEvidence(models.Model):
    """A fact that supported or contradicted an opinion, and how it moved the confidence (once per fact)."""

    class Stance(models.TextChoices):
        SUPPORTS = "supports"
        CONTRADICTS = "contradicts"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    opinion = models.ForeignKey(  # Served by (opinion, fact_date) and (opinion, fact_id) below.
        Opinion, on_delete=models.CASCADE, related_name="evidence", db_index=False
    )
    fact_id = models.CharField(max_length=64, help_text="Stable id of the fact: hash of its file and text.")
    stance = models.CharField(max_length=16, choices=Stance.choices)
    strength = models.FloatField()
    confidence_before = models.FloatField()
    confidence_after = models.FloatField()
    source = models.CharField(max_length=512, help_text="memory/2025-11-27.md#L12")
    content = models.TextField()
    fact_kind = models.CharField(max_length=16, null=True, blank=True)
    fact_date = models.DateTimeField()
    run = models.ForeignKey(ReflectRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="evidence")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "opinion_evidence"
        verbose_name_plural = "opinion evidence"
        indexes = [models.Index(fields=["opinion", "fact_date"], name="opinion_evidence_opinion_date")]
        constraints = [
            # A resumed or repeated reflect finds the evidence already counted.
            models.UniqueConstraint(fields=["opinion", "fact_id"], name="opinion_evidence_fact_unique"),
            models.CheckConstraint(
                condition=Q(stance__in=["supports", "contradicts"]), name="opinion_evidence_stance_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.stance} {self.opinion_id}: {self.source}"


class SkillDraft(models.Model):
    """Seed 004 P3-001: a SKILL.md proposed from a pattern the agent keeps recalling; a person approves it."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    name = models.CharField(max_length=64, help_text="Folder name under skills/: lower-case letters, digits, hyphens.")
    description = models.TextField()
    triggers = models.JSONField(default=list, blank=True)
    steps = models.JSONField(default=list, blank=True)
    confidence = models.FloatField()
    source_path = models.CharField(max_length=512)
    source_start_line = models.PositiveIntegerField()
    source_end_line = models.PositiveIntegerField()
    source_hash = models.CharField(max_length=64, help_text="Hash of the pattern's chunk: drafted once.")
    source_text = models.TextField()
    hits = models.PositiveIntegerField(default=0, help_text="Times the pattern had been recalled when drafted.")
    content = models.TextField(help_text="The SKILL.md draft.")
    llm_model = models.CharField(max_length=255, blank=True, default="", help_text="Empty: drafted offline.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reviewed_by = models.CharField(max_length=255, blank=True, default="")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_reason = models.TextField(blank=True, default="", help_text="Why it was rejected (or approved).")
    written_path = models.CharField(max_length=512, blank=True, default="")
    run = models.ForeignKey(
        ReflectRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="skill_drafts_set"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "skill_drafts"
        indexes = [models.Index(fields=["status", "-created_at"], name="skill_drafts_status_time")]
        constraints = [
            models.UniqueConstraint(fields=["source_hash"], name="skill_drafts_source_unique"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "approved", "rejected"]), name="skill_drafts_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(name__regex=r"^[a-z0-9][a-z0-9-]{0,63}$"), name="skill_drafts_name_slug"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1), name="skill_drafts_confidence_range"
            ),
        ]
        permissions = [("review_skilldraft", "Can approve or reject a skill draft")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class ReportDelivery(models.Model):
    """A change report posted to REPORT_WEBHOOK_URL: once per day, retried until it is delivered or given up."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    kind = models.CharField(max_length=16, default="daily")
    day = models.DateField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.IntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    target = models.CharField(
        max_length=255, blank=True, default="", help_text="Scheme and host only: never the token."
    )
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "report_deliveries"
        verbose_name_plural = "report deliveries"
        constraints = [
            models.UniqueConstraint(fields=["kind", "day"], name="report_deliveries_kind_day_unique"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "delivered", "failed"]), name="report_deliveries_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} report {self.day} ({self.status})"
