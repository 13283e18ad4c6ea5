"""Reflect in the admin: runs (with a "Run reflect now" button), opinions with their evidence, the skill draft
review list (approve writes skills/<name>/SKILL.md, reject records why), job checkpoints, webhook deliveries,
and the day's change report on the admin index page.

A run's page writes are ordinary write-guardian audits: its page links to each audit, whose page shows the
diff and offers the rollback (for those allowed to roll back).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from guardian_app.models import Opinion, OpinionEvidence, ReflectRun, ReportDelivery, SkillDraft
from guardian_app.reflect.reflect import REFLECT_TASK, InvalidReflectRequest, start_run
from guardian_app.reflect.skills import NAME_RE, SkillError, approve_draft, refresh_content, reject_draft
from reflection_site.admin import BigTableMixin, ReadOnlyAdmin, ReadOnlyInline
from reflection_site.celery import enqueue_on_commit
from reflection_site.models import JobCheckpoint

# The admin index shows the day's change report (guardian_app/templatetags/reflect_admin.py).
admin.site.index_template = "admin/guardian_app/reflect_index.html"


def _badge(status: str) -> SafeString:
    colours = {
        "done": "#1a7f37",
        "written": "#1a7f37",
        "approved": "#1a7f37",
        "delivered": "#1a7f37",
        "running": "#0969da",
        "queued": "#6e7781",
        "pending": "#6e7781",
        "unchanged": "#6e7781",
        "skipped": "#6e7781",
        "failed": "#cf222e",
        "refused": "#9a6700",
        "rejected": "#9a6700",
        "rolled_back": "#8250df",
    }
    return format_html(
        '<span style="display:inline-block;padding:1px 7px;border-radius:9px;font-size:11px;color:#fff;'
        'background:{}">{}</span>',
        colours.get(status, "#6e7781"),
        status,
    )


class RunReflectForm(forms.Form):
    since = forms.CharField(
        required=False, max_length=40, help_text="30d, 12h, 1w or an ISO date; empty: since the last run."
    )
    dry_run = forms.BooleanField(required=False, help_text="Only show what would change.")


@admin.register(ReflectRun)
class ReflectRunAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "status_badge",
        "since",
        "until",
        "dry_run",
        "facts_count",
        "pages_written",
        "opinions_created",
        "opinions_updated",
        "requested_by",
        "finished_at",
    ]
    list_filter = ["status", "dry_run"]
    search_fields = ["=id", "requested_by"]
    ordering = ["-created_at"]
    show_full_result_count = False
    change_list_template = "admin/guardian_app/reflectrun/change_list.html"
    fields = [
        "id", "status_badge", "stage", "since", "until", "dry_run", "requested_by", "facts_count", "entities_count",
        "pages_col", "opinion_moves_col", "memory_proposals", "skill_drafts", "excluded_col", "llm_model", "error",
        "created_at", "started_at", "finished_at",
    ]  # fmt: skip
    readonly_fields = fields

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: ReflectRun) -> SafeString:
        return _badge(obj.status)

    @admin.display(description="pages")
    def pages_col(self, obj: ReflectRun) -> SafeString | str:
        rows = []
        for page in (obj.stats or {}).get("pages", []):
            audit_id = page.get("audit_id")
            link = (
                format_html(
                    '<a href="{}">{}</a>',
                    reverse("admin:guardian_app_writeguardianaudit_change", args=[audit_id]),
                    audit_id,
                )
                if audit_id
                else "—"
            )
            what = page.get("page") if page.get("type") != "memory" else f"MEMORY.md: {page.get('fact', '')[:80]}"
            change = f"+{page.get('lines_added', 0)} −{page.get('lines_removed', 0)}" if "lines_added" in page else ""
            rows.append((_badge(page.get("status", "")), what, change, link, page.get("reason", "")))
        if not rows:
            return "—"
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows)
        return format_html(
            "<table><thead><tr><th>outcome</th><th>page</th><th>lines</th><th>audit (diff, rollback)</th>"
            "<th>reason</th></tr></thead><tbody>{}</tbody></table>",
            body,
        )

    @admin.display(description="opinions moved")
    def opinion_moves_col(self, obj: ReflectRun) -> SafeString | str:
        moves = (obj.stats or {}).get("moves", [])
        if not moves:
            return "—"
        rows = [
            (
                m.get("entity") or "—",
                m.get("statement", ""),
                "new" if m.get("created") else m.get("stance", ""),
                f"{m.get('before', 0):.2f} → {m.get('after', 0):.2f}",
                m.get("source", ""),
            )
            for m in moves[:100]
        ]
        return format_html(
            "<table><tbody>{}</tbody></table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>", rows),
        )

    @admin.display(description="left out")
    def excluded_col(self, obj: ReflectRun) -> SafeString | str:
        items = (obj.stats or {}).get("excluded", [])
        if not items:
            return "—"
        return format_html_join(
            mark_safe("<br>"), "<code>{}</code>: {}", ((i.get("source", ""), i.get("reason", "")) for i in items[:50])
        )

    def has_run_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("guardian_app.run_reflectrun")

    def get_urls(self) -> list[URLPattern]:
        return [
            path("run/", self.admin_site.admin_view(self.run_view), name="guardian_app_reflectrun_run"),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        extra = {"can_run": self.has_run_permission(request), "run_form": RunReflectForm(), **(extra_context or {})}
        return super().changelist_view(request, extra)

    def run_view(self, request: HttpRequest) -> HttpResponse:
        """The "Run reflect now" button: a queued run for a worker (POST only)."""
        if not self.has_run_permission(request):
            raise PermissionDenied
        changelist = reverse("admin:guardian_app_reflectrun_changelist")
        if request.method != "POST":
            return HttpResponseRedirect(changelist)
        form = RunReflectForm(request.POST)
        if not form.is_valid():
            self.message_user(request, "The reflect form is not valid.", messages.ERROR)
            return HttpResponseRedirect(changelist)
        try:
            run = start_run(
                since=form.cleaned_data["since"] or None,
                dry_run=form.cleaned_data["dry_run"],
                requested_by=request.user.get_username(),
            )
        except InvalidReflectRequest as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(changelist)
        enqueue_on_commit(REFLECT_TASK, run.id)  # A dead broker leaves the run queued for the resume sweep.
        self.message_user(
            request,
            format_html(
                'Reflect run <a href="{}">{}</a> queued ({} to {}); a worker runs it.',
                reverse("admin:guardian_app_reflectrun_change", args=[run.id]),
                run.id,
                f"{run.since:%Y-%m-%d %H:%M}",
                f"{run.until:%Y-%m-%d %H:%M}",
            ),
            messages.SUCCESS,
        )
        return HttpResponseRedirect(changelist)


class OpinionEvidenceInline(ReadOnlyInline):
    model = OpinionEvidence
    fields = ["stance", "strength", "confidence_before", "confidence_after", "source", "content", "fact_date", "run"]
    readonly_fields = fields
    ordering = ["fact_date", "id"]


@admin.register(Opinion)
class OpinionAdmin(ReadOnlyAdmin):
    list_display = [
        "entity",
        "statement",
        "confidence_bar",
        "supporting_count",
        "contradicting_count",
        "last_updated",
    ]
    list_filter = ["entity"]
    search_fields = ["entity", "statement"]
    ordering = ["entity_key", "-confidence"]
    show_full_result_count = False
    inlines = [OpinionEvidenceInline]
    fields = [
        "entity",
        "statement",
        "confidence",
        "supporting_count",
        "contradicting_count",
        "contradiction_streak",
        "source",
        "created_by_run",
        "created_at",
        "last_updated",
    ]
    readonly_fields = fields

    @admin.display(description="confidence", ordering="confidence")
    def confidence_bar(self, obj: Opinion) -> SafeString:
        width = int(round(obj.confidence * 100))
        return format_html(
            '<span title="{}" style="display:inline-block;width:80px;height:8px;background:var(--hairline-color);'
            'border-radius:4px;vertical-align:middle"><span style="display:block;width:{}%;height:8px;'
            'background:#0969da;border-radius:4px"></span></span> {}',
            f"{obj.confidence:.4f}",
            width,
            f"{obj.confidence:.2f}",
        )


class SkillDraftForm(forms.ModelForm):
    triggers_text = forms.CharField(
        label="Triggers", widget=forms.Textarea(attrs={"rows": 4}), required=False, help_text="One a line."
    )
    steps_text = forms.CharField(label="Steps", widget=forms.Textarea(attrs={"rows": 6}), help_text="One a line.")

    class Meta:
        model = SkillDraft
        fields = ["name", "description"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["triggers_text"].initial = "\n".join(self.instance.triggers or [])
            self.fields["steps_text"].initial = "\n".join(self.instance.steps or [])

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not NAME_RE.match(name):
            raise forms.ValidationError("Lower-case letters, digits and hyphens, at most 64.")
        return name

    def save(self, commit: bool = True) -> SkillDraft:
        draft = super().save(commit=False)
        draft.triggers = [t.strip() for t in self.cleaned_data["triggers_text"].splitlines() if t.strip()]
        draft.steps = [s.strip() for s in self.cleaned_data["steps_text"].splitlines() if s.strip()]
        refresh_content(draft)
        if commit:
            draft.save()
        return draft


class RejectForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), help_text="Why this is not a skill.")


@admin.register(SkillDraft)
class SkillDraftAdmin(BigTableMixin, admin.ModelAdmin):
    """The review list: a pending draft can be edited, then approved (written to skills/) or rejected."""

    form = SkillDraftForm
    list_display = ["name", "status_badge", "confidence", "hits", "source", "created_at", "reviewed_by"]
    list_filter = ["status"]
    search_fields = ["name", "description", "source_text"]
    ordering = ["status", "-created_at"]
    actions = ["approve_selected", "reject_selected"]
    change_form_template = "admin/guardian_app/skilldraft/change_form.html"
    readonly_fields = [
        "status_badge",
        "confidence",
        "source",
        "source_text",
        "hits",
        "preview",
        "llm_model",
        "reviewed_by",
        "reviewed_at",
        "review_reason",
        "written_path",
        "run",
        "created_at",
    ]

    def get_fields(self, request: HttpRequest, obj: SkillDraft | None = None) -> list[str]:
        editable = ["name", "description", "triggers_text", "steps_text"]
        if obj is not None and obj.status != SkillDraft.Status.PENDING:
            editable = ["name", "description"]
        return [*editable, *self.readonly_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: SkillDraft | None = None) -> list[str]:
        if obj is not None and obj.status != SkillDraft.Status.PENDING:
            return ["name", "description", *self.readonly_fields]
        return list(self.readonly_fields)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # Drafts come from reflect, never typed in.

    def has_change_permission(self, request: HttpRequest, obj: SkillDraft | None = None) -> bool:
        return self.has_review_permission(request)

    def has_review_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("guardian_app.review_skilldraft")

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: SkillDraft) -> SafeString:
        return _badge(obj.status)

    @admin.display(description="source pattern")
    def source(self, obj: SkillDraft) -> str:
        lines = f"L{obj.source_start_line}"
        if obj.source_end_line != obj.source_start_line:
            lines += f"-L{obj.source_end_line}"
        return f"{obj.source_path}#{lines}"

    @admin.display(description="SKILL.md")
    def preview(self, obj: SkillDraft) -> SafeString:
        return format_html('<pre style="white-space:pre-wrap;max-width:900px">{}</pre>', obj.content)

    # Review ------------------------------------------------------------------------------------------
    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<str:object_id>/approve/", wrap(self.approve_view), name="guardian_app_skilldraft_approve"),
            path("<str:object_id>/reject/", wrap(self.reject_view), name="guardian_app_skilldraft_reject"),
            *super().get_urls(),
        ]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        draft = self.get_object(request, object_id)
        extra = dict(extra_context or {})
        if draft is not None:
            extra["can_review"] = self.has_review_permission(request) and draft.status == SkillDraft.Status.PENDING
            extra["reject_form"] = RejectForm()
        return super().change_view(request, object_id, form_url, extra)

    def approve_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_review_permission(request):
            raise PermissionDenied
        draft = get_object_or_404(SkillDraft, id=object_id)
        change_url = reverse("admin:guardian_app_skilldraft_change", args=[draft.id])
        if request.method != "POST":
            return HttpResponseRedirect(change_url)
        try:
            draft = approve_draft(draft, reviewed_by=request.user.get_username())
        except SkillError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(change_url)
        self.message_user(request, f"Approved: written to {draft.written_path}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:guardian_app_skilldraft_changelist"))

    def reject_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_review_permission(request):
            raise PermissionDenied
        draft = get_object_or_404(SkillDraft, id=object_id)
        change_url = reverse("admin:guardian_app_skilldraft_change", args=[draft.id])
        form = RejectForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                reject_draft(draft, reviewed_by=request.user.get_username(), reason=form.cleaned_data["reason"])
            except SkillError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                return HttpResponseRedirect(change_url)
            self.message_user(request, f"Rejected {draft.name}.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:guardian_app_skilldraft_changelist"))
        return TemplateResponse(
            request,
            "admin/guardian_app/skilldraft/reject.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": f"Reject the skill draft {draft.name}?",
                "drafts": [draft],
                "form": form,
                "action_url": reverse("admin:guardian_app_skilldraft_reject", args=[draft.id]),
                "cancel_url": change_url,
            },
        )

    @admin.action(description="Approve selected drafts (write skills/<name>/SKILL.md)", permissions=["review"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[SkillDraft]) -> None:
        done = 0
        for draft in queryset.filter(status=SkillDraft.Status.PENDING).order_by("created_at"):
            try:
                approve_draft(draft, reviewed_by=request.user.get_username())
                done += 1
            except SkillError as exc:
                self.message_user(request, f"{draft.name}: {exc.message}", messages.ERROR)
        if done:
            self.message_user(request, f"Approved {done} draft(s).", messages.SUCCESS)

    @admin.action(description="Reject selected drafts…", permissions=["review"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[SkillDraft]) -> HttpResponse | None:
        pending = list(queryset.filter(status=SkillDraft.Status.PENDING).order_by("created_at"))
        if request.POST.get("confirm") == "yes":
            form = RejectForm(request.POST)
            if form.is_valid():
                for draft in pending:
                    reject_draft(draft, reviewed_by=request.user.get_username(), reason=form.cleaned_data["reason"])
                self.message_user(request, f"Rejected {len(pending)} draft(s).", messages.SUCCESS)
                return None
        else:
            form = RejectForm()
        return TemplateResponse(
            request,
            "admin/guardian_app/skilldraft/reject.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Reject the selected skill drafts?",
                "drafts": pending,
                "form": form,
                "action": "reject_selected",
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
                "cancel_url": reverse("admin:guardian_app_skilldraft_changelist"),
            },
        )


@admin.register(JobCheckpoint)
class JobCheckpointAdmin(ReadOnlyAdmin):
    list_display = ["job", "key", "stage", "processed_index", "owner", "attempts", "updated_at", "finished_at"]
    list_filter = ["job", "stage"]
    search_fields = ["=key"]
    ordering = ["-updated_at"]
    exclude = ["candidates"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[JobCheckpoint]:
        return super().get_queryset(request).defer("candidates", "state")


@admin.register(ReportDelivery)
class ReportDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["day", "kind", "status_badge", "attempts", "target", "delivered_at", "last_error"]
    list_filter = ["status", "kind"]
    ordering = ["-day"]

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: ReportDelivery) -> SafeString:
        return _badge(obj.status)
