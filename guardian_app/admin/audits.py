"""The rollback console: audits with their coloured diffs, file history, rollback and retry behind
confirmation pages, a bulk rollback, and the correction form.

Every button calls the domain function the API calls (``rollback_write``, ``retry_write``,
``correct_audit``). ``operator`` may roll back and retry; ``annotator`` may add corrections, sees no
rollback button and gets a 403 if it opens the page anyway.
"""

from __future__ import annotations

import difflib
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.templatetags.static import static
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from import_export.admin import ExportMixin, ImportExportMixin
from import_export.formats.base_formats import CSV, JSON, XLSX

from guardian_app.admin.resources import BehaviorCorrectionResource, WriteGuardianAuditResource
from guardian_app.errors import GuardianError, RollbackConflict, UnsafeFile
from guardian_app.models import (
    BehaviorCorrection,
    FileSnapshot,
    FileVersion,
    Rollback,
    WorkspaceFile,
    WriteGuardianAudit,
)
from guardian_app.queries import file_history
from guardian_app.write import history, locks, paths, workspace
from guardian_app.write.corrections import correct_audit, derive_pattern
from guardian_app.write.guardian import retry_write
from guardian_app.write.rollback import RollbackStale, preview_rollback, rollback_write
from reflection_site import memory_files
from reflection_site.admin import BigTableMixin, ReadOnlyAdmin

Status = WriteGuardianAudit.Status


def file_choices() -> list[tuple[str, str]]:
    """The workspace profile's memory files (a form asks when it is drawn: tests change the profile)."""
    return [(name, name) for name in memory_files.active().files]


def file_choices_or_same() -> list[tuple[str, str]]:
    return [("", "(same file)"), *file_choices()]


# A stylesheet, not an inline <style>: the Content-Security-Policy allows the admin's own files only.
DIFF_STYLE = format_html('<link rel="stylesheet" href="{}">', static("guardian_app/diff.css"))


def diff_html(diff: str | None) -> SafeString:
    """A unified diff as coloured HTML; every line is escaped (a fact holding ``<script>`` is text)."""
    if not diff:
        return format_html('<p class="gdiff-empty">{}</p>', "No change.")
    rows = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            css = "meta"
        elif line.startswith("@@"):
            css = "hunk"
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        else:
            css = "ctx"
        rows.append((css, line or " "))
    return format_html('<pre class="gdiff">{}</pre>', format_html_join("", '<span class="{}">{}</span>', rows))


def side_by_side(before: str | None, after: str | None, name: str) -> SafeString:
    # difflib.HtmlDiff escapes &, < and > itself; mark_safe is for its markup only.
    table = difflib.HtmlDiff(wrapcolumn=90).make_table(
        (before or "").splitlines(), (after or "").splitlines(), f"a/{name}", f"b/{name}", context=True, numlines=3
    )
    return mark_safe(table)  # noqa: S308 - HtmlDiff output, escaped by difflib.


def status_badge(status: str) -> SafeString:
    return format_html('<span class="gbadge {}">{}</span>', status, status.replace("_", " "))


# --- Forms ---------------------------------------------------------------------------------------
class RollbackForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), max_length=2000)
    force = forms.BooleanField(required=False, label="Force: overwrite the later changes shown above")
    seen_hash = forms.CharField(required=False, widget=forms.HiddenInput)


class BulkRollbackForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), max_length=2000)


class RetryForm(forms.Form):
    candidate_fact = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), max_length=10_000)
    target_file = forms.ChoiceField(choices=file_choices)


class CorrectionForm(forms.Form):
    status = forms.ChoiceField(
        choices=[("refused", "refused: should not have been written"), ("written", "written: should have been written")]
    )
    candidate_fact = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80}), help_text="The right fact, if it differs."
    )
    target_file = forms.ChoiceField(required=False, choices=file_choices_or_same)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), max_length=2000)
    apply_to_future = forms.BooleanField(
        required=False, help_text="Steer the gate and guardian with the pattern from now on."
    )
    correction_pattern = forms.CharField(
        required=False,
        max_length=500,
        help_text="Words that must all occur in a later fact, or /regex/. Empty: derived from the fact.",
    )


