"""Issue 9: retention deletes a session a few turns a transaction, so that no transaction holds the database's
write lock for long (a whole session at 1M turns held SQLite's for 2.8 s); every transaction checks the session
is still to be deleted."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from dataset_app import retention
from dataset_app.models import DatasetSample
from guardian_app.models import FileSnapshot, WriteGuardianAudit
from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, MemoryGateDecision
from tests.dataset_app.factories import AuditFactory, ContextFactory, SampleFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db(transaction=True)


def old_session_of(turns: int) -> ConversationSession:
    session = SessionFactory()
    start = timezone.now() - dt.timedelta(days=400)
    for n in range(turns):
        turn = TurnFactory(session=session, turn_number=n + 1, created_at=start + dt.timedelta(minutes=n))
        ContextFactory(turn=turn)
        decision = MemoryGateDecision.objects.create(
            turn=turn, session=session, decision="UPDATE_USER", reason="r", candidate_fact=f"f{n}", llm_model="m"
        )
        AuditFactory(decision=decision, turn=turn, session=session)
        SampleFactory(
            session=session, turn=turn, decision=decision, source_key=f"memory_gate_positive:{session.id}:{n}"
        )
    ConversationSession.objects.filter(id=session.id).update(last_activity_at=start)
    return session


@pytest.fixture
def transactions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of turns left in the database as each outermost transaction ends (cleared by the test before
    retention runs)."""
    left: list[int] = []
    original = transaction.atomic

    class Counted:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.inner = original(*args, **kwargs)

        def __enter__(self) -> Any:
            from django.db import connection

            self.outermost = not connection.in_atomic_block
            return self.inner.__enter__()

        def __exit__(self, *exc: Any) -> Any:
            out = self.inner.__exit__(*exc)
            if self.outermost:
                left.append(ConversationTurn.objects.count())
            return out

    monkeypatch.setattr(retention.transaction, "atomic", Counted)
    return left


def test_a_session_is_deleted_a_batch_of_turns_a_transaction(transactions: list[int]) -> None:
    session = old_session_of(7)
    snapshots = FileSnapshot.objects.count()
    transactions.clear()

    result = retention.apply_retention(days=180, batch=3)

    assert transactions == [4, 1, 0, 0, 0]  # three batches of turns, the session itself, the incremental vacuum
    assert (result.sessions_deleted, result.deleted_ids) == (1, [session.id])
    assert not ConversationSession.objects.exists()
    assert not ConversationContext.objects.exists() and not MemoryGateDecision.objects.exists()
    assert not WriteGuardianAudit.objects.exists() and not DatasetSample.objects.exists()
    # The audits' own snapshots went with them (the factories' before-snapshots, one each).
    assert FileSnapshot.objects.count() == snapshots - result.snapshots_deleted == 0


def test_a_sample_approved_between_two_batches_keeps_the_rest_of_the_session(
    transactions: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    session = old_session_of(5)
    last = DatasetSample.objects.order_by("-turn__created_at").first()
    deleted = retention._delete_orphans

    def approve_after_the_first_batch(snapshot_ids: set[str]) -> int:
        out = deleted(snapshot_ids)
        DatasetSample.objects.filter(id=last.id).update(annotation_status="approved")
        return out

    monkeypatch.setattr(retention, "_delete_orphans", approve_after_the_first_batch)
    transactions.clear()
    result = retention.apply_retention(days=180, batch=2)

    assert (result.sessions_deleted, result.deleted_ids) == (0, [])
    assert transactions == [3, 3]  # the second transaction saw the approval and deleted nothing
    assert ConversationSession.objects.filter(id=session.id).exists()
    assert DatasetSample.objects.filter(id=last.id, annotation_status="approved").exists()


def test_no_batch_leaves_a_session_that_nothing_keeps(transactions: list[int]) -> None:
    sessions = [old_session_of(4), old_session_of(2)]
    recent = SessionFactory()
    transactions.clear()

    result = retention.apply_retention(days=180, batch=4)

    assert sorted(result.deleted_ids) == sorted(s.id for s in sessions)
    assert list(ConversationSession.objects.values_list("id", flat=True)) == [recent.id]
    assert transactions == [2, 2, 0, 0, 0]
