"""The memory files' records, read-only: versions, snapshots, rollbacks, and each file's row with its drift
finding."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from guardian_app.admin.rendering import (
    DIFF_STYLE,
    diff_html,
    status_badge,
)
from guardian_app.models import (
    FileSnapshot,
    FileVersion,
    Rollback,
    WorkspaceFile,
)
from reflection_site.admin import ReadOnlyAdmin


@admin.register(FileVersion)
class FileVersionAdmin(ReadOnlyAdmin):
    list_display = ["file_name", "seq", "kind_col", "created_at", "lines_added", "lines_removed", "audit"]
    list_filter = ["file_name", "kind"]
    list_select_related = ["audit"]
    show_full_result_count = False
    ordering = ["file_name", "-seq"]
    fields = [
        "file_name",
        "seq",
        "kind_col",
        "created_at",
        "audit",
        "rollback",
        "snapshot",
        "lines_added",
        "lines_removed",
        "diff_col",
    ]
    readonly_fields = fields

    @admin.display(description="kind", ordering="kind")
    def kind_col(self, obj: FileVersion) -> SafeString:
        return status_badge(obj.kind)

    @admin.display(description="diff")
    def diff_col(self, obj: FileVersion) -> SafeString:
        return format_html("{}{}", DIFF_STYLE, diff_html(obj.diff))

    def get_queryset(self, request: HttpRequest) -> QuerySet[FileVersion]:
        return super().get_queryset(request).defer("diff")


@admin.register(FileSnapshot)
class FileSnapshotAdmin(ReadOnlyAdmin):
    list_display = ["id", "file_name", "content_hash", "created_at"]
    list_filter = ["file_name"]
    search_fields = ["=id", "=content_hash"]
    show_full_result_count = False
    fields = ["file_name", "content_hash", "created_at", "content_col"]
    readonly_fields = fields

    @admin.display(description="content")
    def content_col(self, obj: FileSnapshot) -> SafeString:
        return format_html('{}<pre class="gsnap">{}</pre>', DIFF_STYLE, obj.content)

    def get_queryset(self, request: HttpRequest) -> QuerySet[FileSnapshot]:
        qs = super().get_queryset(request)
        if request.resolver_match and request.resolver_match.url_name.endswith("changelist"):
            return qs.defer("content")
        return qs


@admin.register(Rollback)
class RollbackAdmin(ReadOnlyAdmin):
    list_display = ["id", "rolled_back_at", "audit", "rolled_back_by", "method", "forced", "previous_status", "reason"]
    list_filter = ["method", "forced"]
    search_fields = ["=id", "=audit__id", "rolled_back_by", "reason"]
    raw_id_fields = ["audit", "restored_snapshot", "replaced_snapshot"]
    show_full_result_count = False
    ordering = ["-rolled_back_at"]


@admin.register(WorkspaceFile)
class WorkspaceFileAdmin(ReadOnlyAdmin):
    """The five memory files with their last known version and a link to each history."""

    list_display = ["file_name", "updated_at", "current_version", "finding", "history_link"]
    list_select_related = ["current_version"]

    @admin.display(description="drift finding", ordering="unsafe_reason")
    def finding(self, obj: WorkspaceFile) -> SafeString | str:
        """A link, a FIFO … in place of the file: Reflection neither reads nor writes it until it is replaced."""
        if not obj.unsafe_reason:
            return "-"
        return format_html(
            '<strong style="color:#ba2121">{} (since {}); not read or written</strong>',
            obj.unsafe_reason,
            f"{obj.unsafe_since:%Y-%m-%d %H:%M}" if obj.unsafe_since else "?",
        )

    @admin.display(description="history")
    def history_link(self, obj: WorkspaceFile) -> SafeString:
        url = reverse("admin:guardian_app_file_history", args=[obj.file_name])
        return format_html('<a href="{}">{}</a>', url, "timeline")
