"""Conversations in the admin: sessions with their turn counts, turns with their context windows.

A session's page lists its turns; the writes they caused and "Roll back this session" are the guardian's, added by
guardian_app/admin/sessions.py, which registers its extension of ``ConversationSessionAdmin`` in this one's place."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets, quote, unquote
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from import_export import fields, resources
from import_export.admin import ExportMixin
from import_export.formats.base_formats import CSV, JSON, XLSX

from reflection_site.admin import ReadOnlyAdmin, ReadOnlyInline, recent_values_filter
from sessions_app.charts import daily_decisions_svg
from sessions_app.gate import rerun_gate
from sessions_app.models import (
    ConversationContext,
    ConversationSession,
    ConversationTurn,
    Decision,
    GateStatus,
    MemoryGateDecision,
    WorkspaceOwner,
)
from sessions_app.queries import latency_by_decision
from sessions_app.stats import daily_stats

# The lists' layout at laptop width and the truncated ids' titles (static files: the CSP allows no inline code).
CONSOLE_CSS = "sessions_app/console.css"
CONSOLE_JS = "sessions_app/console.js"
TURNS_PER_PAGE = 20


def truncated(text: str | None, limit: int) -> str:
    """A changelist cell: at most ``limit`` characters, the whole text on hover (its title)."""
    text = text or ""
    if len(text) <= limit:
        return format_html('<span title="{}">{}</span>', text, text) if text else ""
    return format_html('<span title="{}">{}…</span>', text, text[: limit - 1])


@admin.register(ConversationSession)
class ConversationSessionAdmin(ReadOnlyAdmin):
    """Sessions; a session's page lists its turns (newest first, paginated) with their gate decisions
    (guardian_app's ``GuardedSessionAdmin`` adds the writes they caused and "Roll back this session")."""

    list_display = ["id", "channel_id", "conversation_target", "turn_count", "last_activity_at", "created_at"]
    list_filter = ["channel_id"]
    search_fields = ["=id", "id", "=channel_id"]
    show_full_result_count = False
    date_hierarchy = None
    ordering = ["-last_activity_at"]
    change_form_template = "admin/sessions_app/conversationsession/change_form.html"

    class Media:
        css = {"all": [CONSOLE_CSS]}
        js = [CONSOLE_JS]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ConversationSession]:
        # A correlated count runs only for the rows on the page, not a GROUP BY over every turn.
        turns = (
            ConversationTurn.objects.filter(session=OuterRef("pk"))
            .order_by()
            .values("session")
            .annotate(n=Count("id"))
            .values("n")
        )
        return super().get_queryset(request).annotate(_turn_count=Subquery(turns, output_field=IntegerField()))

    @admin.display(description="turns", ordering="_turn_count")
    def turn_count(self, obj: ConversationSession) -> int:
        return obj._turn_count or 0

    def decision_writes(self, decision_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """The writes each decision caused, as ``{"audit", "url"}`` rows for the turns' "writes" column: none
        here; guardian_app's session admin (guardian_app/admin/sessions.py) lists its audits."""
        return {}

    def session_context(self, request: HttpRequest, session: ConversationSession) -> dict[str, Any]:
        """What the session's page adds to the change form: a page of its turns (guardian_app adds its rollback)."""
        page, rows = self.turn_rows(session, request.GET.get("turns_page"))
        return {"turn_page": page, "turn_rows": rows}

    def turn_rows(self, session: ConversationSession, page_number: Any) -> tuple[Any, list[dict[str, Any]]]:
        """One page of the session's turns, newest first, each with its decisions and their audits (three
        queries and the page's count, whatever the page size)."""
        turns = ConversationTurn.objects.filter(session=session).order_by("-turn_number", "-created_at")
        page = Paginator(turns.only("id", "turn_number", "created_at", "user_message_content", "gate_status"),
                         TURNS_PER_PAGE).get_page(page_number)  # fmt: skip
        ids = [turn.id for turn in page]
        decisions: dict[str, list[MemoryGateDecision]] = {}
        rows = MemoryGateDecision.objects.filter(turn_id__in=ids).defer("raw_response").order_by("-run_number")
        for decision in rows:
            decisions.setdefault(decision.turn_id, []).append(decision)
        writes = self.decision_writes([d.id for ds in decisions.values() for d in ds])
        out = []
        for turn in page:
            out.append(
                {
                    "turn": turn,
                    "url": reverse("admin:sessions_app_conversationturn_change", args=[quote(turn.id)]),
                    "message": truncated(turn.user_message_content, 140),
                    "decisions": [
                        {
                            "decision": d,
                            "url": reverse("admin:sessions_app_memorygatedecision_change", args=[quote(d.id)]),
                            "fact": truncated(d.candidate_fact or d.reason, 120),
                            "audits": writes.get(d.id, []),
                        }
                        for d in decisions.get(turn.id, [])
                    ],
                }
            )
        return page, out

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        extra = dict(extra_context or {})
        session = self.get_object(request, unquote(object_id))
        if session is not None and self.has_view_permission(request, session):
            extra.update(self.session_context(request, session))
        return super().change_view(request, object_id, form_url, extra)


class ContextInline(ReadOnlyInline):
    model = ConversationContext
    fields = ["sequence_number", "role", "message", "timestamp"]
    readonly_fields = fields
    ordering = ["sequence_number"]


def _can_rerun_gate(request: HttpRequest) -> bool:
    # Operators hold "Can change conversation turn"; the admin itself never edits a turn's content.
    return request.user.has_perm("sessions_app.change_conversationturn")


class DecisionInline(ReadOnlyInline):
    model = MemoryGateDecision
    fk_name = "turn"
    fields = ["decision_link", "run_number", "decision", "candidate_fact", "llm_model", "llm_latency_ms", "created_at"]
    readonly_fields = fields
    ordering = ["-run_number"]
    verbose_name_plural = "gate decisions"

    @admin.display(description="decision id")
    def decision_link(self, obj: MemoryGateDecision) -> str:
        url = reverse("admin:sessions_app_memorygatedecision_change", args=[obj.id])
        return format_html('<a href="{}">{}</a>', url, obj.id)

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryGateDecision]:
        return super().get_queryset(request).defer("raw_response")


