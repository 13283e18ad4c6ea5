"""The retention policy (``storage.retentionDays``) and SQLite's incremental vacuum.

``apply_retention()`` deletes sessions inactive for ``retentionDays`` with everything that hangs from them (turns,
context, decisions, audits, rollbacks, corrections, samples), except a session with an approved (or auto-approved)
sample; then the file snapshots the deleted audits and rollbacks pointed at, if nothing else (a remaining audit, a
rollback, the file's history) still needs them. The nightly conversation export and the pruning of its files are
``dataset_app.exporters.conversations``.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Exists, OuterRef, ProtectedError, QuerySet, RestrictedError
from django.utils import timezone

from dataset_app.models import APPROVED_STATUSES, DatasetSample
from guardian_app.models import FileSnapshot, WriteGuardianAudit
from sessions_app.models import ConversationSession, ConversationTurn, MemoryGateDecision

logger = logging.getLogger(__name__)


@dataclass
class RetentionResult:
    sessions_deleted: int = 0
    sessions_kept: int = 0  # old, but holding an approved sample
    sessions_failed: int = 0
    snapshots_deleted: int = 0
    pages_vacuumed: int = 0  # SQLite: free pages given back to the file system by the incremental vacuum
    deleted_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {
            "sessions_deleted": self.sessions_deleted,
            "sessions_kept": self.sessions_kept,
            "sessions_failed": self.sessions_failed,
            "snapshots_deleted": self.snapshots_deleted,
            "pages_vacuumed": self.pages_vacuumed,
        }


def incremental_vacuum(using: str = "default", pages_per_transaction: int = 2000) -> int:
    """Give SQLite's free pages back to the file system (``storage.sqlite.autoVacuum``); the number given back.

    Deleted rows leave their pages on the file's free list; with ``auto_vacuum=INCREMENTAL`` nothing returns
    them until this runs. Python's sqlite3 steps ``PRAGMA incremental_vacuum`` once, which frees one page, so it
    runs once a page on a cursor of its own (closing it resets the statement, which a commit needs),
    ``pages_per_transaction`` of them a transaction. A no-op
    on PostgreSQL (its own autovacuum) and on a file created without it."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return 0
    with connection.cursor() as cursor:
        if cursor.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:  # 2 = INCREMENTAL
            return 0
        freed = 0
        while left := cursor.execute("PRAGMA freelist_count").fetchone()[0]:
            with transaction.atomic(using=using):
                for _ in range(min(left, pages_per_transaction)):
                    with connection.cursor() as step:  # closing it resets the half-stepped statement
                        step.execute("PRAGMA incremental_vacuum")
            now = cursor.execute("PRAGMA freelist_count").fetchone()[0]
            if now >= left:
                break  # nothing more can be given back (pages still in use by an open transaction)
            freed += left - now
        return freed


def _snapshot_ids_of(audits: QuerySet[WriteGuardianAudit]) -> set[str]:
    """The snapshots those audits and their rollbacks point at."""
    ids: set[str] = set()
    rows = audits.values_list(
        "before_snapshot_id", "after_snapshot_id", "rollback__restored_snapshot_id", "rollback__replaced_snapshot_id"
    )
    for row in rows:
        ids.update(value for value in row if value)
    return ids


def _unreferenced(snapshot_ids: set[str]) -> list[str]:
    """Those of ``snapshot_ids`` that no row refers to any more (every foreign key to FileSnapshot)."""
    if not snapshot_ids:
        return []
    snapshots = FileSnapshot.objects.filter(id__in=snapshot_ids)
    # include_hidden: the audits' and rollbacks' keys have related_name="+", which related_objects leaves out.
    relations = [
        f
        for f in FileSnapshot._meta.get_fields(include_hidden=True)
        if f.auto_created and not f.concrete and f.is_relation
    ]
    for relation in relations:
        related = relation.related_model._base_manager.filter(**{relation.field.name: OuterRef("pk")})
        snapshots = snapshots.exclude(Exists(related))
    return list(snapshots.values_list("id", flat=True))


