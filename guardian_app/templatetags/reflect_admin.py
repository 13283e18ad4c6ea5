"""``{% daily_report_panel %}``: today's change report on the admin index (guardian_app.admin.reflect)."""

from __future__ import annotations

import logging
from typing import Any

from django import template
from django.utils import timezone

register = template.Library()
logger = logging.getLogger(__name__)


@register.inclusion_tag("admin/guardian_app/_daily_report.html", takes_context=True)
def daily_report_panel(context: dict[str, Any]) -> dict[str, Any]:
    """Today's counts and highlights, with links to the full report and the reflect runs."""
    from guardian_app.models import ReflectRun
    from guardian_app.reflect.reports import daily_report

    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.has_perm("guardian_app.view_writeguardianaudit"):
        return {"visible": False}
    try:
        report = daily_report(timezone.localdate())
    except Exception:  # noqa: BLE001 - the admin index must open even if the report cannot be built.
        logger.exception("could not build the daily report for the admin index")
        return {"visible": True, "error": True}
    last_run = ReflectRun.objects.filter(dry_run=False).order_by("-created_at").first()
    return {"visible": True, "report": report, "last_run": last_run}