@admin.register(ConversationTurn)
class ConversationTurnAdmin(ReadOnlyAdmin):
    list_display = ["id", "session_col", "turn_number", "short_user_message", "gate_status", "gate_error", "created_at"]
    list_filter = ["gate_status", "created_at"]
    list_select_related = ["session"]
    search_fields = ["=id", "=session__id", "=user_message_id"]
    show_full_result_count = False
    ordering = ["-created_at"]
    inlines = [ContextInline, DecisionInline]
    actions = ["run_gate_again"]
    change_form_template = "admin/sessions_app/conversationturn/gate_change_form.html"

    class Media:
        css = {"all": [CONSOLE_CSS]}
        js = [CONSOLE_JS]

    fields = [
        "id",
        "session",
        "turn_number",
        "created_at",
        "user_message_id",
        "user_from",
        "user_message_content",
        "user_metadata",
        "agent_message_id",
        "agent_message_content",
        "agent_metadata",
        "gate_status",
        "gate_run",
        "gate_attempts",
        "gate_last_error",
        "gate_enqueued_at",
        "gate_finished_at",
        "feedback_json",
    ]
    readonly_fields = fields

    @admin.display(description="user message")
    def short_user_message(self, obj: ConversationTurn) -> str:
        return truncated(obj.user_message_content, 90)

    @admin.display(description="session", ordering="session_id")
    def session_col(self, obj: ConversationTurn) -> str:
        return format_html('<span title="{}">{}</span>', obj.session_id, obj.session_id)

    @admin.display(description="gate error")
    def gate_error(self, obj: ConversationTurn) -> str:
        return truncated(obj.gate_last_error.splitlines()[0] if obj.gate_last_error else "", 80)

    @admin.action(description="Run the memory gate again on selected turns", permissions=["rerun_gate"])
    def run_gate_again(self, request: HttpRequest, queryset: QuerySet[ConversationTurn]) -> None:
        count = 0
        for turn in queryset.select_related(None).only("id"):
            rerun_gate(turn)
            count += 1
        self.message_user(request, f"The gate will run again on {count} turn(s).", messages.SUCCESS)

    def has_rerun_gate_permission(self, request: HttpRequest) -> bool:
        return _can_rerun_gate(request)

    def get_urls(self) -> list[Any]:
        rerun = path(
            "<path:object_id>/rerun-gate/",
            self.admin_site.admin_view(self.rerun_gate_view),
            name="sessions_app_conversationturn_rerun_gate",
        )
        return [rerun, *super().get_urls()]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        extra_context = {**(extra_context or {}), "can_rerun_gate": _can_rerun_gate(request)}
        return super().change_view(request, object_id, form_url, extra_context)

    def rerun_gate_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A confirmation page; on POST a new gate run of the turn, then back to the turn."""
        turn = get_object_or_404(ConversationTurn, id=object_id)
        if not _can_rerun_gate(request):
            raise PermissionDenied
        if request.method == "POST":
            turn = rerun_gate(turn)
            self.message_user(request, f"Gate run {turn.gate_run} of this turn is queued.", messages.SUCCESS)
            return redirect("admin:sessions_app_conversationturn_change", turn.id)
        context = {
            **self.admin_site.each_context(request),
            "title": "Run the memory gate again?",
            "turn": turn,
            "opts": self.model._meta,
            "decisions": turn.decisions.defer("raw_response").order_by("-run_number"),
        }
        return TemplateResponse(request, "admin/sessions_app/conversationturn/rerun_gate.html", context)


# --- The memory gate (REQ-002) ---------------------------------------------------------------------
class MemoryGateDecisionResource(resources.ModelResource):
    """Decisions out to CSV/JSON/XLSX for annotators and analysis (the list's filters apply). No raw reply and
    no turn text: a refused value is redacted in the decision already (guardian_app/write/refusals.py)."""

    target_file = fields.Field(attribute="target_file", column_name="target_file", readonly=True)

    class Meta:
        model = MemoryGateDecision
        fields = (
            "id",
            "created_at",
            "session",
            "turn",
            "run_number",
            "decision",
            "target_file",
            "candidate_fact",
            "reason",
            "confidence",
            "llm_model",
            "llm_latency_ms",
            "prompt_tokens",
            "completion_tokens",
            "prompt_version",
        )
        export_order = fields


@admin.register(MemoryGateDecision)
class MemoryGateDecisionAdmin(ExportMixin, ReadOnlyAdmin):
    """Gate decisions with their turn and context; the list opens with a 30-day chart and mean latencies.
    Export (CSV, JSON, XLSX) takes the rows the list's filters select."""

    resource_classes = [MemoryGateDecisionResource]
    formats = [CSV, JSON, XLSX]
    # Named so that import-export's change list (with its Export button) extends it (the chart and latencies).
    change_list_template = "admin/sessions_app/memorygatedecision/change_list.html"

    class Media:
        css = {"all": [CONSOLE_CSS]}
        js = [CONSOLE_JS]

    def has_export_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    list_display = [
        "id",
        "created_at",
        "session_link",
        "turn_number",
        "decision",
        "short_fact",
        "llm_model",
        "llm_latency_ms",
        "tokens",
    ]
    list_filter = [
        "decision",
        recent_values_filter("llm_model", "LLM model (of the newest 1,000 decisions)"),
        "created_at",
        recent_values_filter("prompt_version", "prompt version (of the newest 1,000 decisions)"),
    ]
    search_fields = ["=id", "=session__id", "candidate_fact", "reason"]
    show_full_result_count = False
    ordering = ["-created_at", "-id"]
    fieldsets = [
        (None, {"fields": ["id", "decision", "target_file", "candidate_fact", "reason", "confidence", "writes"]}),
        ("Turn", {"fields": ["session_link", "turn_link", "run_number", "conversation"]}),
        (
            "LLM call",
            {
                "fields": [
                    "llm_model",
                    "llm_latency_ms",
                    "prompt_tokens",
                    "completion_tokens",
                    "prompt_version",
                    "created_at",
                ]
            },
        ),
        ("Raw reply", {"fields": ["raw_reply"], "classes": ["collapse"]}),
    ]
    readonly_fields = flatten_fieldsets(fieldsets)  # A decision is a record: every field shown is read-only.

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryGateDecision]:
        # The turn number by a correlated subquery, run for the page's rows only: a join (F("turn__...")) stayed
        # in the paginator's COUNT(*) over every decision. The raw reply only on its own page.
        turn_number = ConversationTurn.objects.filter(pk=OuterRef("turn_id")).values("turn_number")[:1]
        return (
            super()
            .get_queryset(request)
            .annotate(turn_number=Subquery(turn_number, output_field=IntegerField()))
            .defer("raw_response")
        )

    @admin.display(description="turn", ordering="turn_number")
    def turn_number(self, obj: MemoryGateDecision) -> int | None:
        return getattr(obj, "turn_number", None)

    @admin.display(description="session", ordering="session_id")
    def session_link(self, obj: MemoryGateDecision) -> str:
        url = reverse("admin:sessions_app_conversationsession_change", args=[obj.session_id])
        return format_html('<a href="{}" title="{}">{}</a>', url, obj.session_id, obj.session_id)

    @admin.display(description="turn")
    def turn_link(self, obj: MemoryGateDecision) -> str:
        url = reverse("admin:sessions_app_conversationturn_change", args=[obj.turn_id])
        return format_html('<a href="{}">{} (#{})</a>', url, obj.turn_id, getattr(obj, "turn_number", "?"))

    @admin.display(description="candidate fact / reason")
    def short_fact(self, obj: MemoryGateDecision) -> str:
        return truncated(obj.candidate_fact or obj.reason, 90)

    @admin.display(description="write")
    def writes(self, obj: MemoryGateDecision) -> str:
        """The guardian's audits of this decision (its write and any retries), so the write is one click away."""
        audits = obj.audits.order_by("created_at").values_list("id", "status", "target_file")  # Reverse relation.
        if not audits:
            return "-" if obj.decision == Decision.NO_WRITE else "not written yet"
        return format_html_join(
            mark_safe("<br>"),
            '<a href="{}">{}</a> {} {}',
            (
                (reverse("admin:guardian_app_writeguardianaudit_change", args=[audit_id]), audit_id, status, file)
                for audit_id, status, file in audits
            ),
        )

    @admin.display(description="tokens")
    def tokens(self, obj: MemoryGateDecision) -> str:
        if obj.prompt_tokens is None and obj.completion_tokens is None:
            return "-"
        return f"{obj.prompt_tokens or 0} + {obj.completion_tokens or 0}"

    @admin.display(description="target file")
    def target_file(self, obj: MemoryGateDecision) -> str:
        return obj.target_file or "-"

    @admin.display(description="context window and turn")
    def conversation(self, obj: MemoryGateDecision) -> str:
        turn = obj.turn
        items = format_html_join(
            "",
            '<li><strong>{}</strong> <small>{}</small><br><span style="white-space: pre-wrap">{}</span></li>',
            (
                (item.role, item.timestamp.strftime("%Y-%m-%d %H:%M:%S"), item.message)
                for item in turn.context.order_by("sequence_number")
            ),
        )
        return format_html(
            '<ol class="gate-context" start="0">{}</ol>'
            '<p><strong>user</strong><br><span style="white-space: pre-wrap">{}</span></p>'
            '<p><strong>agent</strong><br><span style="white-space: pre-wrap">{}</span></p>',
            items,
            turn.user_message_content,
            turn.agent_message_content,
        )

    @admin.display(description="raw reply")
    def raw_reply(self, obj: MemoryGateDecision) -> str:
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', obj.raw_response or "(not stored)")

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        failed = ConversationTurn.objects.filter(gate_status=GateStatus.FAILED)
        failed_count = len(failed.values_list("id", flat=True)[:1000])
        days = daily_stats(days=30)
        context = {
            "gate_chart": daily_decisions_svg(days),
            "gate_latency": latency_by_decision(days=30, day_rows=days),
            "gate_failed_count": f"{failed_count}+" if failed_count == 1000 else str(failed_count),
            "gate_failed_url": reverse("admin:sessions_app_conversationturn_changelist") + "?gate_status__exact=failed",
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context=context)


@admin.register(WorkspaceOwner)
class WorkspaceOwnerAdmin(admin.ModelAdmin):
    """The owner's sender ids (issue 21): the first sender seen is recorded here; add or remove ids to change
    whose facts USER.md holds. ``WORKSPACE_OWNER_IDS``, when set, wins over this list."""

    list_display = ["sender_id", "source", "created_at"]
    fields = ["sender_id"]
    search_fields = ["sender_id"]

    def save_model(self, request: HttpRequest, obj: WorkspaceOwner, form: Any, change: bool) -> None:
        obj.source = WorkspaceOwner.Source.ADMIN
        super().save_model(request, obj, form, change)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        from django.conf import settings

        if settings.WORKSPACE_OWNER_IDS:
            self.message_user(
                request,
                "WORKSPACE_OWNER_IDS is set ({}); it wins over this list.".format(
                    ", ".join(settings.WORKSPACE_OWNER_IDS)
                ),
                messages.WARNING,
            )
        return super().changelist_view(request, extra_context=extra_context)
