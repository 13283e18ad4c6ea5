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
admin.site.site_url = "/"  # "View site": the landing page (admin, API docs, health)
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


# Seconds a changelist's dashboard figures are reused (0: computed on every request). The beat entry
# "admin-dashboards-refresh" (reflection_site.schedules) computes them again every 4 minutes, inside this.
DASHBOARD_TTL = 300
# name -> what computes the figures: every changelist dashboard, for the requests and for the refresh.
DASHBOARDS: dict[str, Callable[[], dict[str, Any]]] = {}


def register_dashboard(name: str, compute: Callable[[], dict[str, Any]]) -> str:
    """Declare a changelist dashboard (at import of the admin module that shows it); returns ``name``."""
    DASHBOARDS[name] = compute
    return name


def _dashboard_key(name: str) -> str:
    # Per database: the benchmarks and several checkouts share one cache.
    return f"admin-dashboard:{name}:{connection.vendor}:{connection.settings_dict['NAME']}"


def _computed(name: str) -> dict[str, Any]:
    return {**DASHBOARDS[name](), "dashboard_as_of": timezone.now()}


def _store(name: str, figures: dict[str, Any]) -> None:
    try:
        cache.set(_dashboard_key(name), figures, DASHBOARD_TTL)
    except Exception as exc:  # noqa: BLE001 - a cache outage must not take the admin page down
        logger.warning("admin dashboard %s: cache unavailable: %s", name, exc)


def dashboard_figures(name: str) -> dict[str, Any]:
    """A changelist's dashboard figures (``register_dashboard``), plus ``dashboard_as_of`` (when computed).

    Issue 9: the dataset samples' and learning events' dashboards aggregate their whole table (at 1M turns the
    samples' reads its indexes: 0.26 s with them in the OS cache, 0.85-0.96 s when they are not). The figures are
    computed by the beat's refresh (``refresh_dashboards``) or, when it has not run, by a request, at most once
    every ``DASHBOARD_TTL`` seconds for every admin user and process (Django's cache); the page says how old they
    are. A cache that fails is bypassed (the figures are computed for this request)."""
    if DASHBOARD_TTL <= 0:
        return _computed(name)
    try:
        figures = cache.get(_dashboard_key(name))
    except Exception as exc:  # noqa: BLE001
        logger.warning("admin dashboard %s: cache unavailable: %s", name, exc)
        return _computed(name)
    if figures is None:
        figures = _computed(name)
        _store(name, figures)
    return figures


def refresh_dashboards() -> int:
    """Compute every dashboard and store it, so that no admin request has to; the number refreshed."""
    if DASHBOARD_TTL <= 0:
        return 0
    for name in DASHBOARDS:
        _store(name, _computed(name))
    return len(DASHBOARDS)


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
