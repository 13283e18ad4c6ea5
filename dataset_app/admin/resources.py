"""django-import-export: a review batch of samples out to CSV/JSON/XLSX and back."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from import_export import fields, resources

from dataset_app.models import AnnotationStatus, DatasetSample
from dataset_app.review import present


class DatasetSampleResource(resources.ModelResource):
    """A review batch out to CSV/JSON/XLSX and back. Export shows the redacted conversation; import
    changes only ``annotation_status``, ``annotation_notes`` and ``annotated_by`` of existing samples."""

    IMPORTED = ("id", "annotation_status", "annotation_notes", "annotated_by")

    text = fields.Field(column_name="text", readonly=True)

    class Meta:
        model = DatasetSample
        fields = (
            "id",
            "sample_type",
            "label",
            "quality_score",
            "annotation_status",
            "annotation_notes",
            "annotated_by",
            "annotated_at",
            "contains_pii",
            "collection_strategy",
            "session",
            "created_at",
            "text",
        )
        export_order = fields
        import_id_fields = ("id",)
        skip_unchanged = True
        report_skipped = True
        clean_model_instances = True

    def __init__(self, *args: Any, annotator: str = "import", **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.annotator = annotator

    def dehydrate_text(self, sample: DatasetSample) -> str:
        """The sample as plain redacted text, one line per message or field."""
        view = present(sample)
        lines = [f"{'User' if b.role == 'user' else 'Agent'}: {b.text}" for b in view.bubbles]
        lines += [f"{label}: {value}" for label, value in view.rows]
        return "\n".join(lines)

    def get_import_fields(self) -> list[fields.Field]:
        return [f for f in super().get_import_fields() if f.column_name in self.IMPORTED]

    def init_instance(self, row: Any = None) -> DatasetSample:
        raise ValueError(f"No sample {row.get('id') if row else ''}: import annotates existing samples only.")

    def before_import_row(self, row: Any, **kwargs: Any) -> None:
        status = row.get("annotation_status")
        if status and status not in AnnotationStatus.values:
            raise ValueError(f"annotation_status {status!r} is not one of {', '.join(AnnotationStatus.values)}")

    def before_save_instance(self, instance: DatasetSample, row: Any, **kwargs: Any) -> None:
        previous = DatasetSample.objects.filter(id=instance.id).values_list("annotation_status", flat=True).first()
        if previous != instance.annotation_status:
            instance.annotated_at = timezone.now()
            if not (row.get("annotated_by") or "").strip():
                instance.annotated_by = self.annotator
