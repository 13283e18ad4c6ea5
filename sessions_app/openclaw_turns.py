"""OpenClaw's events as Reflection turns: the windows of one session key become ``TurnIn`` bodies.

Each session key is one Reflection session, named by the key itself, as the OpenClaw plugin
(``integrations/openclaw``) names it: an import after a live feed, or a live feed after an import, adds
nothing twice. All windows of a key (a reset starts a new one) go into that session, oldest first. A turn
is a user message (consecutive ones joined) and everything until the next: the assistant's text is the
reply; its thinking, tool calls, tool results (with ``isError``), usage and model go in the reply's
metadata; entry ids and ``parentId`` (OpenClaw's tree) in the user message's. Its user message id is the
run id OpenClaw stamps on the assistant's messages (the plugin's ``agent_end`` id), else the user entry's
id. Compactions and resets are kept in the session's metadata and before the next turn (a compaction's
summary enters its context window; a reset empties it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from sessions_app.openclaw_sources import Transcript, event_time, transcript_header

TOOL_TEXT_LIMIT = 4000  # Characters of a tool result kept in metadata (the plugin keeps the same).


# --- Session keys -----------------------------------------------------------------------------------------------------
_SCOPES = {"direct", "dm", "group", "channel", "thread"}


def reflection_session_id(session_key: str) -> str:
    """The Reflection session id of an OpenClaw session key (the plugin's ``reflectionSessionId``)."""
    return session_key.strip().replace("%", "%25").replace("/", "%2F")[:255]


def parse_session_key(session_key: str) -> dict[str, str | None]:
    """``agent:<id>:<channel>:direct:<peer>`` -> agent, channel, scope, peer; ``agent:<id>:main`` -> agent."""
    parts = session_key.split(":")
    out: dict[str, str | None] = {"agent_id": None, "channel": None, "scope": None, "peer": None}
    if len(parts) >= 2 and parts[0] == "agent":
        out["agent_id"] = parts[1]
        rest = parts[2:]
    else:
        rest = parts
    for index, part in enumerate(rest):
        if part in _SCOPES and index >= 1:
            out["channel"], out["scope"] = rest[index - 1], part
            out["peer"] = ":".join(rest[index + 1 :]) or None
            break
    return out


def _session(transcripts: list[Transcript]) -> tuple[dict[str, Any], str | None]:
    """The ``TurnIn.session`` of a key's windows (oldest first), and who its user messages are from: the
    peer of a direct conversation, else nobody named."""
    first = transcripts[0]
    key = first.session_key or f"openclaw:{first.session_id}"
    parsed = parse_session_key(key) if first.session_key else {}
    entry = next((t.entry for t in reversed(transcripts) if t.entry), {})
    row = next((t.window for t in reversed(transcripts) if t.window.get("channel")), {})
    origin = entry.get("origin") if isinstance(entry.get("origin"), dict) else {}
    delivery = entry.get("deliveryContext") if isinstance(entry.get("deliveryContext"), dict) else {}
    channel = (
        row.get("channel")
        or entry.get("channel")
        or entry.get("lastChannel")
        or origin.get("provider")
        or delivery.get("channel")
        or parsed.get("channel")
        or "openclaw"
    )
    account = row.get("account_id") or origin.get("accountId") or entry.get("lastAccountId")
    session_meta: dict[str, Any] = {
        "source": "openclaw_import",
        "session_key": first.session_key,
        "agent_id": first.agent_id or parsed.get("agent_id"),
        "windows": [],
        "compactions": [],
        "resets": [],
    }
    peer = parsed.get("peer")
    session = {
        "id": reflection_session_id(key),
        "channel_id": str(channel)[:255],
        "conversation_target": (str(peer)[:255] if peer else None),
        "account_id": str(account)[:255] if account else None,
        "metadata": session_meta,
    }
    sender = str(peer)[:255] if peer and parsed.get("scope") in ("direct", "dm") else None
    return session, sender


# --- Messages ---------------------------------------------------------------------------------------------------------
def message_text(message: dict[str, Any]) -> str:
    """The text parts of a message, joined (the plugin's ``messageText``)."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = [str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(t for t in texts if t).strip()


def _part_kinds(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [str(p.get("type")) for p in content if isinstance(p, dict) and p.get("type") not in (None, "text")]


def user_text(messages: Iterable[dict[str, Any]]) -> str:
    """A turn's user message: its user messages' texts, joined; a message without text names its parts."""
    parts = []
    for message in messages:
        text = message_text(message)
        parts.append(text or f"[{', '.join(_part_kinds(message)) or 'empty'} message]")
    return "\n\n".join(parts)


def tool_result(message: dict[str, Any]) -> dict[str, Any]:
    text = message_text(message)
    out = {
        "tool_call_id": message.get("toolCallId"),
        "tool_name": message.get("toolName"),
        "is_error": bool(message.get("isError")),
        "content": text[:TOOL_TEXT_LIMIT],
    }
    if len(text) > TOOL_TEXT_LIMIT:
        out["truncated_from"] = len(text)
    return out


# --- Events to turns --------------------------------------------------------------------------------------------------
@dataclass
class _Turn:
    users: list[dict[str, Any]] = field(default_factory=list)  # The message entries.
    replies: list[str] = field(default_factory=list)
    run_id: str | None = None
    response_id: str | None = None
    agent_meta: dict[str, Any] = field(default_factory=dict)
    user_meta: dict[str, Any] = field(default_factory=dict)
    context: list[dict[str, Any]] = field(default_factory=list)
    has_answer: bool = False


class _TurnReader:
    """Reads a session's events in order: a user message opens a turn (or joins the open one until it has an
    answer), what follows belongs to it, and every message with text enters the context of the turns after it."""

    def __init__(self, session_meta: dict[str, Any], *, window: int) -> None:
        self.session_meta = session_meta
        self.window = window
        self.turns: list[_Turn] = []
        self.history: list[dict[str, Any]] = []
        self.current: _Turn | None = None
        self.pending: dict[str, Any] = {}  # What happened since the last turn (a compaction, a reset), for the next.

    def close(self) -> None:
        if self.current is not None and self.current.users:
            self.turns.append(self.current)
        self.current = None

    def read(self, transcript: Transcript, *, first: bool) -> None:
        """One window of the session; a window after the first starts with an empty context."""
        header = transcript_header(transcript.events)
        self.session_meta["windows"].append(
            {
                "session_id": transcript.session_id,
                "source": transcript.source,
                "reason": transcript.window.get("reason"),
                "started": header.get("timestamp"),
                "transcript_version": header.get("version"),
            }
        )
        if not first:
            self.close()
            self.history = []
            self.pending["new_window"] = transcript.session_id
        for event in transcript.events:
            kind = event.get("type")
            when = event_time(event.get("timestamp"))
            if kind == "compaction":
                self._compaction(event, when)
            elif kind == "reset":
                self._reset(event)
            elif kind == "message" and isinstance(event.get("message"), dict):
                self._message(event, when)

    def _compaction(self, event: dict[str, Any], when: dt.datetime | None) -> None:
        self.close()
        summary = str(event.get("summary") or "")
        record = {
            "id": event.get("id"),
            "timestamp": event.get("timestamp"),
            "summary": summary,
            "first_kept_entry_id": event.get("firstKeptEntryId"),
            "tokens_before": event.get("tokensBefore"),
            "tokens_after": event.get("tokensAfter"),
        }
        self.session_meta["compactions"].append(record)
        self.pending["after_compaction"] = event.get("id")
        if summary:  # What the model sees from now on instead of the older messages.
            self.history.append({"role": "agent", "message": f"[compaction summary] {summary}", "timestamp": when})

    def _reset(self, event: dict[str, Any]) -> None:
        self.close()
        self.session_meta["resets"].append(
            {"id": event.get("id"), "timestamp": event.get("timestamp"), "reason": event.get("reason")}
        )
        self.pending["after_reset"] = event.get("reason") or True
        self.history = []

    def _message(self, event: dict[str, Any], when: dt.datetime | None) -> None:
        message = event["message"]
        role = message.get("role")
        if role == "user":
            self._user(message, event, when)
        elif role == "assistant":
            if self.current is not None:  # Else a greeting before any user message: context only.
                _add_assistant(self.current, message, event)
            self._add_history("agent", message, when)
        elif role == "toolResult" and self.current is not None:
            self.current.has_answer = True
            self.current.agent_meta.setdefault("tool_results", []).append(tool_result(message))

    def _user(self, message: dict[str, Any], event: dict[str, Any], when: dt.datetime | None) -> None:
        if self.current is not None and self.current.has_answer:
            self.close()
        if self.current is None:
            self.current = _Turn(context=self.history[-self.window :] if self.window else [])
            self.current.user_meta = {"openclaw": {"entry_id": event.get("id"), "parent_id": event.get("parentId")}}
            self.current.user_meta.update(self.pending)
            self.pending = {}
            if message.get("idempotencyKey"):
                self.current.user_meta["openclaw"]["idempotency_key"] = message["idempotencyKey"]
        else:
            self.current.user_meta["openclaw"].setdefault("more_entry_ids", []).append(event.get("id"))
        self.current.users.append({**message, "_at": when})
        self._add_history("user", message, when)

    def _add_history(self, role: str, message: dict[str, Any], when: dt.datetime | None) -> None:
        text = message_text(message)
        if text:
            self.history.append({"role": role, "message": text, "timestamp": when})


def _add_assistant(turn: _Turn, message: dict[str, Any], event: dict[str, Any]) -> None:
    turn.has_answer = True
    meta = turn.agent_meta
    marks = message.get("__openclaw") if isinstance(message.get("__openclaw"), dict) else {}
    if marks.get("runId") and not turn.run_id:
        turn.run_id = str(marks["runId"])
    if message.get("responseId"):
        turn.response_id = str(message["responseId"])
    text = message_text(message)
    if text:
        turn.replies.append(text)
    for part in message.get("content") if isinstance(message.get("content"), list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "toolCall":
            meta.setdefault("tool_calls", []).append(
                {"id": part.get("id"), "name": part.get("name"), "arguments": part.get("arguments")}
            )
        elif part.get("type") == "thinking" and part.get("thinking"):
            meta.setdefault("thinking", []).append(str(part["thinking"]))
    for name, value in (("model", message.get("model")), ("provider", message.get("provider"))):
        if value:
            meta[name] = value
    if message.get("stopReason"):
        meta["stop_reason"] = message["stopReason"]
    if message.get("errorMessage"):
        meta["error"] = message["errorMessage"]
    if isinstance(message.get("usage"), dict):
        meta.setdefault("usage", []).append(message["usage"])
    meta.setdefault("entry_ids", []).append(event.get("id"))


def _turn_body(turn: _Turn, session: dict[str, Any], *, sender: str | None, fallback: dt.datetime) -> dict[str, Any]:
    """One turn as a ``TurnIn`` body; a turn without a time takes ``fallback`` (the time of the import)."""
    first_user = turn.users[0]
    message_id = turn.run_id or f"entry:{turn.user_meta['openclaw']['entry_id']}"
    created = first_user.get("_at") or event_time(first_user.get("timestamp")) or fallback
    return {
        "session": session,
        "user_message": {
            "id": str(message_id)[:255],
            "content": user_text(turn.users),
            "from": sender,
            "metadata": turn.user_meta,
        },
        "agent_reply": {
            "id": str(turn.response_id)[:255] if turn.response_id else None,
            "content": "\n\n".join(turn.replies),
            "metadata": {"run_id": turn.run_id, **turn.agent_meta},
        },
        "context": [
            {
                "role": item["role"],
                "message": item["message"],
                "timestamp": (item["timestamp"] or created).isoformat(),
            }
            for item in turn.context
        ],
        "created_at": created.isoformat(),
    }


def build_turns(transcripts: list[Transcript], *, window: int | None = None) -> list[dict[str, Any]]:
    """The turns of one session (all its windows, oldest first) as ``TurnIn`` bodies, not yet validated."""
    window = settings.MEMORY_GATE_WINDOW_SIZE if window is None else window
    transcripts = sorted(transcripts, key=lambda t: (t.started_at, t.session_id))
    session, sender = _session(transcripts)
    reader = _TurnReader(session["metadata"], window=window)
    for transcript in transcripts:
        reader.read(transcript, first=transcript is transcripts[0])
    reader.close()
    fallback = dt.datetime.now(tz=dt.UTC)
    return [_turn_body(turn, session, sender=sender, fallback=fallback) for turn in reader.turns]
