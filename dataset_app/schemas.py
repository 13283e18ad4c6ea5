"""Request and response shapes of the dataset API."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from ninja import Field, Schema

from dataset_app.exporters.registry import format_names
from dataset_app.models import DatasetExport, DatasetSample, EvaluationRun
from reflection_site.api import NOT_BLANK
from sessions_app.schemas import Timestamp

SampleTypeName = Literal[
    "all",
    "positive",
    "negative",
    "guardian",
    "annotated",
    "memory_gate_positive",
    "memory_gate_negative",
    "write_guardian_decision",
    "annotated_turn",
]
# Every registered export format (dataset_app.exporters.registry), in the model's order.
ExportFormatName = Literal[format_names()]  # type: ignore[valid-type]


class CollectIn(Schema):
    since: Timestamp | None = Field(None, description="Collect sources created at or after (ISO 8601 or epoch ms).")
    until: Timestamp | None = Field(None, description="… and before this time.")
    session: str | None = Field(None, max_length=255)
    type: SampleTypeName = "all"
    auto_approve: bool = False
    dry_run: bool = False


class CollectOut(Schema):
    dry_run: bool
    considered: int
    created: int
    by_type: dict[str, int]
    by_status: dict[str, int]
    skipped: dict[str, int]
    already_collected: int
    superseded: int
    amended: int


class SampleFilter(Schema):
    status: Literal["pending", "approved", "rejected", "needs_review", "auto_approved"] | None = None
    type: SampleTypeName | None = None
    quality_above: float | None = Field(None, ge=0, le=1)
    needs_review: bool = False
    session: str | None = None


class SampleOut(Schema):
    id: str
    sample_type: str
    turn_id: str | None
    decision_id: str | None
    audit_id: str | None
    session_id: str
    label: str
    content: dict[str, Any] | None = Field(description="Redacted; null if its PII could not be redacted.")
    quality_score: float | None
    quality_factors: dict[str, float] | None
    annotation_status: str
    annotated_by: str | None
    annotated_at: dt.datetime | None
    annotation_notes: str | None
    privacy_checked: bool
    contains_pii: bool
    collection_strategy: str
    created_at: dt.datetime

    @staticmethod
    def resolve_content(sample: DatasetSample) -> dict[str, Any] | None:
        return sample.visible_content()

    @staticmethod
    def resolve_annotation_notes(sample: DatasetSample) -> str | None:
        return sample.visible_notes()


class AnnotateIn(Schema):
    annotated_by: str = Field(..., min_length=1, max_length=255, pattern=NOT_BLANK, description="Who; not only spaces.")
    notes: str | None = Field(None, max_length=10_000)


class CountRow(Schema):
    key: str
    count: int


class StatsOut(Schema):
    by: str
    total: int
    rows: list[CountRow]


class QualityOut(Schema):
    count: int
    unscored: int
    mean: float | None
    median: float | None
    min: float | None
    max: float | None
    below_min_quality: int
    min_quality: float
    buckets: list[dict[str, int | float]] = Field(description='[{"from", "to", "count"}], ten buckets of 0.1')
    factors: dict[str, float | None]
    by_type: dict[str, float]


class ExportIn(Schema):
    format: ExportFormatName
    name: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
        description="File name stem: letters, digits, '.', '_', '-'.",
    )
    sample_types: list[
        Literal["memory_gate_positive", "memory_gate_negative", "write_guardian_decision", "annotated_turn"]
    ] = Field(default_factory=list, description="Empty: all types.")
    only_approved: bool = False
    min_quality: float | None = Field(None, ge=0, le=1)
    include_pii: bool = False
    train_split: float | None = Field(None, gt=0, le=1)
    session: str | None = None


class ExportAccepted(Schema):
    id: str
    status: str


class ExportFileOut(Schema):
    split: str
    path: str
    samples: int
    size_bytes: int
    sha256: str


class ExportOut(Schema):
    id: str
    export_name: str
    export_format: str
    sample_types: list[str]
    filters: dict[str, Any]
    status: str
    progress: int
    error: str | None
    total_samples: int | None
    approved_samples: int | None
    rejected_samples: int | None
    skipped_pii_samples: int | None
    train_samples: int | None
    validation_samples: int | None
    avg_quality_score: float | None
    file_path: str
    file_size_bytes: int | None
    checksum: str | None
    files: list[ExportFileOut]
    exported_by: str | None
    exported_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None

    @staticmethod
    def resolve_filters(export: DatasetExport) -> dict[str, Any]:
        filters = dict(export.filters or {})
        if "sample_ids" in filters:
            filters["sample_ids"] = len(filters["sample_ids"])  # A count, not thousands of ids.
        return filters


class EvaluationIn(Schema):
    stage: Literal["gate", "guardian"] = "gate"
    model: str | None = Field(None, max_length=255, description="An OpenAI-compatible model; empty: the current gate.")
    split: Literal["train", "validation", "all"] = "validation"
    offline: bool | None = Field(None, description="true: the offline heuristic; false: the LLM; null: as configured.")


class EvaluationOut(Schema):
    id: str
    stage: str
    requested_model: str
    llm_model: str
    prompt_version: str
    split: str
    train_split: float
    status: str
    error: str | None
    sample_count: int
    correct_count: int
    error_count: int
    accuracy: float | None
    metrics: dict[str, Any]
    confusion: dict[str, Any]
    duration_ms: int | None
    created_by: str
    created_at: dt.datetime
    finished_at: dt.datetime | None

    @staticmethod
    def resolve_requested_model(run: EvaluationRun) -> str:
        return run.requested_model
