"""Behaviour corrections in the admin: added, imported (a dry run first) and exported; a form saves through
``correct_audit`` like the API."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from import_export.admin import ImportExportMixin
from import_export.formats.base_formats import CSV, JSON, XLSX

from guardian_app.admin.forms import BehaviorCorrectionForm
from guardian_app.admin.resources import BehaviorCorrectionResource
from guardian_app.errors import GuardianError
from guardian_app.models import (
    BehaviorCorrection,
)
from guardian_app.write.corrections import correct_audit
from reflection_site.admin import BigTableMixin


@admin.register(BehaviorCorrection)
class BehaviorCorrectionAdmin(ImportExportMixin, BigTableMixin, admin.ModelAdmin):
    # Import (a dry run first, then confirm) and export of corrections: guardian_app/admin/resources.py.
    resource_classes = [BehaviorCorrectionResource]
    formats = [CSV, JSON, XLSX]

    def get_import_resource_kwargs(self, request: HttpRequest, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_import_resource_kwargs(request, **kwargs), "corrected_by": request.user.get_username()}

    def has_import_permission(self, request: HttpRequest) -> bool:
        return self.has_add_permission(request)

    def has_export_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    form = BehaviorCorrectionForm
    list_display = [
        "id",
        "corrected_at",
        "original_status",
        "corrected_status",
        "audit_link",
        "pattern_col",
        "apply_to_future",
        "active",
        "corrected_by",
    ]
    list_filter = ["corrected_status", "apply_to_future", "active"]
    search_fields = ["=id", "=audit__id", "original_candidate_fact", "correction_pattern", "correction_reason"]
    raw_id_fields = ["audit"]
    list_editable = ["active"]
    show_full_result_count = False
    ordering = ["-corrected_at"]

    @admin.display(description="audit")
    def audit_link(self, obj: BehaviorCorrection) -> SafeString:
        url = reverse("admin:guardian_app_writeguardianaudit_change", args=[obj.audit_id])
        return format_html('<a href="{}">{}</a>', url, obj.audit_id)

    @admin.display(description="correction pattern", ordering="correction_pattern")
    def pattern_col(self, obj: BehaviorCorrection) -> SafeString | str:
        """The pattern, and why it is disabled when RE2 refuses it (stored before patterns were checked)."""
        from sessions_app.heuristic_gate import correction_pattern_problem

        if not obj.correction_pattern:
            return "-"
        problem = correction_pattern_problem(obj.correction_pattern)
        if problem is None:
            return obj.correction_pattern
        return format_html('{} <strong style="color:#ba2121">disabled: {}</strong>', obj.correction_pattern, problem)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        # A recorded correction is history; only whether it still steers the guardian can change.
        return [
            "audit",
            "corrected_status",
            "corrected_candidate_fact",
            "corrected_target_file",
            "correction_reason",
            "corrected_by",
            "corrected_at",
            "original_status",
            "original_candidate_fact",
            "original_target_file",
        ]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return list(BehaviorCorrectionForm.Meta.fields)
        return [*self.get_readonly_fields(request, obj), "apply_to_future", "correction_pattern", "active"]

    def save_model(self, request: HttpRequest, obj: BehaviorCorrection, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        try:
            created = correct_audit(
                obj.audit,
                status=obj.corrected_status,
                reason=obj.correction_reason,
                corrected_by=request.user.get_username(),
                candidate_fact=obj.corrected_candidate_fact,
                target_file=obj.corrected_target_file,
                apply_to_future=obj.apply_to_future,
                pattern=obj.correction_pattern,
            )
        except GuardianError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            raise PermissionDenied(str(exc)) from exc
        obj.pk = created.pk
        obj.__dict__.update({k: v for k, v in created.__dict__.items() if not k.startswith("_")})


# --- History rows (read-only) ----------------------------------------------------------------------