# --- Audits: the console -------------------------------------------------------------------------
@admin.register(WriteGuardianAudit)
class WriteGuardianAuditAdmin(ExportMixin, ReadOnlyAdmin):
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

    # Pages ---------------------------------------------------------------------------------------
    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path(
                "<str:object_id>/rollback/", wrap(self.rollback_view), name="guardian_app_writeguardianaudit_rollback"
            ),
            path("<str:object_id>/retry/", wrap(self.retry_view), name="guardian_app_writeguardianaudit_retry"),
            path("<str:object_id>/correct/", wrap(self.correct_view), name="guardian_app_writeguardianaudit_correct"),
            # <path:…>: reflect's bank pages have slashes in their names (bank/entities/Peter.md).
            path("history/<path:file_name>/", wrap(self.file_history_view), name="guardian_app_file_history"),
            *super().get_urls(),
        ]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        audit = self.get_object(request, object_id)
        extra = dict(extra_context or {})
        if audit is not None:
            extra.update(
                can_rollback=self.has_rollback_permission(request) and audit.status == Status.WRITTEN,
                can_retry=self.has_retry_permission(request),
                can_correct=self.has_correct_permission(request),
                history_url=reverse("admin:guardian_app_file_history", args=[audit.target_file]),
            )
        return super().change_view(request, object_id, form_url, extra)

    def _context(self, request: HttpRequest, audit: WriteGuardianAudit, title: str, **extra: Any) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": title,
            "audit": audit,
            "diff_style": DIFF_STYLE,
            "diff": diff_html(audit.diff),
            "status": status_badge(audit.status),
            "change_url": reverse("admin:guardian_app_writeguardianaudit_change", args=[audit.id]),
            **extra,
        }

    def rollback_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Confirmation page: the rollback run as a dry run, with the exact diff it will make or its conflict;
        ``force`` is offered only with a conflict, beside the forced rollback's own dry-run diff. A confirmation
        applies only to the file the operator saw (its hash): if it changed since, the new dry run is shown."""
        if not self.has_rollback_permission(request):
            raise PermissionDenied
        audit = get_object_or_404(
            WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot"), id=object_id
        )
        change_url = reverse("admin:guardian_app_writeguardianaudit_change", args=[audit.id])
        try:
            workspace.read_file(audit.target_file)
        except GuardianError as exc:  # A link or a FIFO in place of the file (a drift finding): nothing to show.
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(change_url)
        if audit.status != Status.WRITTEN:
            self.message_user(
                request, f"Audit {audit.id} is {audit.status}: there is nothing to roll back.", messages.WARNING
            )
            return HttpResponseRedirect(change_url)
        note = ""
        if request.method == "POST":
            form = RollbackForm(request.POST)
            if form.is_valid():
                force, seen = form.cleaned_data["force"], form.cleaned_data["seen_hash"]
                if not seen:
                    note = "Check what the rollback will do, then confirm."
                else:
                    try:
                        rollback = rollback_write(
                            audit,
                            reason=form.cleaned_data["reason"],
                            requested_by=request.user.get_username(),
                            force=force,
                            expected_hash=seen,
                        )
                    except RollbackStale:
                        note = "The file changed since this page was shown: this is what the rollback would do now."
                    except RollbackConflict:
                        note = "Later changes now overlap this write: nothing was changed."
                    except GuardianError as exc:
                        self.message_user(request, str(exc), messages.ERROR)
                        return HttpResponseRedirect(change_url)
                    else:
                        how = {
                            "restore": "restored the file",
                            "merge": "reverted only this write",
                            "forced": "forced over later changes",
                        }
                        self.message_user(
                            request,
                            f"Rolled back {audit.id} ({how.get(rollback.method, rollback.method)}). "
                            f"{rollback.change.summary().capitalize()}.",
                            messages.SUCCESS,
                        )
                        return HttpResponseRedirect(change_url)
                form = RollbackForm(initial={"reason": form.cleaned_data["reason"]})
        else:
            form = RollbackForm()
        return self._rollback_page(request, audit, form, note)

    def _rollback_page(self, request: HttpRequest, audit: WriteGuardianAudit, form: RollbackForm, note: str) -> Any:
        change_url = reverse("admin:guardian_app_writeguardianaudit_change", args=[audit.id])
        try:
            preview = preview_rollback(audit)
            forced = preview_rollback(audit, force=True) if preview.conflict is not None else None
        except GuardianError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(change_url)
        shown = forced or preview
        if form.is_bound:  # A form with errors: shown again, with the file's hash as it is now.
            data = form.data.copy()
            data["seen_hash"] = shown.content_hash
            data.pop("force", None)
            form = RollbackForm(data)
            form.is_valid()
        else:
            form = RollbackForm(initial={**form.initial, "seen_hash": shown.content_hash})
        conflict = preview.conflict
        details = (conflict.details or {}) if conflict else {}
        context = self._context(
            request,
            audit,
            f"Roll back {audit.id}?",
            form=form,
            note=note,
            conflict=conflict,
            conflict_diffs=details.get("conflicts", []),
            later=[
                {
                    **v,
                    "url": reverse("admin:guardian_app_writeguardianaudit_change", args=[v["audit_id"]])
                    if v.get("audit_id")
                    else "",
                }
                for v in details.get("later_versions", [])
            ],
            preview=preview,
            preview_diff=diff_html(preview.change.diff),
            forced=forced,
            forced_diff=diff_html(forced.change.diff) if forced else "",
        )
        status = 409 if conflict is not None and request.method == "POST" else 200
        return TemplateResponse(request, "admin/guardian_app/rollback_confirm.html", context, status=status)

    def retry_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_retry_permission(request):
            raise PermissionDenied
        audit = get_object_or_404(WriteGuardianAudit, id=object_id)
        if request.method == "POST":
            form = RetryForm(request.POST)
            if form.is_valid():
                try:
                    new = retry_write(
                        audit,
                        candidate_fact=form.cleaned_data["candidate_fact"],
                        target_file=form.cleaned_data["target_file"],
                        requested_by=request.user.get_username(),
                    )
                except GuardianError as exc:
                    self.message_user(request, str(exc), messages.ERROR)
                else:
                    level = messages.SUCCESS if new.status == Status.WRITTEN else messages.WARNING
                    self.message_user(request, f"Retry {new.id}: {new.status} — {new.reason}", level)
                    return HttpResponseRedirect(reverse("admin:guardian_app_writeguardianaudit_change", args=[new.id]))
        else:
            form = RetryForm(initial={"candidate_fact": audit.candidate_fact, "target_file": audit.target_file})
        return TemplateResponse(
            request,
            "admin/guardian_app/retry_confirm.html",
            self._context(request, audit, f"Retry {audit.id}?", form=form),
        )

    def correct_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_correct_permission(request):
            raise PermissionDenied
        audit = get_object_or_404(WriteGuardianAudit, id=object_id)
        if request.method == "POST":
            form = CorrectionForm(request.POST)
            if form.is_valid():
                data = form.cleaned_data
                try:
                    correction = correct_audit(
                        audit,
                        status=data["status"],
                        reason=data["reason"],
                        corrected_by=request.user.get_username(),
                        candidate_fact=data["candidate_fact"] or None,
                        target_file=data["target_file"] or None,
                        apply_to_future=data["apply_to_future"],
                        pattern=data["correction_pattern"] or None,
                    )
                except GuardianError as exc:
                    form.add_error(None, str(exc))
                else:
                    pattern = f" (pattern: {correction.correction_pattern})" if correction.apply_to_future else ""
                    self.message_user(request, f"Correction recorded{pattern}.", messages.SUCCESS)
                    return HttpResponseRedirect(
                        reverse("admin:guardian_app_writeguardianaudit_change", args=[audit.id])
                    )
        else:
            suggested = "refused" if audit.status in (Status.WRITTEN, Status.ROLLED_BACK) else "written"
            form = CorrectionForm(
                initial={"status": suggested, "correction_pattern": derive_pattern(audit.candidate_fact)}
            )
        return TemplateResponse(
            request,
            "admin/guardian_app/correct_audit.html",
            self._context(request, audit, f"Correct {audit.id}", form=form),
        )

    def file_history_view(self, request: HttpRequest, file_name: str) -> HttpResponse:
        """A file's timeline: every version newest first, with its kind, diff, and links. (Not ``history_view``:
        that is Django's own page of an audit's admin log entries, behind each audit's "History" button.)"""
        if not (self.has_view_permission(request) or request.user.has_perm("guardian_app.view_fileversion")):
            raise PermissionDenied
        try:
            file_name = paths.canonical_name(file_name)
        except GuardianError as exc:
            raise Http404("Unknown memory file.") from exc
        try:
            with locks.file_lock(file_name):
                history.reconcile(file_name)
        except GuardianError:
            pass
        limit = 200
        versions = list(file_history(file_name)[: limit + 1])
        rows = [
            {
                "version": v,
                "badge": status_badge(v.kind),
                "diff": diff_html(v.diff),
                "audit_url": reverse("admin:guardian_app_writeguardianaudit_change", args=[v.audit_id])
                if v.audit_id
                else "",
                "fact": v.audit.candidate_fact if v.audit_id else "",
            }
            for v in versions[:limit]
        ]
        try:
            state = workspace.current_state(file_name)
        except UnsafeFile as exc:  # The history stays readable; the file itself is not read (a drift finding).
            self.message_user(request, str(exc), messages.ERROR)
            state = {"exists": False, "unsafe": exc.found}
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": f"History of {file_name}",
            "file_name": file_name,
            "files": memory_files.active().files,
            "rows": rows,
            "truncated": len(versions) > limit,
            "state": state,
            "diff_style": DIFF_STYLE,
        }
        return TemplateResponse(request, "admin/guardian_app/file_history.html", context)

    # Bulk action ---------------------------------------------------------------------------------
    @admin.action(description="Roll back selected writes", permissions=["rollback"])
    def rollback_selected(self, request: HttpRequest, queryset: QuerySet[WriteGuardianAudit]) -> HttpResponse | None:
        audits = list(queryset.order_by("-created_at", "-id"))
        written = [a for a in audits if a.status == Status.WRITTEN]
        if request.POST.get("confirm") == "yes":
            form = BulkRollbackForm(request.POST)
            if form.is_valid():
                done, failed, changes = 0, [], []
                for audit in written:  # Newest first, so a later write is undone before an earlier one.
                    try:
                        rollback = rollback_write(
                            audit, reason=form.cleaned_data["reason"], requested_by=request.user.get_username()
                        )
                        done += 1
                        changes.append(rollback.change)
                    except GuardianError as exc:
                        failed.append(f"{audit.id}: {exc}")
                if done:
                    removed = sum(len(c.removed) for c in changes)
                    restored = sum(len(c.restored) for c in changes)
                    unchanged = sum(1 for c in changes if not c.changed)
                    tail = f"; {unchanged} of them changed nothing (their lines were already gone)" if unchanged else ""
                    self.message_user(
                        request,
                        f"Rolled back {done} write(s): {removed} line(s) removed, {restored} restored{tail}.",
                        messages.SUCCESS,
                    )
                for line in failed:
                    self.message_user(request, line, messages.ERROR)
                return None
        else:
            form = BulkRollbackForm()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": "Roll back the selected writes?",
            "audits": audits,
            "written": written,
            "skipped": [a for a in audits if a.status != Status.WRITTEN],
            "form": form,
            "action": "rollback_selected",
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/guardian_app/rollback_bulk.html", context)


# --- Corrections ---------------------------------------------------------------------------------
class BehaviorCorrectionForm(forms.ModelForm):
    corrected_status = forms.ChoiceField(choices=[("refused", "refused"), ("written", "written")])

    class Meta:
        model = BehaviorCorrection
        fields = [
            "audit", "corrected_status", "corrected_candidate_fact", "corrected_target_file", "correction_reason",
            "apply_to_future", "correction_pattern", "active",
        ]  # fmt: skip


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
