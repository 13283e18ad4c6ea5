"""Counts of the guardrails' decisions over a window, for the API and the admin's chart."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from guardian_app.models import LearningEvent, LearningEventType, MemoryItem, Rule

E = LearningEventType

METRIC_TYPES = {
    "accepted": Q(event_type__in=[E.MEM_ACCEPT, E.RULE_ACCEPT]),
    "rejected": Q(event_type__in=[E.MEM_REJECT, E.RULE_REJECT]),
    "conflict": Q(event_type=E.RULE_CONFLICT) | Q(event_type=E.RULE_SUPPRESS, reason="conflict"),
    "expired": Q(event_type__in=[E.MEM_EXPIRE, E.RULE_ARCHIVE]),
    "rate_limited": Q(event_type=E.RATE_LIMITED),
    "errors": Q(event_type=E.GUARDRAIL_ERROR),
}


def learning_metrics(
    *, since: dt.datetime, until: dt.datetime | None = None, project_id: str | None = None
) -> dict[str, Any]:
    """Counts of decisions in ``[since, until)`` (applied and shadow apart), hit rate, and a daily series.

    ``hit_rate`` is the share of the active memory items and rules that were hit (used by the agent) at
    least once in the window; ``None`` when there is nothing learned yet.
    """
    until = until or timezone.now()
    events = LearningEvent.objects.filter(created_at__gte=since, created_at__lt=until)
    items = MemoryItem.objects.filter(status=MemoryItem.Status.ACTIVE)
    rules = Rule.objects.filter(status=Rule.Status.ACTIVE)
    if project_id:
        events, items, rules = (qs.filter(project_id=project_id) for qs in (events, items, rules))
    aggregates = {
        f"{name}_{kind}": Count("id", filter=q & Q(shadow=shadow))
        for name, q in METRIC_TYPES.items()
        for kind, shadow in (("applied", False), ("shadow", True))
    }
    counts = events.aggregate(**aggregates)
    active_items, active_rules = items.count(), rules.count()
    hit_items = items.filter(last_hit_at__gte=since).count()
    hit_rules = rules.filter(last_hit_at__gte=since).count()
    learned = active_items + active_rules
    daily_rows = (
        events.filter(shadow=False)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(**{name: Count("id", filter=q) for name, q in METRIC_TYPES.items()})
        .order_by("day")
    )
    return {
        "since": since,
        "until": until,
        "project_id": project_id,
        **{name: counts[f"{name}_applied"] for name in METRIC_TYPES},
        "hit_rate": round((hit_items + hit_rules) / learned, 4) if learned else None,
        "shadow": {name: counts[f"{name}_shadow"] for name in METRIC_TYPES},
        "active": {"memory_items": active_items, "rules": active_rules},
        "hits": {"memory_items": hit_items, "rules": hit_rules},
        "daily": [{"day": row["day"], **{name: row[name] for name in METRIC_TYPES}} for row in daily_rows],
    }
