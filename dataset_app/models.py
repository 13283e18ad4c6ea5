"""REQ-004: labelled dataset samples, their exports, and evaluation runs of the gate against them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import models
from django.db.models import Q
from django.utils import timezone

from dataset_app.exporters.registry import format_choices
from dataset_app.sample_types import GUARDIAN_SAMPLE_TYPES, SampleType
from reflection_site import privacy
from reflection_site.ids import new_ulid


class AnnotationStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    NEEDS_REVIEW = "needs_review", "needs review"
    AUTO_APPROVED = "auto_approved", "auto-approved"


# What an export with only_approved takes, and what retention never deletes.
APPROVED_STATUSES: tuple[str, ...] = (AnnotationStatus.APPROVED, AnnotationStatus.AUTO_APPROVED)


class DatasetSampleQuerySet(models.QuerySet["DatasetSample"]):
    def review_queue(self) -> DatasetSampleQuerySet:
        """Samples needing review, best quality first (the pending_review_samples view's order)."""
        return self.filter(annotation_status=AnnotationStatus.NEEDS_REVIEW).order_by(
            models.F("quality_score").desc(nulls_last=True), "id"
        )

    def approved(self) -> DatasetSampleQuerySet:
        """Approved by a person or by the auto-approve criteria."""
        return self.filter(annotation_status__in=APPROVED_STATUSES)


class JSONNumber(models.Func):
    """The number under ``key`` of the JSON object in ``field``; NULL when the key is missing or its value is not
    a number (null, text, true), alike on SQLite and PostgreSQL, and never an error (a cast of text would be)."""

    output_field = models.FloatField()

    def __init__(self, field: str, key: str) -> None:
        super().__init__(models.F(field))
        self.key = key

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, tuple[Any, ...]]:
        column, params = compiler.compile(self.source_expressions[0])
        path = f'$."{self.key}"'
        sql = f"CASE WHEN JSON_TYPE({column}, %s) IN ('integer', 'real') THEN JSON_EXTRACT({column}, %s) END"
        return sql, (*params, path, *params, path)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, tuple[Any, ...]]:
        column, params = compiler.compile(self.source_expressions[0])
        sql = f"CASE WHEN JSONB_TYPEOF({column} -> %s) = 'number' THEN ({column} ->> %s)::double precision END"
        return sql, (*params, self.key, *params, self.key)


def _factor_column(name: str) -> models.GeneratedField:
    """A quality factor read from ``quality_factors`` by the database on every write (empty without it)."""
    return models.GeneratedField(
        expression=JSONNumber("quality_factors", name), output_field=models.FloatField(), db_persist=True
    )


