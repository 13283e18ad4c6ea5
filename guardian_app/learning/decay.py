"""The daily decay of what was learned (``decay_learning``, at 03:00), seed 004 P1-001:
  value = base × 2^(−age_days / LEARNING_DECAY_HALF_LIFE_DAYS) × (1 + LEARNING_DECAY_ACTIVE_WEIGHT · ln(1 + hits))
clamped to [0, 1], where base is a memory item's ``quality_score`` (→ ``score``) or a rule's
``base_confidence`` (→ ``confidence``) and age runs from creation. Memory items not hit for
``LEARNING_STALE_DAYS`` expire (``expires_at``), rules not hit for as long are archived; a project over
its cap loses its lowest-ranked items first (memory: score, hits, age; rules: priority, confidence,
hits, age). Each change is a learning event; the run is a ``decay_run`` event.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from guardian_app.learning.failures import record_failure
from guardian_app.learning.memory import hand_to_guardian
from guardian_app.learning.ratelimit import purge_expired
from guardian_app.models import LearningEvent, LearningEventType, LearningSource, MemoryItem, Rule, WriteGuardianAudit
from reflection_site.decay import decayed_score

logger = logging.getLogger(__name__)

E = LearningEventType
# An accepted item's fact is handed to the guardian after commit; one still unwritten after this
# long (a broker outage) is handed over again by the decay job.
REQUEUE_GRACE = dt.timedelta(minutes=10)


def decay_value(
    base: float,
    *,
    age_days: float,
    hit_count: int = 0,
    half_life_days: float | None = None,
    active_weight: float | None = None,
) -> float:
    """Seed 004 P1-001: ``base × 2^(−age/half_life) × (1 + weight · ln(1 + hits))``, within [0, 1]."""
    half_life = half_life_days if half_life_days is not None else settings.LEARNING_DECAY_HALF_LIFE_DAYS
    weight = active_weight if active_weight is not None else settings.LEARNING_DECAY_ACTIVE_WEIGHT
    return decayed_score(base, age_days=age_days, hits=hit_count, half_life_days=half_life, active_weight=weight)


@dataclass
class DecayReport:
    memory_items_decayed: int = 0
    rules_decayed: int = 0
    memory_items_expired: int = 0
    rules_archived: int = 0
    memory_items_over_cap: int = 0
    rules_over_cap: int = 0
    requeued: int = 0
    rate_limit_rows_purged: int = 0
    shadow: bool = False
    enabled: bool = True
    changes: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("changes")
        return data


def _age_days(now: dt.datetime, then: dt.datetime) -> float:
    return (now - then).total_seconds() / 86400


def decay_learning(*, now: dt.datetime | None = None, progress: Callable[[int], None] | None = None) -> DecayReport:
    """The daily job: decay scores and confidences, expire and archive stale items, enforce the caps.

    1. Recompute every active memory item's ``score`` and rule's ``confidence`` (``decay_value``).
    2. Expire memory items past ``expires_at`` and archive rules not hit for ``LEARNING_STALE_DAYS``.
    3. Per project over its cap, expire / archive the lowest-ranked active items until it fits.
    4. Hand accepted facts that never reached the guardian (a broker outage) to it again.
    Every change is a learning event (source ``system``). In shadow mode the changes are recorded with
    ``shadow=True`` and not applied; with the guardrails off nothing happens.
    """
    now = now or timezone.now()
    report = DecayReport(shadow=settings.LEARNING_SHADOW_MODE, enabled=settings.LEARNING_GUARDRAILS_ENABLED)
    if not report.enabled:
        return report
    done = 0

    def tick(n: int = 1) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done)

    report.memory_items_decayed = _decay_rows(MemoryItem, "quality_score", "score", now=now, report=report, tick=tick)
    report.rules_decayed = _decay_rows(Rule, "base_confidence", "confidence", now=now, report=report, tick=tick)

    stale_before = now - dt.timedelta(days=settings.LEARNING_STALE_DAYS)
    stale_items = MemoryItem.objects.filter(status=MemoryItem.Status.ACTIVE).filter(
        Q(expires_at__lte=now)
        | Q(expires_at__isnull=True, last_hit_at__lt=stale_before)
        | Q(expires_at__isnull=True, last_hit_at__isnull=True, created_at__lt=stale_before)
    )
    report.memory_items_expired = _retire(stale_items, MemoryItem.Status.EXPIRED, E.MEM_EXPIRE, "stale", now, report)
    stale_rules = Rule.objects.filter(status=Rule.Status.ACTIVE).filter(
        Q(last_hit_at__lt=stale_before) | Q(last_hit_at__isnull=True, created_at__lt=stale_before)
    )
    report.rules_archived = _retire(stale_rules, Rule.Status.ARCHIVED, E.RULE_ARCHIVE, "stale", now, report)

    report.memory_items_over_cap = _enforce_cap(
        MemoryItem,
        settings.LEARNING_MEM_MAX_PER_PROJECT,
        ("score", "hit_count", "created_at", "id"),
        MemoryItem.Status.EXPIRED,
        E.MEM_EXPIRE,
        now,
        report,
    )
    report.rules_over_cap = _enforce_cap(
        Rule,
        settings.LEARNING_RULE_MAX_PER_PROJECT,
        ("priority", "confidence", "hit_count", "created_at", "id"),
        Rule.Status.ARCHIVED,
        E.RULE_ARCHIVE,
        now,
        report,
    )
    if not report.shadow:
        report.requeued = requeue_unwritten_items(now=now)
    report.rate_limit_rows_purged = purge_expired()
    LearningEvent.objects.create(
        event_type=E.DECAY_RUN,
        reason="daily",
        source=LearningSource.SYSTEM,
        shadow=report.shadow,
        created_at=now,
        payload_json=report.summary(),
    )
    logger.info("learning decay: %s", report.summary())
    return report


def _decay_rows(
    model: type[MemoryItem] | type[Rule],
    base_field: str,
    value_field: str,
    *,
    now: dt.datetime,
    report: DecayReport,
    tick: Callable[[int], None],
    batch: int = 500,
) -> int:
    rows = model.objects.filter(status="active").only("id", base_field, value_field, "hit_count", "created_at")
    changed: list[Any] = []
    total = 0
    for row in rows.iterator(chunk_size=batch):
        value = round(
            decay_value(getattr(row, base_field), age_days=_age_days(now, row.created_at), hit_count=row.hit_count), 4
        )
        if value != getattr(row, value_field):
            setattr(row, value_field, value)
            row.decayed_at = now
            changed.append(row)
        if len(changed) >= batch:
            total += _save_decayed(model, value_field, changed, report)
            tick(len(changed))
            changed = []
    total += _save_decayed(model, value_field, changed, report)
    tick(len(changed))
    return total


def _save_decayed(model: type[Any], value_field: str, rows: list[Any], report: DecayReport) -> int:
    if not rows:
        return 0
    if not report.shadow:
        with transaction.atomic():
            model.objects.bulk_update(rows, [value_field, "decayed_at"])
    return len(rows)


def _retire(
    queryset: QuerySet[Any], status: str, event_type: str, reason: str, now: dt.datetime, report: DecayReport
) -> int:
    rows = list(queryset.only("id", "project_id", "status", "hit_count", "last_hit_at", "created_at")[:10_000])
    if not rows:
        return 0
    events = [
        LearningEvent(
            event_type=event_type,
            reason=reason,
            ref_id=row.id,
            project_id=row.project_id,
            source=LearningSource.SYSTEM,
            shadow=report.shadow,
            created_at=now,
            payload_json={
                "hit_count": row.hit_count,
                "last_hit_at": row.last_hit_at.isoformat() if row.last_hit_at else None,
            },
        )
        for row in rows
    ]
    ids = [row.id for row in rows]
    with transaction.atomic():
        if not report.shadow:
            type(rows[0]).objects.filter(id__in=ids, status="active").update(status=status, updated_at=now)
        LearningEvent.objects.bulk_create(events, batch_size=500)
    report.changes.extend({"id": i, "event": event_type, "reason": reason} for i in ids)
    return len(ids)


def _enforce_cap(
    model: type[MemoryItem] | type[Rule],
    cap: int,
    ranking: tuple[str, ...],
    status: str,
    event_type: str,
    now: dt.datetime,
    report: DecayReport,
) -> int:
    over = (
        model.objects.filter(status="active")
        .values("project_id")
        .annotate(n=Count("id"))
        .filter(n__gt=cap)
        .values_list("project_id", "n")
    )
    total = 0
    for project_id, count in list(over):
        weakest = model.objects.filter(project_id=project_id, status="active").order_by(*ranking)[: count - cap]
        ids = list(weakest.values_list("id", flat=True))
        total += _retire(model.objects.filter(id__in=ids), status, event_type, "project_cap", now, report)
    return total


def requeue_unwritten_items(*, now: dt.datetime | None = None, limit: int = 500) -> int:
    """Active memory items whose fact never reached the guardian (no audit for them): hand them over again."""
    now = now or timezone.now()
    audited = WriteGuardianAudit.objects.filter(source="learning").values("source_ref")
    items = (
        MemoryItem.objects.filter(status=MemoryItem.Status.ACTIVE, created_at__lt=now - REQUEUE_GRACE)
        .exclude(id__in=audited)
        .only("id", "content")[:limit]
    )
    count = 0
    for item in items:
        try:
            hand_to_guardian(item.id, item.content, now=True)
        except Exception as exc:  # The broker is still down; tomorrow's run tries again.
            record_failure("requeue", exc, source=LearningSource.SYSTEM)
            break
        count += 1
    return count
