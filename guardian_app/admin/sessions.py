"""The guardian's parts of a session's admin page (issue 23): each decision's writes in the turns' list, and "Roll back
this session" behind a dry-run confirmation that shows each file's exact diff or the conflicts; operators only.

sessions_app's ``ConversationSessionAdmin`` knows nothing of the guardian (issue 20: imports only go down); this
module extends it and registers the extension in its place.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from guardian_app.admin.rendering import DIFF_STYLE, diff_html
from guardian_app.errors import GuardianError
from guardian_app.models import WriteGuardianAudit
from guardian_app.write.diffs import unified_diff
from guardian_app.write.session_rollback import SessionRollback, rollback_session
from sessions_app.admin import ConversationSessionAdmin
from sessions_app.models import ConversationSession

ROLLBACK_TEMPLATE = "admin/guardian_app/session_rollback_confirm.html"


def can_rollback(request: HttpRequest) -> bool:
    """The operator group's permission: the same as a single audit's rollback."""
    return request.user.has_perm("guardian_app.rollback_writeguardianaudit")


def audit_url(audit_id: str) -> str:
    return reverse("admin:guardian_app_writeguardianaudit_change", args=[quote(audit_id)])


class SessionRollbackForm(forms.Form):
    reason = forms.CharField(max_length=500, widget=forms.TextInput(attrs={"size": 60}))
    partial = forms.BooleanField(required=False, label="Roll back the clean writes only and leave the conflicts")
    seen = forms.CharField(widget=forms.HiddenInput, required=False)


@dataclass
class FileDiff:
    name: str
    diff: str
    html: Any
    removed: bool  # The session's writes created the file: the rollback removes it.


def file_diffs(result: SessionRollback) -> list[FileDiff]:
    """Each file's whole change by the session rollback: the file now against the file after every clean
    write of the dry run is reverted (the plans are chained per file, newest write first)."""
    before: dict[str, str | None] = {}
    after: dict[str, str | None] = {}
    for item in result.items:
        name = item.audit.target_file
        before.setdefault(name, item.current)
        if item.status == "clean" and item.plan is not None:
            after[name] = item.plan.content
    diffs = []
    for name in sorted(after):
        text = unified_diff(before[name], after[name], name)
        diffs.append(FileDiff(name, text, diff_html(text), before[name] is not None and after[name] is None))
    return diffs


def dry_run_digest(result: SessionRollback, diffs: list[FileDiff]) -> str:
    """What the confirmation page showed, so a confirmation applies only to that dry run."""
    shown = [(i.audit.id, i.status) for i in result.items] + [(d.name, d.diff) for d in diffs]
    return hashlib.sha256(json.dumps(shown).encode()).hexdigest()


class GuardedSessionAdmin(ConversationSessionAdmin):
    """Sessions with the writes their turns caused and the operators' "Roll back this session"."""

    def decision_writes(self, decision_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Each decision's audits (its write and any retries), oldest first, linked: one query."""
        writes: dict[str, list[dict[str, Any]]] = {}
        audits = WriteGuardianAudit.objects.filter(decision_id__in=decision_ids)
        for audit in audits.only("id", "decision_id", "status", "target_file").order_by("created_at", "id"):
            writes.setdefault(audit.decision_id, []).append({"audit": audit, "url": audit_url(audit.id)})
        return writes

    def session_context(self, request: HttpRequest, session: ConversationSession) -> dict[str, Any]:
        return {
            **super().session_context(request, session),
            "can_rollback_session": can_rollback(request),
            "rollback_url": reverse("admin:sessions_app_conversationsession_rollback", args=[quote(session.pk)]),
        }

    def get_urls(self) -> list[Any]:
        rollback = path(
            "<path:object_id>/rollback/",
            self.admin_site.admin_view(self.rollback_view),
            name="sessions_app_conversationsession_rollback",
        )
        return [rollback, *super().get_urls()]

    def rollback_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Confirmation page: ``rollback_session`` as a dry run, with each file's exact diff and each write's
        conflict; a confirmation applies only to the dry run that was shown (else the new one is shown)."""
        if not can_rollback(request):
            raise PermissionDenied
        session = get_object_or_404(ConversationSession, id=unquote(object_id))
        change_url = reverse("admin:sessions_app_conversationsession_change", args=[quote(session.pk)])
        user = request.user.get_username()
        note, status = "", 200
        try:
            shown = rollback_session(session.id, reason="dry run in the admin", requested_by=user, dry_run=True)
            diffs = file_diffs(shown)
            form = SessionRollbackForm(request.POST) if request.method == "POST" else SessionRollbackForm()
            if form.is_bound and form.is_valid():
                partial = form.cleaned_data["partial"]
                if form.cleaned_data["seen"] != dry_run_digest(shown, diffs):
                    note = (
                        "The files or the session's writes changed since this page was shown: this is the dry run now."
                    )
                elif shown.conflicts and not partial:
                    note, status = "Conflicts stop a rollback of the whole session: nothing was changed.", 409
                else:
                    done = rollback_session(
                        session.id, reason=form.cleaned_data["reason"], requested_by=user, partial=partial
                    )
                    self.message_user(request, done.summary(), messages.SUCCESS if done.applied else messages.WARNING)
                    return HttpResponseRedirect(change_url)
        except GuardianError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(change_url)
        context = {
            **self.admin_site.each_context(request),
            **self.rollback_context(shown, diffs, self.form_again(form, dry_run_digest(shown, diffs))),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": f"Roll back session {session.id}?",
            "session": session,
            "change_url": change_url,
            "note": note,
        }
        return TemplateResponse(request, ROLLBACK_TEMPLATE, context, status=status)

    @staticmethod
    def form_again(form: SessionRollbackForm, seen: str) -> SessionRollbackForm:
        """The form for the dry run as it is now: a posted one keeps its reason (and its errors, if any)."""
        if not form.is_bound:
            return SessionRollbackForm(initial={"seen": seen})
        data = form.data.copy()
        data["seen"] = seen
        data.pop("partial", None)
        form = SessionRollbackForm(data)
        form.is_valid()
        return form

    @staticmethod
    def rollback_context(shown: SessionRollback, diffs: list[FileDiff], form: SessionRollbackForm) -> dict[str, Any]:
        """The dry run's rows (each write linked, with the later writes it conflicts with), diffs and form."""
        items = [
            {
                "item": item,
                "url": audit_url(item.audit.id),
                "later": [(a, audit_url(a)) for a in (item.conflict.later_audits if item.conflict else [])],
            }
            for item in shown.items
        ]
        clean = [i for i in shown.items if i.status == "clean"]
        return {
            "result": shown,
            "items": items,
            "diffs": diffs,
            "clean_count": len(clean),
            "form": form,
            "diff_style": DIFF_STYLE,
        }


admin.site.unregister(ConversationSession)
admin.site.register(ConversationSession, GuardedSessionAdmin)