class DatasetSample(models.Model):
    SampleType = SampleType
    Status = AnnotationStatus

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    sample_type = models.CharField(max_length=32, choices=SampleType.choices)

    turn = models.ForeignKey(
        "sessions_app.ConversationTurn", null=True, blank=True, on_delete=models.CASCADE, related_name="dataset_samples"
    )
    decision = models.ForeignKey(
        "sessions_app.MemoryGateDecision",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="dataset_samples",
    )
    audit = models.ForeignKey(
        "guardian_app.WriteGuardianAudit",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="dataset_samples",
    )
    session = models.ForeignKey(  # Served by the seed's idx_session (dataset_samples_session) below.
        "sessions_app.ConversationSession", on_delete=models.CASCADE, related_name="dataset_samples", db_index=False
    )
    source_key = models.CharField(
        max_length=80,
        editable=False,
        help_text="<sample_type>:<id of the decision, audit or turn it was collected from>; unique, so a source "
        "is collected once.",
    )

    content = models.JSONField(help_text="The sample as the seed's interfaces shape it; may hold PII.")
    label = models.CharField(
        max_length=16, blank=True, default="", help_text="The correct output: a gate decision or written/refused."
    )

    quality_score = models.FloatField(null=True, blank=True)
    quality_factors = models.JSONField(null=True, blank=True)
    # The three factors of quality_factors as columns the database keeps, for the covering index that the
    # quality distribution reads (issue 9: reading every sample's JSON, in Python or in SQL, took 0.1-0.7 s at
    # 200k samples; the index-only pass 45-120 ms).
    conversation_clarity = _factor_column("conversationClarity")
    decision_confidence = _factor_column("decisionConfidence")
    fact_verifiability = _factor_column("factVerifiability")

    annotation_status = models.CharField(
        max_length=16, choices=AnnotationStatus.choices, default=AnnotationStatus.PENDING
    )
    annotated_by = models.CharField(max_length=255, null=True, blank=True)
    annotated_at = models.DateTimeField(null=True, blank=True)
    annotation_notes = models.TextField(null=True, blank=True)

    privacy_checked = models.BooleanField(default=False)
    contains_pii = models.BooleanField(default=False)
    pii_redacted_content = models.JSONField(
        null=True,
        blank=True,
        help_text="The content with PII and secrets replaced by placeholders; empty when there was nothing to "
        "redact, or when redaction could not be verified (such a sample is left out of redacted exports).",
    )

    collection_strategy = models.CharField(max_length=64, blank=True, default="")
    fingerprint = models.CharField(
        max_length=64, blank=True, default="", help_text="Same type, label and fact words: the same pattern."
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = DatasetSampleQuerySet.as_manager()

    class Meta:
        db_table = "dataset_samples"
        indexes = [
            models.Index(fields=["sample_type", "annotation_status"], name="dataset_samples_type_status"),
            models.Index(fields=["quality_score"], name="dataset_samples_quality"),
            # Covers queries.quality_distribution: one index-only pass, no sample's JSON read.
            models.Index(
                fields=[
                    "sample_type",
                    "quality_score",
                    "conversation_clarity",
                    "decision_confidence",
                    "fact_verifiability",
                ],
                name="dataset_samples_figures",
            ),
            models.Index(fields=["session"], name="dataset_samples_session"),
            models.Index(fields=["created_at"], name="dataset_samples_created"),
            # Serves dataset_app.collect: matchesApprovedPattern looks up approved samples by fingerprint.
            models.Index(fields=["fingerprint", "annotation_status"], name="dataset_samples_fingerprint"),
            # Samples of one status: the admin's "review (N)" count read the whole (type, status) index for it
            # (285 ms at 1M on SQLite with its pages not in the OS cache); a partial index on the queue alone was
            # not chosen by SQLite's planner for the count.
            models.Index(fields=["annotation_status", "quality_score"], name="dataset_samples_status_quality"),
            # GET /dataset/samples?status= (and needs_review) newest first, by cursor: without it SQLite's planner
            # took the index above for the status and sorted every sample of that status (229 ms at 1M).
            models.Index(fields=["annotation_status", "-created_at", "-id"], name="dataset_samples_status_created"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["source_key"], name="dataset_samples_source_key_unique"),
            models.CheckConstraint(condition=Q(sample_type__in=SampleType.values), name="dataset_samples_type_valid"),
            models.CheckConstraint(
                condition=Q(annotation_status__in=AnnotationStatus.values), name="dataset_samples_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(quality_score__isnull=True) | Q(quality_score__gte=0, quality_score__lte=1),
                name="dataset_samples_quality_range",
            ),
        ]
        permissions = [
            ("annotate_datasetsample", "Can approve or reject dataset samples"),
            ("view_raw_datasetsample", "Can see the unredacted text of dataset samples"),
        ]

    def __str__(self) -> str:
        return f"{self.sample_type} {self.id}"

    @property
    def is_approved(self) -> bool:
        return self.annotation_status in APPROVED_STATUSES

    def visible_content(self) -> dict | None:
        """What a person may see of the sample (without the raw permission), and what leaves the database
        without ``include_pii``: the redacted content where PII was found, the content where none was, the
        content redacted now if it was collected with privacy filtering off, and None (withheld) where the
        redaction left PII behind. The review page, the API, the CLI and evaluation show this; the exporter and
        the admin's list select the same in SQL (``visible_content_sql``) and redact an unchecked sample after."""
        if not self.privacy_checked:
            return privacy.redact_data(self.content)  # type: ignore[return-value]
        if self.contains_pii:
            return self.pii_redacted_content
        return self.content

    def visible_notes(self) -> str | None:
        """The annotation notes as a person without the raw permission sees them: redacted (a reviewer may quote
        the turn, and collection writes the doubts it found into them)."""
        return privacy.redact(self.annotation_notes) if self.annotation_notes else self.annotation_notes

    @property
    def stage(self) -> str:
        return "guardian" if self.sample_type in GUARDIAN_SAMPLE_TYPES else "gate"


def visible_content_sql(read: Callable[[str], Any]) -> models.Case:
    """``DatasetSample.visible_content`` in SQL, for reads that never load a sample's JSON (the exporter, the
    admin's list): ``read("pii_redacted_content")`` where PII was found (NULL: withheld), ``read("content")``
    where none was. A sample collected with privacy filtering off (``privacy_checked`` false) is still to be
    redacted by the reader."""
    return models.Case(models.When(contains_pii=True, then=read("pii_redacted_content")), default=read("content"))


class PendingReviewSample(models.Model):
    """The ``pending_review_samples`` SQL view (created by migration 0002): read-only, no foreign keys.

    Foreign keys are plain columns here so that deleting a session never tries to delete from a view.
    """

    id = models.CharField(primary_key=True, max_length=26)
    sample_type = models.CharField(max_length=32)
    session_id = models.CharField(max_length=255)
    turn_id = models.CharField(max_length=26, null=True)
    decision_id = models.CharField(max_length=26, null=True)
    audit_id = models.CharField(max_length=26, null=True)
    quality_score = models.FloatField(null=True)
    annotation_status = models.CharField(max_length=16)
    contains_pii = models.BooleanField()
    created_at = models.DateTimeField()
    user_message_content = models.TextField(null=True)
    agent_message_content = models.TextField(null=True)
    memory_gate_decision = models.CharField(max_length=16, null=True)
    write_guardian_status = models.CharField(max_length=16, null=True)

    class Meta:
        managed = False
        db_table = "pending_review_samples"
        verbose_name = "pending review sample"

    def __str__(self) -> str:
        return f"{self.sample_type} {self.id}"


# One member per registered export format (``dataset_app.exporters.registry``): ALPACA = "alpaca", "Alpaca" …
ExportFormat = models.TextChoices(
    "ExportFormat", [(name.upper(), (name, label)) for name, label in format_choices()], module=__name__
)


class JobStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class DatasetExport(models.Model):
    Format = ExportFormat
    Status = JobStatus

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    export_name = models.CharField(max_length=100)
    export_format = models.CharField(max_length=16, choices=ExportFormat.choices)

    sample_types = models.JSONField(default=list, help_text="The sample types exported; empty means all.")
    filters = models.JSONField(
        default=dict,
        blank=True,
        help_text="only_approved, min_quality, include_pii, train_split, session, since, until",
    )

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done.")
    error = models.TextField(null=True, blank=True)

    total_samples = models.IntegerField(null=True, blank=True, help_text="Samples written, both splits.")
    approved_samples = models.IntegerField(null=True, blank=True)
    rejected_samples = models.IntegerField(null=True, blank=True, help_text="Matching samples left out as rejected.")
    skipped_pii_samples = models.IntegerField(null=True, blank=True, help_text="Left out: PII not redactable.")
    train_samples = models.IntegerField(null=True, blank=True)
    validation_samples = models.IntegerField(null=True, blank=True)
    avg_quality_score = models.FloatField(null=True, blank=True)

    file_path = models.TextField(help_text="The train file; the validation file sits beside it.")
    file_size_bytes = models.BigIntegerField(null=True, blank=True, help_text="Both files together.")
    checksum = models.CharField(max_length=64, null=True, blank=True, help_text="SHA-256 of the train file.")
    files = models.JSONField(default=list, blank=True, help_text="[{split, path, samples, size_bytes, sha256}]")

    exported_by = models.CharField(max_length=255, null=True, blank=True)
    exported_at = models.DateTimeField(default=timezone.now, help_text="When the export was requested.")
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "dataset_exports"
        indexes = [
            models.Index(fields=["exported_at"], name="dataset_exports_exported_at"),
            # Serves dataset_app.exports.sweep_stale_exports: only unfinished rows are in it.
            models.Index(
                fields=["heartbeat_at"],
                condition=Q(status__in=["pending", "running"]),
                name="dataset_exports_unfinished",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(export_format__in=ExportFormat.values), name="dataset_exports_format_valid"
            ),
            models.CheckConstraint(condition=Q(status__in=JobStatus.values), name="dataset_exports_status_valid"),
            models.CheckConstraint(condition=~Q(export_name=""), name="dataset_exports_name_not_empty"),
        ]
        permissions = [("download_datasetexport", "Can download dataset export files")]

    def __str__(self) -> str:
        return f"{self.export_name} ({self.export_format})"

    @property
    def is_finished(self) -> bool:
        return self.status in (JobStatus.COMPLETED, JobStatus.FAILED)

    def file_for(self, split: str) -> dict | None:
        return next((f for f in self.files if f.get("split") == split), None)


class EvaluationRun(models.Model):
    class Stage(models.TextChoices):
        GATE = "gate", "memory gate"
        GUARDIAN = "guardian", "write guardian"

    class Split(models.TextChoices):
        TRAIN = "train"
        VALIDATION = "validation"
        ALL = "all"

    Status = JobStatus

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.GATE)
    requested_model = models.CharField(
        max_length=255, blank=True, default="", help_text="--model; empty: the current gate."
    )
    llm_model = models.CharField(max_length=255, blank=True, default="", help_text="The model that answered.")
    prompt_version = models.CharField(max_length=32, blank=True, default="")
    split = models.CharField(max_length=16, choices=Split.choices, default=Split.VALIDATION)
    train_split = models.FloatField(default=0.8)

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.RUNNING)
    error = models.TextField(null=True, blank=True)
    sample_count = models.IntegerField(default=0)
    correct_count = models.IntegerField(default=0)
    error_count = models.IntegerField(default=0, help_text="Samples the model failed to answer (counted as wrong).")
    accuracy = models.FloatField(null=True, blank=True)
    metrics = models.JSONField(default=dict, blank=True, help_text="{label: {precision, recall, f1, support}}")
    confusion = models.JSONField(
        default=dict, blank=True, help_text="{labels: [...], matrix: [[expected x predicted]]}"
    )
    duration_ms = models.IntegerField(null=True, blank=True)

    created_by = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "dataset_evaluation_runs"
        indexes = [models.Index(fields=["stage", "created_at"], name="dataset_eval_stage_time")]
        constraints = [
            models.CheckConstraint(condition=Q(stage__in=["gate", "guardian"]), name="dataset_eval_stage_valid"),
            models.CheckConstraint(
                condition=Q(split__in=["train", "validation", "all"]), name="dataset_eval_split_valid"
            ),
            models.CheckConstraint(condition=Q(status__in=JobStatus.values), name="dataset_eval_status_valid"),
        ]
        permissions = [("run_evaluationrun", "Can run an evaluation of the gate")]

    def __str__(self) -> str:
        return f"{self.stage} {self.llm_model or self.requested_model or 'current'} @ {self.created_at:%Y-%m-%d %H:%M}"

    @property
    def model_label(self) -> str:
        return self.llm_model or self.requested_model or "current gate"
