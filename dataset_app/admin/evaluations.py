"""Evaluation runs in the admin: read-only, with per-label metrics, the confusion matrix and accuracy over time."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from dataset_app.models import EvaluationRun, JobStatus
from reflection_site import charts
from reflection_site.admin import ReadOnlyAdmin


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
