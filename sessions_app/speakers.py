"""Whose turn it is: the speaker of a turn and whether they own the workspace (issue 21).

A turn's sender is ``user_message.from`` (stored as ``ConversationTurn.user_from``) on its session's channel.
The owner is the person USER.md describes: ``settings.WORKSPACE_OWNER_IDS`` when set, else the
``WorkspaceOwner`` rows, which begin as the first sender seen and are changed in the admin. A sender id
matches as ``from`` or as ``<channel_id>:<from>``, case-insensitively. A turn without a sender is the owner's
(a single-user agent does not say who is typing).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction

from reflection_site.rows import RowReader
from sessions_app.models import ConversationTurn, WorkspaceOwner


@dataclass(frozen=True)
class Speaker:
    name: str | None  # the sender as the channel shows them (None: unknown, taken as the owner)
    channel: str
    is_owner: bool

    @property
    def sender_id(self) -> str | None:
        return f"{self.channel}:{self.name}" if self.name else None


def _ids(values: list[str]) -> set[str]:
    return {v.strip().casefold() for v in values if v and v.strip()}


def owner_ids() -> set[str]:
    """The owner's sender ids: the setting, else the stored ones, else the first sender seen (stored now)."""
    configured = _ids(list(settings.WORKSPACE_OWNER_IDS))
    if configured:
        return configured
    # Read for every fact the guardian writes: a written statement, where the ORM's compiler took five times as long.
    stored = _ids([owner.sender_id for owner in RowReader.of(WorkspaceOwner, "", ("sender_id",)).rows()])
    if stored:
        return stored
    first = (
        ConversationTurn.objects.exclude(user_from__isnull=True)
        .exclude(user_from="")
        .order_by("created_at", "id")
        .values_list("user_from", flat=True)
        .first()
    )
    if first is None:
        return set()
    try:
        with transaction.atomic():
            WorkspaceOwner.objects.create(sender_id=first, source=WorkspaceOwner.Source.FIRST_SENDER)
    except IntegrityError:
        pass  # Another worker recorded it first.
    return _ids(list(WorkspaceOwner.objects.values_list("sender_id", flat=True)))


def speaker_of(turn: ConversationTurn) -> Speaker:
    """Who said ``turn``, and whether they own the workspace."""
    name = (turn.user_from or "").strip() or None
    channel = turn.session.channel_id if turn.session_id else ""
    if name is None:
        return Speaker(None, channel, True)
    owners = owner_ids()
    is_owner = not owners or name.casefold() in owners or f"{channel}:{name}".casefold() in owners
    return Speaker(name, channel, is_owner)
