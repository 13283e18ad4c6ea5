"""Exports in the admin: an operator asks for one (the export runs on a worker) and downloads its files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from dataset_app.errors import DatasetError
from dataset_app.exporters.registry import format_names
from dataset_app.exports import start_export, validate_export_options
from dataset_app.models import DatasetExport, JobStatus, SampleType
from reflection_site.admin import BigTableMixin

DOWNLOAD_PERM = "dataset_app.download_datasetexport"


class ExportForm(forms.ModelForm):
    """What an operator asks for; the export runs on a worker."""

    export_format = forms.ChoiceField(choices=[(name, name) for name in format_names()], initial="openai")
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
