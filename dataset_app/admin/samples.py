"""Samples in the admin: the list with its charts, import-export of annotations, the change form and the
annotation actions; the review queue's pages are ``review_queue.ReviewQueueMixin``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, NullIf, Substr
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from import_export.admin import ImportExportModelAdmin
from import_export.formats.base_formats import CSV, JSON, XLSX

from dataset_app import queries
from dataset_app.admin.resources import DatasetSampleResource
from dataset_app.admin.review_queue import ReviewQueueMixin
from dataset_app.annotation import annotate_sample, annotate_samples, review_queue
from dataset_app.exports import start_export
from dataset_app.models import AnnotationStatus, DatasetSample, SampleType, visible_content_sql
from dataset_app.review import present
from reflection_site import charts, cli
from reflection_site.admin import BigTableMixin, dashboard_figures, recent_values_filter, register_dashboard
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
EXPORT_PERM = "dataset_app.add_datasetexport"
# The change form's "Sample" fieldset, all read-only: only the annotation changes here.
SAMPLE_FIELDS = [
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


class AnnotationForm(forms.ModelForm):
    annotation_status = forms.ChoiceField(choices=[(s, AnnotationStatus(s).label) for s in AnnotationStatus.values])

    class Meta:
        model = DatasetSample
        fields = ["annotation_status", "annotation_notes"]


@admin.register(DatasetSample)
class DatasetSampleAdmin(ReviewQueueMixin, BigTableMixin, ImportExportModelAdmin):
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
        ("Sample", {"fields": SAMPLE_FIELDS}),
    ]
    readonly_fields = ["sample_view", *SAMPLE_FIELDS]

    def get_queryset(self, request: HttpRequest) -> QuerySet[DatasetSample]:
        queryset = super().get_queryset(request)
        if request.resolver_match and request.resolver_match.url_name.endswith("changelist"):
            # The content column's text comes from the database (its first 300 characters), not the whole JSON.
            return queryset.defer("content", "pii_redacted_content", "quality_factors").annotate(
                _excerpt=visible_content_sql(_excerpt)
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
        return format_html('<span title="{}">{}</span>', text, cli.short(text, 90))

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


register_dashboard(DASHBOARD, DatasetSampleAdmin.chart_context)
