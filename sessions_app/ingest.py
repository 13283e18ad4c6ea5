"""REQ-001: store a conversation turn and its context window, exactly once."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from reflection_site.celery import enqueue_on_commit, send
from reflection_site.ids import new_ulid
from reflection_site.rows import RowWriter
from sessions_app.errors import MessageTooLong, TurnConflict
from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, GateStatus
from sessions_app.schemas import TurnIn

logger = logging.getLogger(__name__)


GATE_TASK = "sessions_app.tasks.run_gate"


def enqueue_gate(turn_id: str) -> None:
    """Hand the turn to the gate worker (``run_gate``) now; a broker error propagates (the sweep's send)."""
    send(GATE_TASK, turn_id)


def hand_off_gate(turn_id: str) -> None:
    """``run_gate`` once the transaction commits (ingest, a re-run): the turn is stored as pending, so a dead
    broker only delays it to the gate sweep (``enqueue_on_commit``)."""
    enqueue_on_commit(GATE_TASK, turn_id)


def _check_lengths(payload: TurnIn) -> None:
    limit = settings.MAX_MESSAGE_CHARS
    messages = [
        ("user_message.content", payload.user_message.content),
        ("agent_reply.content", payload.agent_reply.content),
    ]
    messages += [(f"context[{i}].message", item.message) for i, item in enumerate(payload.context)]
    for where, text in messages:
        if len(text) > limit:
            raise MessageTooLong(
                f"{where} has {len(text)} characters; the limit is {limit} (MAX_MESSAGE_CHARS).",
                details={"field": where, "length": len(text), "limit": limit},
            )
    if len(payload.context) > settings.MAX_CONTEXT_ITEMS:
        raise MessageTooLong(
            f"context has {len(payload.context)} items; the limit is {settings.MAX_CONTEXT_ITEMS} (MAX_CONTEXT_ITEMS).",
            details={"field": "context", "length": len(payload.context), "limit": settings.MAX_CONTEXT_ITEMS},
        )


def _same_turn(turn: ConversationTurn, payload: TurnIn) -> bool:
    return (
        turn.user_message_content == payload.user_message.content
        and turn.agent_message_content == payload.agent_reply.content
        and (payload.user_message.id is None or turn.user_message_id in (None, payload.user_message.id))
        and (payload.turn_number is None or turn.turn_number == payload.turn_number)
    )


def _existing_turn(session_id: str, payload: TurnIn) -> ConversationTurn | None:
    """The stored turn with the same key: the same user message id first, else the same turn number.

    The lookup is one indexed statement without the ORM (ingest's hottest query finds nothing almost
    always); a hit is then loaded as a model.
    """
    message_id, number = payload.user_message.id, payload.turn_number
    if message_id is None and number is None:
        return None
    table = connection.ops.quote_name(ConversationTurn._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, user_message_id FROM {table} WHERE session_id = %s AND (user_message_id = %s OR turn_number = %s)"
            " LIMIT 2",
            [session_id, message_id, number],
        )
        found = cursor.fetchall()
    if not found:
        return None
    by_id = [
        turn_id for turn_id, stored_message_id in found if message_id is not None and stored_message_id == message_id
    ]
    return ConversationTurn.objects.get(id=(by_id or [found[0][0]])[0])


def _resolve_existing(existing: ConversationTurn, payload: TurnIn) -> ConversationTurn:
    if _same_turn(existing, payload):
        return existing
    raise TurnConflict(
        f"Turn {existing.turn_number} of session {existing.session_id} is already stored with different content.",
        details={"turn_id": existing.id, "turn_number": existing.turn_number},
    )


def ingest_turn(payload: TurnIn) -> tuple[ConversationTurn, bool]:
    """Store one turn; returns ``(turn, created)``.

    1. Refuse over-long messages (nothing stored).
    2. In one transaction: upsert the session (bumping ``last_activity_at``), lock it, find a turn with
       the same key (session + user message id, or session + turn number), insert the turn with the next
       number when none was given, and bulk-insert its context with ``sequence_number`` = position.
    3. After commit, enqueue the memory gate.

    The same key with the same content returns the stored turn (``created`` False); with different
    content it raises ``TurnConflict``.
    """
    _check_lengths(payload)
    for attempt in range(3):
        try:
            return _ingest_once(payload)
        except IntegrityError:
            # A concurrent request stored the same key or took the next number first: look again.
            existing = _existing_turn(payload.session.id, payload)
            if existing is not None:
                return _resolve_existing(existing, payload), False
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


# Create the session, or bump its last_activity_at (ON CONFLICT reads the same on both databases).
_SESSION_UPSERT = ' ON CONFLICT ("id") DO UPDATE SET "last_activity_at" = excluded."last_activity_at"'


def _upsert_session(session: Mapping[str, Any]) -> None:
    writer = RowWriter.of(ConversationSession, _SESSION_UPSERT)
    writer.insert([writer.prepare_mapping(session)])
    if connection.features.has_select_for_update:
        # Serialises turn numbering within a session on PostgreSQL; SQLite's IMMEDIATE lock already does.
        table = connection.ops.quote_name(ConversationSession._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f'SELECT 1 FROM {table} WHERE "id" = %s FOR UPDATE', [session["id"]])


def _next_turn_number(session_id: str) -> int:
    table = connection.ops.quote_name(ConversationTurn._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT MAX(turn_number) FROM {table} WHERE session_id = %s", [session_id])
        last = cursor.fetchone()[0]
    return (last or 0) + 1


def _ingest_once(payload: TurnIn) -> tuple[ConversationTurn, bool]:
    """One attempt, in one transaction. The rows are prepared before it begins (SQLite's write lock is held from
    its first statement to the commit) and inserted by ``RowWriter``: ingest is the hottest path of the service,
    and the ORM's query compiler and a model instance per context row were most of its cost."""
    now = timezone.now()
    gate_on = settings.MEMORY_GATE_ENABLED
    session_in, user, agent = payload.session, payload.user_message, payload.agent_reply
    session = {
        "id": session_in.id,
        "channel_id": session_in.channel_id,
        "conversation_target": session_in.conversation_target,
        "account_id": session_in.account_id,
        "metadata": session_in.metadata,
        "created_at": now,
        "last_activity_at": now,
    }
    turn_values = {
        "id": new_ulid(),
        "session_id": session_in.id,
        "turn_number": payload.turn_number,
        "user_message_id": user.id,
        "user_message_content": user.content,
        "user_from": user.from_,
        "user_metadata": user.metadata,
        "agent_message_id": agent.id,
        "agent_message_content": agent.content,
        "agent_metadata": agent.metadata,
        "created_at": payload.created_at or now,
        "gate_status": GateStatus.PENDING if gate_on else GateStatus.DISABLED,
        "gate_enqueued_at": now if gate_on else None,
    }
    context_writer = RowWriter.of(ConversationContext)
    context_rows = [
        context_writer.prepare_mapping(
            {
                "turn_id": turn_values["id"],
                "role": item.role,
                "message": item.message,
                "timestamp": item.timestamp,
                "sequence_number": position,
            }
        )
        for position, item in enumerate(payload.context)
    ]
    turn_writer = RowWriter.of(ConversationTurn)
    with transaction.atomic():
        _upsert_session(session)
        existing = _existing_turn(session_in.id, payload)
        if existing is not None:
            return _resolve_existing(existing, payload), False
        if turn_values["turn_number"] is None:
            turn_values["turn_number"] = _next_turn_number(session_in.id)
        turn_row = turn_writer.prepare_mapping(turn_values)
        turn_writer.insert([turn_row])
        if context_rows:
            context_writer.insert(context_rows)
        turn = ConversationTurn(**turn_values)
        turn._state.adding, turn._state.db = False, connection.alias
        if gate_on:
            hand_off_gate(turn.id)
    return turn, True
