"""What every app's admin shares: read-only history, and the API keys (visible, never readable)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.core.cache import cache
from django.db import connection
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from reflection_site.models import ApiKey
from reflection_site.paginators import EstimatedCountPaginator

logger = logging.getLogger(__name__)

admin.site.site_header = "Reflection"
admin.site.site_title = "Reflection"
admin.site.index_title = "Agent memory, audited"


class BigTableMixin:
    """Issue 9, for the admin of a table that grows to millions of rows: no COUNT(*) of the whole table on
    PostgreSQL (estimated count), no second count for "show all", and 50 rows a page (rendering 100 rows
    was most of a changelist's time)."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False
    list_per_page = 50


class ReadOnlyAdmin(BigTableMixin, admin.ModelAdmin):
    """Audit and history rows are facts about the past: they are shown, never edited here."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RecentValuesFilter(admin.SimpleListFilter):
    """A filter on a free-text column offering the values of the newest ``RECENT`` rows (and the one chosen).

    Issue 9: Django's ``AllValuesFieldListFilter`` lists its choices with a ``SELECT DISTINCT`` over every
    row of the table (no index serves it): at 100k decisions two of them were most of the list's 2.2 s.
    The URL parameter is the field's name, as with the built-in filter; the model has ``created_at``.
    """

    RECENT = 1000
    field_name = ""

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        newest = model_admin.model._default_manager.order_by("-created_at").values_list(self.field_name, flat=True)
        values = set(newest[: self.RECENT])
        if self.value():
            values.add(self.value())
        return [(v, v or "(empty)") for v in sorted(values, key=str) if v is not None]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(**{self.field_name: self.value()}) if self.value() is not None else queryset


def recent_values_filter(field_name: str, title: str) -> type[RecentValuesFilter]:
    return type(
        f"Recent{field_name.title().replace('_', '')}Filter",
        (RecentValuesFilter,),
        {"field_name": field_name, "parameter_name": field_name, "title": title},
    )


# Seconds a changelist's dashboard figures are reused (0: computed on every request).
DASHBOARD_TTL = 300


def _dashboard_key(name: str) -> str:
    # Per database: the benchmarks and several checkouts share one cache.
    return f"admin-dashboard:{name}:{connection.vendor}:{connection.settings_dict['NAME']}"


def dashboard_figures(name: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A changelist's dashboard figures, ``compute()`` plus ``dashboard_as_of`` (when they were computed).

    Issue 9: the dataset samples' and learning events' dashboards aggregate their whole table (1.3 s of the
    samples' changelist at 1M turns on SQLite). The figures are computed at most once every ``DASHBOARD_TTL``
    seconds for every admin user and process (Django's cache), and the page says how old they are. A cache that
    fails is bypassed (the figures are computed for this request)."""

    def fresh() -> dict[str, Any]:
        return {**compute(), "dashboard_as_of": timezone.now()}

    if DASHBOARD_TTL <= 0:
        return fresh()
    key = _dashboard_key(name)
    try:
        figures = cache.get(key)
    except Exception as exc:  # noqa: BLE001 - a cache outage must not take the admin page down
        logger.warning("admin dashboard %s: cache unavailable: %s", name, exc)
        return fresh()
    if figures is None:
        figures = fresh()
        try:
            cache.set(key, figures, DASHBOARD_TTL)
        except Exception as exc:  # noqa: BLE001
            logger.warning("admin dashboard %s: cache unavailable: %s", name, exc)
    return figures


def forget_dashboard(name: str) -> None:
    """Drop ``name``'s cached figures: the next request computes them."""
    cache.delete(_dashboard_key(name))


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    list_display = ["name", "prefix", "scopes", "created_at", "last_used_at", "revoked_at"]
    search_fields = ["name", "=prefix"]
    list_filter = ["revoked_at"]
    fields = ["name", "prefix", "scopes", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        from django.utils import timezone

        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"{count} key(s) revoked")

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser
