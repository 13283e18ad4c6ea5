"""The dataset in the admin: the review queue, samples with charts and import-export, exports, evaluations."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Case, QuerySet, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, NullIf, Substr
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from import_export import fields, resources
from import_export.admin import ImportExportModelAdmin
from import_export.formats.base_formats import CSV, JSON, XLSX

from dataset_app import charts, queries
from dataset_app.annotation import (
    ANNOTATION_CHOICES,
    annotate_sample,
    annotate_samples,
    next_in_queue,
    previous_in_queue,
    queue_position,
    review_queue,
)
from dataset_app.errors import DatasetError
from dataset_app.exporters import WRITERS, start_export, validate_export_options
from dataset_app.models import (
    AnnotationStatus,
    DatasetExport,
    DatasetSample,
    EvaluationRun,
    JobStatus,
    SampleType,
)
from dataset_app.review import present
from reflection_site.admin import (
    BigTableMixin,
    ReadOnlyAdmin,
    dashboard_figures,
    recent_values_filter,
    register_dashboard,
)
from reflection_site.privacy import redact

ANNOTATE_PERM = "dataset_app.annotate_datasetsample"


def _excerpt(field: str) -> Substr:
    """What tells samples apart in the list: the fact (correct, rejected or the guardian's), else the user's
    message of an annotated turn; empty strings skipped."""
    keys = ["correctFact", "incorrectFact", "candidateFact", "memoryGate__input__userMessage"]
    # A JSON null reads as the text "null" on SQLite (NULL on PostgreSQL): both count as absent.
    texts = (NullIf(NullIf(KT(f"{field}__{key}"), Value("")), Value("null")) for key in keys)
    return Substr(Coalesce(*texts), 1, 300)


# The samples changelist's charts (reflection_site.admin.dashboard_figures).
DASHBOARD = "dataset-samples"
RAW_PERM = "dataset_app.view_raw_datasetsample"
EXPORT_PERM = "dataset_app.add_datasetexport"
DOWNLOAD_PERM = "dataset_app.download_datasetexport"

ACTION_STATUS = {
    "approve": AnnotationStatus.APPROVED,
    "reject": AnnotationStatus.REJECTED,
    "needs_review": AnnotationStatus.NEEDS_REVIEW,
}


# --- django-import-export: annotation round trips ----------------------------------------------


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


# --- Samples ---------------------------------------------------------------------------------------


class AnnotationForm(forms.ModelForm):
    annotation_status = forms.ChoiceField(choices=[(s, AnnotationStatus(s).label) for s in AnnotationStatus.values])

    class Meta:
        model = DatasetSample
        fields = ["annotation_status", "annotation_notes"]


@admin.register(DatasetSample)
class DatasetSampleAdmin(BigTableMixin, ImportExportModelAdmin):
    resource_classes = [DatasetSampleResource]
    formats = [CSV, JSON, XLSX]
    change_list_template = "admin/dataset_app/datasetsample/change_list.html"
    form = AnnotationForm
    list_display = [
        "id",
        "sample_type",
        "content_col",
        "label",
        "quality",
        "annotation_status",
        "contains_pii",
        "session",
        "created_at",
    ]
    list_filter = [
        "annotation_status",
        "sample_type",
        "contains_pii",
        recent_values_filter("collection_strategy", "collection strategy (of the newest 1,000 samples)"),
        "created_at",
    ]
    list_select_related = ["session"]
    search_fields = ["=id", "=session__id", "=decision__id", "=audit__id", "=turn__id"]
    show_full_result_count = False
    ordering = ["-created_at", "-id"]
    raw_id_fields = ["turn", "decision", "audit", "session"]
    actions = ["approve", "reject", "send_to_review", "export_dataset"]
    fieldsets = [
        (None, {"fields": ["sample_view", "annotation_status", "annotation_notes"]}),
        (
            "Sample",
            {
                "fields": [
                    "id",
                    "sample_type",
                    "label",
                    "quality_score",
                    "quality_factors",
                    "collection_strategy",
                    "privacy_checked",
                    "contains_pii",
                    "annotated_by",
                    "annotated_at",
                    "session",
                    "turn",
                    "decision",
                    "audit",
                    "created_at",
                ]
            },
        ),
    ]
    readonly_fields = [
        "sample_view",
        "id",
        "sample_type",
        "label",
        "quality_score",
        "quality_factors",
        "collection_strategy",
        "privacy_checked",
        "contains_pii",
        "annotated_by",
        "annotated_at",
        "session",
        "turn",
        "decision",
        "audit",
        "created_at",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[DatasetSample]:
        queryset = super().get_queryset(request)
        if request.resolver_match and request.resolver_match.url_name.endswith("changelist"):
            # The content column's text comes from the database (its first 300 characters), not the whole JSON.
            return queryset.defer("content", "pii_redacted_content", "quality_factors").annotate(
                _excerpt=Case(
                    When(contains_pii=True, then=_excerpt("pii_redacted_content")), default=_excerpt("content")
                )
            )
        return queryset

    class Media:
        css = {"all": ["sessions_app/console.css"]}  # The lists at laptop width (sessions_app/admin.py).
        js = ["sessions_app/console.js"]

    @admin.display(description="content")
    def content_col(self, sample: DatasetSample) -> str:
        """The sample's fact (or the user's message), redacted, truncated; the whole excerpt on hover."""
        text = getattr(sample, "_excerpt", None)
        if text is None:
            return "withheld" if sample.privacy_checked and sample.contains_pii else "—"
        text = " ".join(redact(text).split())
        short = text if len(text) <= 90 else text[:89] + "…"
        return format_html('<span title="{}">{}</span>', text, short)

    @admin.display(description="quality", ordering="quality_score")
    def quality(self, sample: DatasetSample) -> str:
        return f"{sample.quality_score:.3f}" if sample.quality_score is not None else "–"

    @admin.display(description="Sample (redacted; the review page shows the raw text to those allowed)")
    def sample_view(self, sample: DatasetSample) -> SafeString:
        review_url = reverse("admin:dataset_app_datasetsample_review_sample", args=[sample.id])
        return SafeString(
            render_to_string("admin/dataset_app/_sample.html", {"view": present(sample), "review_url": review_url})
        )

    # Samples are collected, never typed in; only their annotation changes here.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_annotate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(ANNOTATE_PERM)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_annotate_permission(request)

    def has_import_permission(self, request: HttpRequest) -> bool:
        return self.has_annotate_permission(request)

    def has_export_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def get_import_resource_kwargs(self, request: HttpRequest, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_import_resource_kwargs(request, **kwargs), "annotator": request.user.get_username()}

    def save_model(self, request: HttpRequest, obj: DatasetSample, form: Any, change: bool) -> None:
        annotate_sample(
            obj,
            status=form.cleaned_data["annotation_status"],
            annotated_by=request.user.get_username(),
            notes=form.cleaned_data.get("annotation_notes"),
        )

    @admin.action(description="Approve selected samples", permissions=["annotate"])
    def approve(self, request: HttpRequest, queryset: QuerySet[DatasetSample]) -> None:
        count = annotate_samples(queryset, status=AnnotationStatus.APPROVED, annotated_by=request.user.get_username())
        self.message_user(request, f"{count} sample(s) approved")

    @admin.action(description="Reject selected samples", permissions=["annotate"])
    def reject(self, request: HttpRequest, queryset: QuerySet[DatasetSample]) -> None:
        count = annotate_samples(queryset, status=AnnotationStatus.REJECTED, annotated_by=request.user.get_username())
        self.message_user(request, f"{count} sample(s) rejected")

    @admin.action(description="Send selected samples to the review queue", permissions=["annotate"])
    def send_to_review(self, request: HttpRequest, queryset: QuerySet[DatasetSample]) -> None:
        count = annotate_samples(
            queryset, status=AnnotationStatus.NEEDS_REVIEW, annotated_by=request.user.get_username()
        )
        self.message_user(request, f"{count} sample(s) sent to review")

    @admin.action(description="Export selected samples as a dataset (OpenAI format)", permissions=["export"])
    def export_dataset(self, request: HttpRequest, queryset: QuerySet[DatasetSample]) -> None:
        ids = list(queryset.values_list("id", flat=True)[:100_001])
        if len(ids) > 100_000:
            self.message_user(
                request, "Select at most 100,000 samples, or export with filters from Dataset exports.", messages.ERROR
            )
            return
        export = start_export(export_format="openai", sample_ids=ids, exported_by=request.user.get_username())
        url = reverse("admin:dataset_app_datasetexport_change", args=[export.id])
        self.message_user(
            request,
            format_html('Export <a href="{}">{}</a> started for {} sample(s).', url, export.export_name, len(ids)),
        )

    def has_export_dataset_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(EXPORT_PERM)

    # The export action's permission name clashes with import-export's; keep theirs for file exports.
    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if "export_dataset" in actions and not request.user.has_perm(EXPORT_PERM):
            del actions["export_dataset"]
        return actions

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra_context = {
            **(extra_context or {}),
            **dashboard_figures(DASHBOARD),
            "review_count": review_queue().count(),
        }
        return super().changelist_view(request, extra_context)

    @staticmethod
    def chart_context() -> dict[str, Any]:
        by_type = queries.counts_by("type")
        by_status = queries.counts_by("status")
        quality = queries.quality_distribution()
        return {
            "chart_quality": charts.histogram(
                [(f"{b['from']:.1f}", b["count"]) for b in quality["buckets"]], title="Quality score"
            ),
            "chart_types": charts.bar_chart(
                [(SampleType(r["key"]).label, r["count"]) for r in by_type["rows"]], title="Samples by type"
            ),
            "chart_statuses": charts.bar_chart(
                [(AnnotationStatus(r["key"]).label, r["count"]) for r in by_status["rows"]], title="Samples by status"
            ),
            "quality_summary": quality,
        }

    # --- the review queue ------------------------------------------------------------------------
    def get_urls(self) -> list[Any]:
        review = [
            path("review/", self.admin_site.admin_view(self.review_start), name="dataset_app_datasetsample_review"),
            path(
                "review/<str:sample_id>/",
                self.admin_site.admin_view(self.review_sample),
                name="dataset_app_datasetsample_review_sample",
            ),
        ]
        return review + super().get_urls()

    def review_start(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        first = next_in_queue()
        if first is not None:
            return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review_sample", args=[first.id]))
        context = {**self.admin_site.each_context(request), "title": "Review queue", "opts": self.model._meta}
        return TemplateResponse(request, "admin/dataset_app/datasetsample/review_done.html", context)

    def review_sample(self, request: HttpRequest, sample_id: str) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        sample = get_object_or_404(DatasetSample.objects.select_related("audit"), id=sample_id)
        if request.method == "POST":
            return self._review_post(request, sample)
        can_raw = request.user.has_perm(RAW_PERM)
        raw = bool(request.GET.get("raw")) and can_raw
        following = next_in_queue(sample, exclude_id=sample.id)
        preceding = previous_in_queue(sample)
        url = reverse("admin:dataset_app_datasetsample_review_sample", args=[sample.id])
        context = {
            **self.admin_site.each_context(request),
            "title": f"Review {SampleType(sample.sample_type).label}",
            "opts": self.model._meta,
            "sample": sample,
            "view": present(sample, raw=raw),
            "raw": raw,
            "can_raw": can_raw,
            "can_annotate": self.has_annotate_permission(request),
            "in_queue": sample.annotation_status == AnnotationStatus.NEEDS_REVIEW,
            "position": queue_position(sample),
            "queue_count": review_queue().count(),
            "next_url": reverse("admin:dataset_app_datasetsample_review_sample", args=[following.id])
            if following
            else "",
            "prev_url": reverse("admin:dataset_app_datasetsample_review_sample", args=[preceding.id])
            if preceding
            else "",
            "raw_url": f"{url}?raw=1",
            "redacted_url": url,
            "change_url": reverse("admin:dataset_app_datasetsample_change", args=[sample.id]),
            "notes": redact(sample.annotation_notes or "") if not raw else (sample.annotation_notes or ""),
            "actions": [("approve", "Approve", "a"), ("reject", "Reject", "r"), ("needs_review", "Needs review", "n")],
        }
        return TemplateResponse(request, "admin/dataset_app/datasetsample/review.html", context)

    def _review_post(self, request: HttpRequest, sample: DatasetSample) -> HttpResponse:
        if not self.has_annotate_permission(request):
            raise PermissionDenied
        status = ACTION_STATUS.get(request.POST.get("action", ""))
        if status is None or status not in ANNOTATION_CHOICES:
            messages.error(request, "Choose approve, reject or needs review.")
            return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review_sample", args=[sample.id]))
        notes = request.POST.get("notes")
        if notes is not None and not request.user.has_perm(RAW_PERM) and notes == redact(sample.annotation_notes or ""):
            notes = None  # The redacted notes came back unchanged: keep the stored ones.
        try:
            annotate_sample(sample, status=status, annotated_by=request.user.get_username(), notes=notes)
        except DatasetError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review_sample", args=[sample.id]))
        messages.success(request, f"{AnnotationStatus(status).label.capitalize()}: {sample.id}")
        following = next_in_queue(sample, exclude_id=sample.id)
        if following is None:
            return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review"))
        return HttpResponseRedirect(reverse("admin:dataset_app_datasetsample_review_sample", args=[following.id]))


register_dashboard(DASHBOARD, DatasetSampleAdmin.chart_context)


# --- Exports ---------------------------------------------------------------------------------------


class ExportForm(forms.ModelForm):
    """What an operator asks for; the export runs on a worker."""

    export_format = forms.ChoiceField(choices=[(f, f) for f in WRITERS], initial="openai")
    export_name = forms.CharField(required=False, help_text="File name stem; empty: dataset-<format>-<time>.")
    types = forms.MultipleChoiceField(
        choices=SampleType.choices, required=False, widget=forms.CheckboxSelectMultiple, help_text="None ticked: all."
    )
    only_approved = forms.BooleanField(required=False)
    min_quality = forms.FloatField(required=False, min_value=0, max_value=1)
    include_pii = forms.BooleanField(required=False, help_text="Export the raw text. Off: redacted.")
    train_split = forms.FloatField(required=False, min_value=0.01, max_value=1, help_text="Default 0.8.")

    class Meta:
        model = DatasetExport
        fields: list[str] = []

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        try:
            validate_export_options(
                export_format=data.get("export_format", ""),
                name=data.get("export_name") or None,
                sample_types=data.get("types") or [],
                train_split=data.get("train_split"),
                min_quality=data.get("min_quality"),
            )
        except DatasetError as exc:
            raise ValidationError(exc.message) from exc
        return data


@admin.register(DatasetExport)
class DatasetExportAdmin(BigTableMixin, admin.ModelAdmin):
    list_display = [
        "export_name",
        "export_format",
        "status",
        "progress_pct",
        "total_samples",
        "train_samples",
        "validation_samples",
        "avg_quality_score",
        "size",
        "exported_by",
        "exported_at",
    ]
    list_filter = ["status", "export_format", "exported_at"]
    search_fields = ["=id", "export_name"]
    ordering = ["-exported_at"]
    show_full_result_count = False
    readonly_fields = [
        "id",
        "export_name",
        "export_format",
        "status",
        "progress",
        "error",
        "sample_types",
        "filters_view",
        "total_samples",
        "approved_samples",
        "rejected_samples",
        "skipped_pii_samples",
        "train_samples",
        "validation_samples",
        "avg_quality_score",
        "files_view",
        "file_size_bytes",
        "checksum",
        "exported_by",
        "exported_at",
        "started_at",
        "finished_at",
    ]

    @admin.display(description="progress")
    def progress_pct(self, export: DatasetExport) -> str:
        return f"{export.progress}%"

    @admin.display(description="size")
    def size(self, export: DatasetExport) -> str:
        if export.file_size_bytes is None:
            return "–"
        size = float(export.file_size_bytes)
        for unit in ("B", "KB", "MB", "GB"):
            if size < 1024 or unit == "GB":
                return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
            size /= 1024
        return ""

    @admin.display(description="filters")
    def filters_view(self, export: DatasetExport) -> str:
        filters = dict(export.filters or {})
        if "sample_ids" in filters:
            filters["sample_ids"] = f"{len(filters['sample_ids'])} selected"
        return ", ".join(f"{k}={v}" for k, v in filters.items())

    @admin.display(description="files")
    def files_view(self, export: DatasetExport) -> SafeString | str:
        if not export.files:
            return "–"
        return format_html_join(
            "",
            '<div><a href="{}">{}</a> · {} samples · {} bytes · sha256 <code>{}</code></div>',
            (
                (
                    reverse("admin:dataset_app_datasetexport_download", args=[export.id, f["split"]]),
                    Path(f["path"]).name,
                    f["samples"],
                    f["size_bytes"],
                    f["sha256"],
                )
                for f in export.files
            ),
        )

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = ExportForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return [
                "export_format",
                "export_name",
                "types",
                "only_approved",
                "min_quality",
                "include_pii",
                "train_split",
            ]
        return self.readonly_fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return self.readonly_fields if obj is not None else []

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: DatasetExport, form: Any, change: bool) -> None:
        data = form.cleaned_data
        export = start_export(
            export_format=data["export_format"],
            name=data.get("export_name") or None,
            sample_types=data.get("types") or [],
            only_approved=data.get("only_approved", False),
            min_quality=data.get("min_quality"),
            include_pii=data.get("include_pii", False),
            train_split=data.get("train_split"),
            exported_by=request.user.get_username(),
        )
        obj.pk = export.pk
        obj.__dict__.update({k: v for k, v in export.__dict__.items() if not k.startswith("_")})

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<str:export_id>/download/<str:split>/",
                self.admin_site.admin_view(self.download),
                name="dataset_app_datasetexport_download",
            ),
            *super().get_urls(),
        ]

    def download(self, request: HttpRequest, export_id: str, split: str) -> HttpResponse:
        if not request.user.has_perm(DOWNLOAD_PERM):
            raise PermissionDenied
        export = get_object_or_404(DatasetExport, id=export_id)
        info = export.file_for(split)
        if export.status != JobStatus.COMPLETED or info is None or not Path(info["path"]).is_file():
            raise Http404("No such file")
        return FileResponse(open(info["path"], "rb"), as_attachment=True, filename=Path(info["path"]).name)  # noqa: SIM115


# --- Evaluation runs -------------------------------------------------------------------------------


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnlyAdmin):
    change_list_template = "admin/dataset_app/evaluationrun/change_list.html"

    class Media:  # The list at laptop width (issue 23).
        css = {"all": ["sessions_app/console.css"]}

    list_display = [
        "created_at",
        "stage",
        "model_label",
        "prompt_version",
        "split",
        "sample_count",
        "accuracy_pct",
        "error_count",
        "status",
    ]
    list_filter = ["stage", "split", "status", "llm_model"]
    search_fields = ["=id", "llm_model", "requested_model", "prompt_version"]
    ordering = ["-created_at"]
    fields = [
        "id",
        "stage",
        "requested_model",
        "llm_model",
        "prompt_version",
        "split",
        "train_split",
        "status",
        "error",
        "sample_count",
        "correct_count",
        "error_count",
        "accuracy",
        "metrics_table",
        "confusion_table",
        "duration_ms",
        "created_by",
        "created_at",
        "finished_at",
    ]
    readonly_fields = fields

    @admin.display(description="model")
    def model_label(self, run: EvaluationRun) -> str:
        return run.model_label

    @admin.display(description="accuracy", ordering="accuracy")
    def accuracy_pct(self, run: EvaluationRun) -> str:
        return f"{run.accuracy * 100:.1f}%" if run.accuracy is not None else "–"

    @admin.display(description="per label")
    def metrics_table(self, run: EvaluationRun) -> SafeString | str:
        if not run.metrics:
            return "–"

        def fmt(value: Any) -> str:
            return f"{value:.3f}" if isinstance(value, float) else ("–" if value is None else str(value))

        rows = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (label, fmt(m.get("precision")), fmt(m.get("recall")), fmt(m.get("f1")), m.get("support"))
                for label, m in run.metrics.items()
            ),
        )
        return format_html(
            '<table class="reflection-table"><tr><th>label</th><th>precision</th><th>recall</th><th>F1</th>'
            "<th>support</th></tr>{}</table>",
            rows,
        )

    @admin.display(description="confusion matrix (rows: expected, columns: predicted)")
    def confusion_table(self, run: EvaluationRun) -> SafeString | str:
        labels = (run.confusion or {}).get("labels") or []
        matrix = (run.confusion or {}).get("matrix") or []
        used = [i for i in range(len(labels)) if any(matrix[i]) or any(row[i] for row in matrix)]
        if not used:
            return "–"
        head = format_html_join("", "<th>{}</th>", ((labels[j],) for j in used))
        body = format_html_join(
            "",
            "<tr><th>{}</th>{}</tr>",
            ((labels[i], format_html_join("", "<td>{}</td>", ((matrix[i][j],) for j in used))) for i in used),
        )
        return format_html('<table class="reflection-table"><tr><th></th>{}</tr>{}</table>', head, body)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        series: dict[str, list[tuple[Any, float]]] = defaultdict(list)
        runs = (
            EvaluationRun.objects.filter(status=JobStatus.COMPLETED, accuracy__isnull=False)
            .order_by("-created_at")
            .values_list("stage", "llm_model", "requested_model", "split", "created_at", "accuracy")[:500]
        )
        for stage, llm_model, requested, split, created_at, accuracy in runs:
            series[f"{stage} · {llm_model or requested or 'current'} · {split}"].append((created_at, accuracy))
        chart = charts.line_chart(dict(series), title="Accuracy over time")
        return super().changelist_view(request, {**(extra_context or {}), "accuracy_chart": chart})
