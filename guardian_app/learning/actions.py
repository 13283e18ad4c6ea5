"""Hits and operator actions on what was learned: the agent used an item, an operator suppresses, archives or
reactivates one (the admin's actions and the API's)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from guardian_app.learning.rules import RuleDraft, find_conflicts
from guardian_app.models import LearningEvent, LearningEventType, LearningSource, MemoryItem, Rule
from reflection_site.errors import NotFound

E = LearningEventType

KINDS: dict[str, type[MemoryItem] | type[Rule]] = {"memory-items": MemoryItem, "rules": Rule}


def record_hit(kind: str, item_id: str, *, now: dt.datetime | None = None) -> MemoryItem | Rule:
    """The agent used this memory item or rule: count it (decay honours hits) and push back its expiry."""
    model = KINDS[kind]
    now = now or timezone.now()
    updates: dict[str, Any] = {"hit_count": F("hit_count") + 1, "last_hit_at": now}
    if model is MemoryItem:
        updates["expires_at"] = now + dt.timedelta(days=settings.LEARNING_STALE_DAYS)
    if not model.objects.filter(id=item_id).update(**updates):
        raise NotFound(f"No {model._meta.verbose_name} {item_id!r}.")
    return model.objects.get(id=item_id)


ACTIONS = ("suppress", "archive", "reactivate")
_TARGET_STATUS = {
    (MemoryItem, "suppress"): MemoryItem.Status.SUPPRESSED,
    (MemoryItem, "archive"): MemoryItem.Status.EXPIRED,
    (MemoryItem, "reactivate"): MemoryItem.Status.ACTIVE,
    (Rule, "suppress"): Rule.Status.SUPPRESSED,
    (Rule, "archive"): Rule.Status.ARCHIVED,
    (Rule, "reactivate"): Rule.Status.ACTIVE,
}
_ACTION_EVENT = {
    (MemoryItem, "suppress"): E.MEM_SUPPRESS,
    (MemoryItem, "archive"): E.MEM_EXPIRE,
    (MemoryItem, "reactivate"): E.MEM_REACTIVATE,
    (Rule, "suppress"): E.RULE_SUPPRESS,
    (Rule, "archive"): E.RULE_ARCHIVE,
    (Rule, "reactivate"): E.RULE_REACTIVATE,
}


def change_status(obj: MemoryItem | Rule, action: str, *, actor: str, note: str = "") -> bool:
    """Suppress, archive or reactivate one item for an operator; returns whether anything changed.

    Reactivating a rule suppresses the active rules that conflict with it (the operator has chosen), each
    with a ``rule_suppress`` event. Nothing is removed from MEMORY.md here: the write guardian's audit of the
    item (``source_ref`` = the item id) is what an operator rolls back.
    """
    model = type(obj)
    target = _TARGET_STATUS[(model, action)]
    now = timezone.now()
    with transaction.atomic():
        updates: dict[str, Any] = {"status": target, "updated_at": now}
        if model is MemoryItem and target == MemoryItem.Status.ACTIVE:
            updates["expires_at"] = now + dt.timedelta(days=settings.LEARNING_STALE_DAYS)
        changed = model.objects.filter(id=obj.id).exclude(status=target).update(**updates)
        if not changed:
            return False
        event_kwargs = {"project_id": obj.project_id, "source": LearningSource.OPERATOR, "created_at": now}
        LearningEvent.objects.create(
            event_type=_ACTION_EVENT[(model, action)],
            reason=f"operator_{action}",
            ref_id=obj.id,
            payload_json={"by": actor, "from": obj.status, "note": note},
            **event_kwargs,
        )
        if model is Rule and target == Rule.Status.ACTIVE:
            rule: Rule = obj  # type: ignore[assignment]
            draft = RuleDraft(
                rule.rule_type, rule.priority, rule.confidence, rule.subject, rule.stance, rule.fingerprint, {}
            )
            for other in find_conflicts(draft, project_id=rule.project_id):
                if other.id == rule.id:
                    continue
                Rule.objects.filter(id=other.id).update(
                    status=Rule.Status.SUPPRESSED, conflict_with=rule.id, updated_at=now
                )
                LearningEvent.objects.create(
                    event_type=E.RULE_SUPPRESS,
                    reason="operator_reactivated",
                    ref_id=other.id,
                    payload_json={"by": actor, "in_favour_of": rule.id},
                    **event_kwargs,
                )
    obj.status = target
    return True
