"""REQ-001: store a conversation turn and its context window, exactly once."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import AutoField, Field, Model
from django.utils import timezone

from sessions_app.errors import MessageTooLong, TurnConflict
from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, GateStatus
from sessions_app.schemas import TurnIn

logger = logging.getLogger(__name__)


def enqueue_gate(turn_id: str) -> None:
    """Hand the turn to the gate worker; a dead broker is logged and the sweep enqueues it later."""
    from sessions_app.tasks import run_gate

    run_gate.delay(turn_id)


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


def _insert_sql(model: type[Model], suffix: str = "") -> tuple[str, list[Field]]:
    """``INSERT`` of every concrete column of ``model`` (an auto primary key left to the database), plus ``suffix``."""
    key = (connection.vendor, model, suffix)
    if key not in _INSERT_SQL:
        fields = [f for f in model._meta.concrete_fields if not isinstance(f, AutoField)]
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in fields)
        placeholders = ", ".join(["%s"] * len(fields))
        sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders}){suffix}"
        _INSERT_SQL[key] = (sql, fields)
    return _INSERT_SQL[key]


_INSERT_SQL: dict[tuple[str, type[Model], str], tuple[str, list[Field]]] = {}
# Create the session, or bump its last_activity_at (ON CONFLICT reads the same on both databases).
_SESSION_UPSERT = ' ON CONFLICT ("id") DO UPDATE SET "last_activity_at" = excluded."last_activity_at"'


def _insert(objs: list[Model], suffix: str = "") -> None:
    """Insert model instances with one prepared statement: ``bulk_create`` without the query compiler.

    Ingest is the hottest path of the service and the compiler was most of its cost; the values are
    prepared by each field exactly as ``save()`` prepares them (``get_db_prep_save``).
    """
    sql, fields = _insert_sql(type(objs[0]), suffix)
    rows = [[f.get_db_prep_save(f.pre_save(obj, add=True), connection) for f in fields] for obj in objs]
    with connection.cursor() as cursor:
        if len(rows) == 1:
            cursor.execute(sql, rows[0])
        else:
            cursor.executemany(sql, rows)


def _upsert_session(session: ConversationSession) -> None:
    _insert([session], _SESSION_UPSERT)
    if connection.features.has_select_for_update:
        # Serialises turn numbering within a session on PostgreSQL; SQLite's IMMEDIATE lock already does.
        table = connection.ops.quote_name(ConversationSession._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f'SELECT 1 FROM {table} WHERE "id" = %s FOR UPDATE', [session.id])


def _next_turn_number(session_id: str) -> int:
    table = connection.ops.quote_name(ConversationTurn._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT MAX(turn_number) FROM {table} WHERE session_id = %s", [session_id])
        last = cursor.fetchone()[0]
    return (last or 0) + 1


def _ingest_once(payload: TurnIn) -> tuple[ConversationTurn, bool]:
    now = timezone.now()
    created_at = payload.created_at or now
    gate_on = settings.MEMORY_GATE_ENABLED
    with transaction.atomic():
        session_in = payload.session
        _upsert_session(
            ConversationSession(
                id=session_in.id,
                channel_id=session_in.channel_id,
                conversation_target=session_in.conversation_target,
                account_id=session_in.account_id,
                metadata=session_in.metadata,
                created_at=now,
                last_activity_at=now,
            )
        )
        existing = _existing_turn(session_in.id, payload)
        if existing is not None:
            return _resolve_existing(existing, payload), False

        turn = ConversationTurn(
            session_id=session_in.id,
            turn_number=payload.turn_number or _next_turn_number(session_in.id),
            user_message_id=payload.user_message.id,
            user_message_content=payload.user_message.content,
            user_from=payload.user_message.from_,
            user_metadata=payload.user_message.metadata,
            agent_message_id=payload.agent_reply.id,
            agent_message_content=payload.agent_reply.content,
            agent_metadata=payload.agent_reply.metadata,
            created_at=created_at,
            gate_status=GateStatus.PENDING if gate_on else GateStatus.DISABLED,
            gate_enqueued_at=now if gate_on else None,
        )
        _insert([turn])
        turn._state.adding = False
        if payload.context:
            _insert(
                [
                    ConversationContext(
                        turn=turn,
                        role=item.role,
                        message=item.message,
                        timestamp=item.timestamp,
                        sequence_number=position,
                    )
                    for position, item in enumerate(payload.context)
                ]
            )
        if gate_on:
            # A lambda, not functools.partial: Django 5.2 names a failed robust callback by its __qualname__,
            # which a partial lacks, and that turned a dead broker into a 500 (Django ticket #36487).
            transaction.on_commit(lambda: enqueue_gate(turn.id), robust=True)
    return turn, True
