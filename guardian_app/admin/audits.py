"""The rollback console: audits with their coloured diffs, file history, rollback and retry behind
confirmation pages, a bulk rollback, and the correction form.

Every button calls the domain function the API calls (``rollback_write``, ``retry_write``,
``correct_audit``). ``operator`` may roll back and retry; ``annotator`` may add corrections, sees no
rollback button and gets a 403 if it opens the page anyway.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from import_export.admin import ExportMixin
from import_export.formats.base_formats import CSV, JSON, XLSX

from guardian_app.admin.audit_pages import AuditPages
from guardian_app.admin.rendering import (
    DIFF_STYLE,
    diff_html,
    side_by_side,
    status_badge,
)
from guardian_app.admin.resources import WriteGuardianAuditResource
from guardian_app.models import (
    FileSnapshot,
    Rollback,
    WriteGuardianAudit,
)
from reflection_site.admin import ReadOnlyAdmin

Status = WriteGuardianAudit.Status


# --- Audits: the console -------------------------------------------------------------------------
@admin.register(WriteGuardianAudit)
class WriteGuardianAuditAdmin(AuditPages, ExportMixin, ReadOnlyAdmin):
    # Export (CSV, JSON, XLSX) of the rows the list's filters select: guardian_app/admin/resources.py.
    resource_classes = [WriteGuardianAuditResource]
    formats = [CSV, JSON, XLSX]

    def has_export_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    list_display = [
        "id",
        "created_at",
        "status_col",
        "target_file",
        "fact_col",
        "session_link",
        "changes",
        "llm_model",
        "source",
    ]
    list_filter = ["status", "target_file", "source", "held_for_review", "created_at"]
    search_fields = ["=id", "=session__id", "candidate_fact"]
    # Issue 9: no date_hierarchy; its year links are a SELECT DISTINCT over every audit (1.2 s of a 2.5 s
    # changelist at 100k turns on SQLite). The created_at filter above narrows by date.
    date_hierarchy = None
    list_select_related = ["rollback"]
    show_full_result_count = False
    ordering = ["-created_at", "-id"]
    actions = ["rollback_selected"]

    class Media:  # The list at laptop width and the truncated ids' titles (issue 23; sessions_app/admin.py).
        css = {"all": ["sessions_app/console.css"]}
        js = ["sessions_app/console.js"]

    fieldsets = [
        (
            None,
            {
                "fields": [
                    "status_col",
                    "candidate_fact",
                    "target_file",
                    "reason",
                    "held_for_review",
                    "source",
                    "source_ref",
                    "requested_by",
                    "created_at",
                ]
            },
        ),
        ("Change", {"fields": ["diff_col", "line_counts", "side_by_side_col"]}),
        ("Snapshots", {"classes": ["collapse"], "fields": ["before_col", "after_col"]}),
        ("Decision and turn", {"fields": ["decision_col", "turn_col", "session_link"]}),
        (
            "Rollback, retries and corrections",
            {"fields": ["rollback_col", "retry_of_col", "retries_col", "corrections_col"]},
        ),
        (
            "Guardian",
            {
                "classes": ["collapse"],
                "fields": ["llm_model", "llm_latency_ms", "agent_steps", "prompt_version", "edits"],
            },
        ),
    ]
    readonly_fields = [
        "status_col", "candidate_fact", "target_file", "reason", "held_for_review", "source", "source_ref", "requested_by",
        "created_at", "diff_col", "line_counts", "side_by_side_col", "before_col", "after_col", "decision_col", "turn_col",
        "session_link", "rollback_col", "retry_of_col", "retries_col", "corrections_col", "llm_model", "llm_latency_ms",
        "agent_steps", "prompt_version", "edits",
    ]  # fmt: skip

    # Permissions ---------------------------------------------------------------------------------
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("guardian_app.view_writeguardianaudit")

    def has_rollback_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("guardian_app.rollback_writeguardianaudit")

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("guardian_app.retry_writeguardianaudit")

    def has_correct_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("guardian_app.add_behaviorcorrection")

    def get_queryset(self, request: HttpRequest) -> QuerySet[WriteGuardianAudit]:
        qs = super().get_queryset(request)
        if request.resolver_match and request.resolver_match.url_name.endswith("changelist"):
            return qs.defer("diff", "edits")
        return qs

    # Columns -------------------------------------------------------------------------------------
    @admin.display(description="status", ordering="status")
    def status_col(self, obj: WriteGuardianAudit) -> SafeString:
        badge = status_badge(obj.status)
        if obj.held_for_review:
            return format_html("{} {}", badge, "held for review")
        return badge

    @admin.display(description="fact")
    def fact_col(self, obj: WriteGuardianAudit) -> str:
        fact = obj.candidate_fact or ""
        return format_html('<span title="{}">{}</span>', fact, fact if len(fact) <= 90 else fact[:87] + "…")

    @admin.display(description="session", ordering="session")
    def session_link(self, obj: WriteGuardianAudit) -> SafeString | str:
        if not obj.session_id:
            return "—"
        url = reverse("admin:sessions_app_conversationsession_change", args=[obj.session_id])
        return format_html('<a href="{}">{}</a>', url, obj.session_id)

    @admin.display(description="+/−/~")
    def changes(self, obj: WriteGuardianAudit) -> str:
        if obj.lines_added is None:
            return "—"
        return f"+{obj.lines_added} −{obj.lines_removed} ~{obj.lines_modified}"

    @admin.display(description="line counts")
    def line_counts(self, obj: WriteGuardianAudit) -> str:
        return self.changes(obj)

    @admin.display(description="diff")
    def diff_col(self, obj: WriteGuardianAudit) -> SafeString:
        return format_html("{}{}", DIFF_STYLE, diff_html(obj.diff))

    @admin.display(description="side by side")
    def side_by_side_col(self, obj: WriteGuardianAudit) -> SafeString | str:
        if obj.after_snapshot_id is None:
            return "—"
        before = obj.before_snapshot.content if obj.before_snapshot_id else None
        return format_html(
            "<details><summary>{}</summary>{}</details>",
            "Show",
            side_by_side(before, obj.after_snapshot.content, obj.target_file),
        )

    def _snapshot(self, snapshot: FileSnapshot | None, empty: str) -> SafeString:
        if snapshot is None:
            return format_html("<em>{}</em>", empty)
        url = reverse("admin:guardian_app_filesnapshot_change", args=[snapshot.id])
        return format_html(
            '<a href="{}">{}</a><pre class="gsnap">{}</pre>', url, snapshot.content_hash[:16], snapshot.content
        )

    @admin.display(description="before")
    def before_col(self, obj: WriteGuardianAudit) -> SafeString:
        return self._snapshot(obj.before_snapshot, "no file")

    @admin.display(description="after")
    def after_col(self, obj: WriteGuardianAudit) -> SafeString:
        return self._snapshot(obj.after_snapshot, "not written")

    @admin.display(description="gate decision")
    def decision_col(self, obj: WriteGuardianAudit) -> SafeString | str:
        decision = obj.decision
        if decision is None:
            return f"none ({obj.get_source_display()})"
        url = reverse("admin:sessions_app_memorygatedecision_change", args=[decision.id])
        return format_html('<a href="{}">{}</a> — {}: {}', url, decision.id, decision.decision, decision.reason)

    @admin.display(description="turn")
    def turn_col(self, obj: WriteGuardianAudit) -> SafeString | str:
        turn = obj.turn
        if turn is None:
            return "—"
        url = reverse("admin:sessions_app_conversationturn_change", args=[turn.id])
        return format_html(
            '<a href="{}">#{}</a><br><strong>user:</strong> {}<br><strong>agent:</strong> {}',
            url,
            turn.turn_number,
            turn.user_message_content[:1000],
            turn.agent_message_content[:1000],
        )

    @admin.display(description="rollback")
    def rollback_col(self, obj: WriteGuardianAudit) -> SafeString | str:
        rollback = Rollback.objects.filter(audit=obj).first()
        if rollback is None:
            return "—"
        url = reverse("admin:guardian_app_rollback_change", args=[rollback.id])
        return format_html(
            '<a href="{}">{}</a> by {} ({}{}): {}',
            url,
            rollback.rolled_back_at.strftime("%Y-%m-%d %H:%M:%S"),
            rollback.rolled_back_by,
            rollback.method,
            ", forced" if rollback.forced else "",
            rollback.reason,
        )

    def _audit_links(self, audits: list[WriteGuardianAudit]) -> SafeString | str:
        if not audits:
            return "—"
        return format_html_join(
            mark_safe("<br>"),
            '<a href="{}">{}</a> {}',
            (
                (reverse("admin:guardian_app_writeguardianaudit_change", args=[a.id]), a.id, status_badge(a.status))
                for a in audits
            ),
        )

    @admin.display(description="retry of")
    def retry_of_col(self, obj: WriteGuardianAudit) -> SafeString | str:
        return self._audit_links([obj.retry_of] if obj.retry_of_id else [])

    @admin.display(description="retries")
    def retries_col(self, obj: WriteGuardianAudit) -> SafeString | str:
        return self._audit_links(list(obj.retries.order_by("created_at")))

    @admin.display(description="corrections")
    def corrections_col(self, obj: WriteGuardianAudit) -> SafeString | str:
        rows = [
            (
                reverse("admin:guardian_app_behaviorcorrection_change", args=[c.id]),
                c.corrected_status,
                c.correction_reason,
                c.corrected_by,
            )
            for c in obj.corrections.order_by("corrected_at")
        ]
        if not rows:
            return "—"
        return format_html_join(mark_safe("<br>"), '<a href="{}">{}</a>: {} ({})', rows)