# Turns a retention transaction deletes with what hangs from them (issue 9: a whole session of 50 turns held
# SQLite's write lock for up to 2.8 s at 1M turns on a loaded machine; the bound is 1 s).
TURNS_PER_TRANSACTION = 10


def _delete_orphans(snapshot_ids: set[str]) -> int:
    orphans = _unreferenced(snapshot_ids)
    return FileSnapshot.objects.filter(id__in=orphans).delete()[0] if orphans else 0


def _delete_session(session_id: str, still_old: QuerySet[ConversationSession], batch: int) -> int | None:
    """Delete one session ``batch`` turns a transaction, oldest first, then the session with what is left (rows
    without a turn); each transaction first checks the session is still to be deleted (``still_old``). Returns
    the snapshots deleted, or None when the session is kept (a sample approved meanwhile, or gone).

    A session whose deletion stops (a protected row, a crash) keeps its later turns and is still old: the next
    run deletes the rest."""
    snapshots = 0
    while True:
        with transaction.atomic():
            session = still_old.filter(id=session_id).first()
            if session is None:
                return None
            turn_ids = list(
                ConversationTurn.objects.filter(session_id=session_id)
                .order_by("created_at", "id")
                .values_list("id", flat=True)[:batch]
            )
            if turn_ids:
                # The audits the turns' deletion cascades to: by turn, or by decision (two indexed reads; an OR of
                # the two scans every audit).
                decisions = MemoryGateDecision.objects.filter(turn_id__in=turn_ids).values("id")
                snapshot_ids = _snapshot_ids_of(WriteGuardianAudit.objects.filter(turn_id__in=turn_ids))
                snapshot_ids |= _snapshot_ids_of(WriteGuardianAudit.objects.filter(decision_id__in=decisions))
                ConversationTurn.objects.filter(id__in=turn_ids).delete()
            else:
                snapshot_ids = _snapshot_ids_of(WriteGuardianAudit.objects.filter(session_id=session_id))
                session.delete()
            snapshots += _delete_orphans(snapshot_ids)
        if not turn_ids:
            return snapshots


def apply_retention(
    *,
    days: int | None = None,
    now: dt.datetime | None = None,
    dry_run: bool = False,
    batch: int = TURNS_PER_TRANSACTION,
) -> RetentionResult:
    """Delete sessions inactive for ``days`` (``RETENTION_DAYS``; 0 turns retention off).

    1. Sessions whose last activity is older than the cutoff, except those with an approved sample.
    2. Each is deleted with everything that cascades from it, ``batch`` turns a transaction (the database's write
       lock is held for that long); a row of another app that protects it (``on_delete=PROTECT``) stops that
       session's deletion, logged, and the rest go on.
    3. The snapshots the deleted audits and rollbacks used are deleted if no remaining row refers to them.
    """
    result = RetentionResult()
    days = settings.RETENTION_DAYS if days is None else days
    if days <= 0:
        return result
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    approved = Exists(DatasetSample.objects.filter(session_id=OuterRef("pk"), annotation_status__in=APPROVED_STATUSES))
    old = ConversationSession.objects.filter(last_activity_at__lt=cutoff)
    result.sessions_kept = old.filter(approved).count()
    ids = list(old.exclude(approved).values_list("id", flat=True))
    if dry_run:
        result.sessions_deleted = len(ids)
        result.deleted_ids = ids
        return result
    for session_id in ids:
        try:
            # Checked again in every transaction: a sample approved meanwhile keeps the session.
            snapshots = _delete_session(session_id, old.exclude(approved), batch)
        except (ProtectedError, RestrictedError) as exc:
            logger.warning("retention kept session %s: %s", session_id, exc)
            result.sessions_failed += 1
            continue
        if snapshots is None:
            continue
        result.snapshots_deleted += snapshots
        result.sessions_deleted += 1
        result.deleted_ids.append(session_id)
    result.pages_vacuumed = incremental_vacuum()
    if ids or result.pages_vacuumed:
        logger.info("retention: %s", result.as_dict())
    return result


__all__ = ["RetentionResult", "apply_retention", "incremental_vacuum"]
