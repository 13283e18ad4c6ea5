"""The rollback console's pages: each confirmation page runs the domain function the API calls (``rollback_write``
as a dry run first, ``retry_write``, ``correct_audit``) and shows what it did or why it refused."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from guardian_app.admin.forms import BulkRollbackForm, CorrectionForm, RetryForm, RollbackForm
from guardian_app.admin.rendering import (
    DIFF_STYLE,
    diff_html,
    status_badge,
)
from guardian_app.errors import GuardianError, RollbackConflict, UnsafeFile
from guardian_app.models import (
    WriteGuardianAudit,
)
from guardian_app.queries import file_history
from guardian_app.write import history, locks, paths, workspace
from guardian_app.write.corrections import correct_audit, derive_pattern
from guardian_app.write.guardian import retry_write
from guardian_app.write.rollback import RollbackStale, preview_rollback, rollback_write
from reflection_site import memory_files

Status = WriteGuardianAudit.Status


class AuditPages:
    """The audit console's pages beside the change form: rollback, retry and correction behind confirmation
    pages, a file's history, and the bulk rollback action. Mixed into ``WriteGuardianAuditAdmin``."""

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
                        about=data["about"].strip() or None,
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
