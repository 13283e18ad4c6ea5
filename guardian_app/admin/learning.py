"""The learning guardrails in the admin: the decisions (with a 30-day chart), memory items and rules with
suppress / archive / reactivate actions that go through ``actions.change_status``."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html

from guardian_app.learning.actions import change_status
from guardian_app.learning.metrics import learning_metrics
from guardian_app.models import LearningEvent, MemoryItem, Rule
from reflection_site.admin import (
    BigTableMixin,
    ReadOnlyAdmin,
    dashboard_figures,
    recent_values_filter,
    register_dashboard,
)
from reflection_site.charts import Series, Svg, stacked_bars

CHART_DAYS = 30
# The learning events changelist's chart and figures (reflection_site.admin.dashboard_figures).
DASHBOARD = "learning-events"
# One colour per series, readable on white and in the admin's dark mode.
SERIES: dict[str, tuple[str, str]] = {
    "accepted": ("accepted", "#10b981"),
    "rejected": ("rejected", "#9aa5b1"),
    "conflict": ("conflict", "#f59e0b"),
    "expired": ("expired / archived", "#8b5cf6"),
    "rate_limited": ("rate-limited", "#ef4444"),
    "errors": ("errors (failed open)", "#7f1d1d"),
}


def learning_chart_svg(
    daily: Sequence[dict[str, Any]],
    *,
    days: int = CHART_DAYS,
    today: dt.date | None = None,
    width: int = 960,
    height: int = 260,
) -> Svg:
    """Stacked bars, one per day of the last ``days`` (days without events are empty), one colour per series,
    with a y axis, dates, a legend and a tooltip on every segment (``reflection_site.charts.stacked_bars``)."""
    today = today or timezone.localdate()
    by_day = {row["day"]: row for row in daily}
    dates = [today - dt.timedelta(days=offset) for offset in range(days - 1, -1, -1)]
    return stacked_bars(
        [(day, by_day.get(day, {})) for day in dates],
        [Series(key, label, colour) for key, (label, colour) in SERIES.items()],
        title="Learning decisions per day",
        description="Learning decisions per day, stacked by outcome",
        css_class="learning-chart",
        width=width,
        height=height,
    )


def learning_dashboard() -> dict[str, Any]:
    """The last ``CHART_DAYS`` days of learning decisions: the chart, the figures and the hit rate."""
    now = timezone.now()
    metrics = learning_metrics(since=now - dt.timedelta(days=CHART_DAYS), until=now)
    return {
        "learning_chart": learning_chart_svg(metrics["daily"]),
        "learning_metrics": metrics,
        "learning_series": [(key, label, metrics[key], metrics["shadow"][key]) for key, (label, _) in SERIES.items()],
        "learning_hit_rate": "–" if metrics["hit_rate"] is None else f"{metrics['hit_rate']:.0%}",
    }


register_dashboard(DASHBOARD, learning_dashboard)


def _admin_link(viewname: str, args: list[Any] | None = None, query: str = "") -> str | None:
    try:
        return reverse(viewname, args=args) + query
    except NoReverseMatch:
        return None


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@admin.register(LearningEvent)
class LearningEventAdmin(ReadOnlyAdmin):
    """Every decision of the guardrails; the list opens with the last 30 days as a chart and the metrics."""

    list_display = [
        "created_at",
        "event_type",
        "reason",
        "source",
        "shadow",
        "project_id",
        "trace",
        "subject",
        "user_id",
    ]
    list_filter = [
        "event_type",
        "source",
        "shadow",
        recent_values_filter("reason", "reason (of the newest 1,000 events)"),
        "created_at",
    ]
    search_fields = ["=id", "=trace_id", "=ref_id", "=user_id"]
    show_full_result_count = False
    ordering = ["-created_at", "-id"]
    date_hierarchy = None
    change_list_template = "admin/guardian_app/learningevent/change_list.html"
    fields = ["id", "created_at", "event_type", "reason", "source", "shadow", "project_id", "trace", "subject",
              "user_id", "payload"]  # fmt: skip
    readonly_fields = fields

    @admin.display(description="turn", ordering="trace_id")
    def trace(self, obj: LearningEvent) -> str:
        if not obj.trace_id:
            return "–"
        url = _admin_link("admin:sessions_app_conversationturn_change", [obj.trace_id])
        return format_html('<a href="{}">{}</a>', url, obj.trace_id) if url else obj.trace_id

    @admin.display(description="item or rule")
    def subject(self, obj: LearningEvent) -> str:
        if not obj.ref_id:
            return "–"
        model = "rule" if obj.event_type.startswith("rule_") else "memoryitem"
        url = _admin_link(f"admin:guardian_app_{model}_change", [obj.ref_id])
        return format_html('<a href="{}">{}</a>', url, obj.ref_id) if url else obj.ref_id

    @admin.display(description="payload")
    def payload(self, obj: LearningEvent) -> str:
        text = json.dumps(obj.payload_json, indent=2, ensure_ascii=False, sort_keys=True, default=str)
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        context = {
            **dashboard_figures(DASHBOARD),
            "learning_shadow_mode": settings.LEARNING_SHADOW_MODE,
            "learning_enabled": settings.LEARNING_GUARDRAILS_ENABLED,
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context=context)


class _LearnedAdmin(BigTableMixin, admin.ModelAdmin):
    """Shared by memory items and rules: read-only rows whose status changes through the guardrails."""

    actions = ["suppress", "archive", "reactivate"]
    show_full_result_count = False
    ordering = ["-created_at", "-id"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return list(self.fields or [])

    def _act(self, request: HttpRequest, queryset: QuerySet[Any], action: str) -> None:
        actor = f"admin:{request.user.get_username()}"
        changed = sum(change_status(obj, action, actor=actor) for obj in queryset[:1000])
        level = messages.SUCCESS if changed else messages.WARNING
        self.message_user(request, f"{changed} of {queryset.count()} selected: {action}", level)

    @admin.action(description="Suppress selected", permissions=["change"])
    def suppress(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._act(request, queryset, "suppress")

    @admin.action(description="Archive selected (memory items expire)", permissions=["change"])
    def archive(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._act(request, queryset, "archive")

    @admin.action(description="Reactivate selected", permissions=["change"])
    def reactivate(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._act(request, queryset, "reactivate")

    @admin.display(description="turn")
    def trace(self, obj: Any) -> str:
        if not obj.trace_id:
            return "–"
        url = _admin_link("admin:sessions_app_conversationturn_change", [obj.trace_id])
        return format_html('<a href="{}">{}</a>', url, obj.trace_id) if url else obj.trace_id

    @admin.display(description="decisions")
    def history(self, obj: Any) -> str:
        url = _admin_link("admin:guardian_app_learningevent_changelist", query=f"?q={obj.id}")
        return format_html('<a href="{}">learning events</a>', url) if url else "–"


@admin.register(MemoryItem)
class MemoryItemAdmin(_LearnedAdmin):
    list_display = ["short_content", "status", "score", "quality_score", "hit_count", "last_hit_at", "expires_at",
                    "origin", "project_id", "created_at"]  # fmt: skip
    list_filter = ["status", "origin", "source", "project_id"]
    search_fields = ["=id", "=trace_id", "=fingerprint", "content"]
    fields = ["id", "project_id", "status", "content", "origin", "source", "trace", "user_id", "quality_score",
              "score", "hit_count", "last_hit_at", "expires_at", "decayed_at", "fingerprint", "created_at",
              "updated_at", "memory_write", "history"]  # fmt: skip

    @admin.display(description="memory item", ordering="content")
    def short_content(self, obj: MemoryItem) -> str:
        return _short(obj.content)

    @admin.display(description="write to MEMORY.md")
    def memory_write(self, obj: MemoryItem) -> str:
        url = _admin_link(
            "admin:guardian_app_writeguardianaudit_changelist", query=f"?source=learning&source_ref={obj.id}"
        )
        return format_html('<a href="{}">the guardian audit of this item</a>', url) if url else "–"


@admin.register(Rule)
class RuleAdmin(_LearnedAdmin):
    list_display = ["short_content", "rule_type", "status", "priority", "confidence", "hit_count", "last_hit_at",
                    "conflict", "project_id", "created_at"]  # fmt: skip
    list_filter = ["status", "rule_type", "source", "project_id"]
    search_fields = ["=id", "=trace_id", "=conflict_with", "content"]
    ordering = ["-priority", "-updated_at", "-id"]
    fields = ["id", "project_id", "rule_type", "status", "content", "subject", "stance", "priority", "confidence",
              "base_confidence", "conflict", "source", "trace", "user_id", "hit_count", "last_hit_at", "decayed_at",
              "fingerprint", "created_at", "updated_at", "history"]  # fmt: skip

    @admin.display(description="rule", ordering="content")
    def short_content(self, obj: Rule) -> str:
        return _short(obj.content)

    @admin.display(description="conflict with", ordering="conflict_with")
    def conflict(self, obj: Rule) -> str:
        if not obj.conflict_with:
            return "–"
        url = _admin_link("admin:guardian_app_rule_change", [obj.conflict_with])
        return format_html('<a href="{}">{}</a>', url, obj.conflict_with) if url else obj.conflict_with
