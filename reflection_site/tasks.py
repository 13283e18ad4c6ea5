"""Celery tasks of the site itself."""

from __future__ import annotations

from celery import shared_task


@shared_task
def run_dashboard_refresh() -> int:
    """Compute the admin changelists' dashboards and cache them, so that no admin request waits for one."""
    from reflection_site.admin import refresh_dashboards

    return refresh_dashboards()
