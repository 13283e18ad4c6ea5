"""Import what OpenClaw has stored: its sessions become Reflection sessions, its turns our turns.

Where OpenClaw keeps history (checked against ``openclaw@2026.9.6``; its own store wins over any note):

    ~/.openclaw/agents/<agentId>/agent/openclaw-agent.sqlite   today's store, one per agent (read-only here)
        session_nodes(session_key, current_session_id, entry_json)           the session entries
        session_windows(session_id, session_key, reason, channel, …)        each window of a key (resets)
        transcript_events(session_id, seq, event_json | event_zstd)          the events, zstd when large
        session_transcript_archives(session_key, encoding, archive_blob)     deleted and reset transcripts
        session_transcript_cold_archives(session_id, archive_name, storage)  cold history, blob or file
    ~/.openclaw/agents/<agentId>/sessions/                        older installs and archive files
        sessions.json                          {session key: entry with sessionId}
        <sessionId>.jsonl                      a transcript
        *.jsonl.zst, *.jsonl.deleted.<t>.zst   archives; cold/<sha256>.jsonl.zst cold history

A transcript is JSONL: a ``{"type": "session", "version": 4, …}`` header, then entries with ``id``,
``parentId`` and an ISO ``timestamp``: ``message`` (``role`` user, assistant or toolResult, content parts
``text``, ``thinking``, ``toolCall``), ``compaction``, ``reset``, ``model_change``, ``custom`` and others.

Each session key is one Reflection session, named by the key itself, as the OpenClaw plugin
(``integrations/openclaw``) names it: an import after a live feed, or a live feed after an import, adds
nothing twice. All windows of a key (a reset starts a new one) go into that session, oldest first. A turn
is a user message (consecutive ones joined) and everything until the next: the assistant's text is the
reply; its thinking, tool calls, tool results (with ``isError``), usage and model go in the reply's
metadata; entry ids and ``parentId`` (OpenClaw's tree) in the user message's. Its user message id is the
run id OpenClaw stamps on the assistant's messages (the plugin's ``agent_end`` id), else the user entry's
id. Compactions and resets are kept in the session's metadata and before the next turn (a compaction's
summary enters its context window; a reset empties it). Turns go through ``ingest_turn``, the ingest API's
code path, without a turn number, so a resent turn is found by its message id.

Finding nothing to import is an error naming every place looked at. A source that cannot be read is
reported by name and the rest goes on. Imported turns skip the memory gate unless ``gate``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard
from django.conf import settings
from pydantic import ValidationError

from reflection_site.errors import ReflectionError
from sessions_app.errors import SessionsError
from sessions_app.ingest import ingest_turn
from sessions_app.models import ConversationTurn
from sessions_app.schemas import TurnIn

logger = logging.getLogger(__name__)

STORE_NAME = "openclaw-agent.sqlite"
TOOL_TEXT_LIMIT = 4000  # Characters of a tool result kept in metadata (the plugin keeps the same).
_MAX_EVENT_BYTES = 4 * 1024 * 1024  # OpenClaw's own bound on one event (its CHECK on transcript_events).
_ARCHIVE_SUFFIXES = (".jsonl.zst",)

Progress = Callable[[int, int, str], None]


class NothingToImport(SessionsError):
    code = "nothing_to_import"


@dataclass
class ImportReport:
    files: int = 0
    sessions: int = 0
    turns_created: int = 0
    turns_existing: int = 0
    turns_failed: list[str] = field(default_factory=list)
    malformed: list[tuple[str, str]] = field(default_factory=list)  # (source, why)
    dry_run: bool = False
    session_keys: list[str] = field(default_factory=list)

    def summary(self) -> str:
        verb = "Would import" if self.dry_run else "Imported"
        line = (
            f"{verb} {self.sessions} session(s) from {self.files} source(s): {self.turns_created} new turn(s), "
            f"{self.turns_existing} already stored"
        )
        if self.turns_failed:
            line += f", {len(self.turns_failed)} turn(s) refused"
        if self.malformed:
            line += f"; skipped {len(self.malformed)} unreadable source(s)"
        return line


@dataclass
class Transcript:
    """One window of one session: its events as OpenClaw wrote them."""

    source: str  # Where it was read, for messages: "agents/main/agent/openclaw-agent.sqlite#<sessionId>".
    session_key: str | None
    session_id: str
    agent_id: str | None
    events: list[dict[str, Any]]
    entry: dict[str, Any] = field(default_factory=dict)  # The session entry (entry_json / sessions.json).
    window: dict[str, Any] = field(default_factory=dict)  # session_windows' row, or the archive's facts.
    started_at: float = 0.0  # Sort key among the windows of a key (epoch ms).


# --- Session keys -------------------------------------------------------------------------------------------------
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


# --- Reading the stores ---------------------------------------------------------------------------------------------
def decode_zstd(blob: bytes, *, limit: int = _MAX_EVENT_BYTES * 64) -> bytes:
    """A zstd frame (OpenClaw's level-1 frames carry a checksum, not always a content size)."""
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob)) as reader:
        data = reader.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"zstd payload larger than {limit} bytes")
    return data


def parse_jsonl(data: bytes | str, source: str) -> list[dict[str, Any]]:
    """The events of a JSONL transcript; raises ValueError naming the first bad line."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{source} line {number} is not JSON: {exc}") from exc
        if isinstance(event, dict):
            events.append(event)
    if not events:
        raise ValueError(f"{source} holds no events")
    return events


def _header(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next((e for e in events if e.get("type") == "session"), {})


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """OpenClaw's database, read-only: nothing here can write to it (a running gateway keeps its WAL)."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    connection.row_factory = sqlite3.Row
    return connection


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _json(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _agent_of_store(path: Path) -> str | None:
    """``agents/<agentId>/agent/openclaw-agent.sqlite`` -> agentId."""
    return path.parent.parent.name if path.parent.name == "agent" else None


def _cold_dir(path: Path) -> Path:
    """Where the store's cold archives live: ``sessions/cold`` beside ``agent/``, else ``cold`` beside it."""
    return path.parent.parent / "sessions" / "cold" if path.parent.name == "agent" else path.parent / "cold"


def read_store(path: Path, *, label: str) -> tuple[list[Transcript], list[tuple[str, str]]]:
    """Every window of every session in one per-agent SQLite store, and the windows it could not read."""
    agent_id = _agent_of_store(path)
    transcripts: list[Transcript] = []
    problems: list[tuple[str, str]] = []
    with closing(_connect_readonly(path)) as db:
        tables = _tables(db)
        if not {"session_nodes", "transcript_events"} <= tables:
            raise ValueError(f"{label} is not an OpenClaw agent store (no session_nodes/transcript_events)")
        if agent_id is None and "schema_meta" in tables:
            row = db.execute("SELECT agent_id FROM schema_meta WHERE agent_id IS NOT NULL LIMIT 1").fetchone()
            agent_id = row[0] if row else None
        entries = {
            row["session_key"]: (_json(row["entry_json"]), row["current_session_id"])
            for row in db.execute("SELECT session_key, current_session_id, entry_json FROM session_nodes")
        }
        windows: dict[str, dict[str, Any]] = {}
        if "session_windows" in tables:
            for row in db.execute("SELECT * FROM session_windows ORDER BY created_at, session_id"):
                windows[row["session_id"]] = dict(row)
        for key, (_, current) in entries.items():
            windows.setdefault(current, {"session_id": current, "session_key": key, "created_at": 0})
        cold = {}
        if "session_transcript_cold_archives" in tables:
            cold = {
                row["session_id"]: dict(row) for row in db.execute("SELECT * FROM session_transcript_cold_archives")
            }
        for session_id, window in windows.items():
            key = window.get("session_key")
            source = f"{label}#{session_id}"
            try:
                events = _store_events(db, path, session_id, cold.get(session_id), source)
            except (ValueError, OSError, zstandard.ZstdError) as exc:
                problems.append((source, str(exc)))
                continue
            if not events:
                continue
            entry = entries.get(key, ({}, None))[0] if key else {}
            transcripts.append(
                Transcript(
                    source, key, session_id, agent_id, events, entry, window, float(window.get("created_at") or 0)
                )
            )
        if "session_transcript_archives" in tables:
            for row in db.execute("SELECT * FROM session_transcript_archives ORDER BY created_at"):
                source = f"{label}#{row['archive_name']}"
                try:
                    blob = bytes(row["archive_blob"])
                    events = parse_jsonl(decode_zstd(blob) if row["encoding"] == "zstd" else blob, source)
                except (ValueError, zstandard.ZstdError) as exc:
                    problems.append((source, str(exc)))
                    continue
                facts = {"session_id": row["session_id"], "reason": row["reason"], "archive": row["archive_name"]}
                transcripts.append(
                    Transcript(
                        source,
                        row["session_key"],
                        row["session_id"],
                        agent_id,
                        events,
                        {},
                        facts,
                        float(row["created_at"]),
                    )
                )
    return transcripts, problems


def _store_events(
    db: sqlite3.Connection, path: Path, session_id: str, cold: dict[str, Any] | None, source: str
) -> list[dict[str, Any]]:
    events = []
    rows = db.execute(
        "SELECT seq, event_json, event_zstd, event_utf8_bytes FROM transcript_events WHERE session_id = ? ORDER BY seq",
        [session_id],
    )
    for row in rows:
        if row["event_json"] is not None:
            text = row["event_json"]
        else:
            limit = int(row["event_utf8_bytes"] or _MAX_EVENT_BYTES)
            text = decode_zstd(bytes(row["event_zstd"]), limit=limit).decode("utf-8")
        try:
            event = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"event {row['seq']} is not JSON: {exc}") from exc
        if isinstance(event, dict):
            events.append(event)
    if events or cold is None:
        return events
    # The payload was moved to cold storage: a blob in the row, or a file in the cold folder.
    if cold.get("storage") == "sqlite" and cold.get("archive_blob") is not None:
        return parse_jsonl(decode_zstd(bytes(cold["archive_blob"])), source)
    cold_file = _cold_dir(path) / str(cold["archive_name"])
    return parse_jsonl(decode_zstd(cold_file.read_bytes()), source)


def read_sessions_index(
    folder: Path, *, label: str
) -> tuple[dict[str, tuple[str, dict[str, Any]]], list[tuple[str, str]]]:
    """``{sessionId: (session key, entry)}`` for a legacy ``sessions/`` folder: its ``sessions.json``, and the
    agent store beside it (``../agent/openclaw-agent.sqlite``), which knows the keys of archived windows."""
    problems: list[tuple[str, str]] = []
    by_id: dict[str, tuple[str, dict[str, Any]]] = {}
    store = folder.parent / "agent" / STORE_NAME
    if folder.name == "sessions" and store.is_file():
        try:
            with closing(_connect_readonly(store)) as db:
                tables = _tables(db)
                for table in ("session_windows", "session_transcript_archives"):
                    if table in tables:
                        for session_id, key in db.execute(f"SELECT session_id, session_key FROM {table}"):
                            by_id.setdefault(session_id, (key, {}))
        except sqlite3.Error as exc:
            problems.append((f"{label}/../agent/{STORE_NAME}", str(exc)))
    index = folder / "sessions.json"
    if index.is_file():
        try:
            raw = json.loads(index.read_text(encoding="utf-8"))
            if not isinstance(raw, dict):
                raise ValueError("expected an object of session entries")
            for key, entry in raw.items():
                if isinstance(entry, dict) and entry.get("sessionId"):
                    by_id[str(entry["sessionId"])] = (key, entry)
        except (ValueError, OSError) as exc:
            problems.append((f"{label}/sessions.json", str(exc)))
    return by_id, problems


def read_transcript_file(
    file: Path, index: dict[str, tuple[str, dict[str, Any]]], *, source: str, agent_id: str | None
) -> Transcript:
    """One legacy transcript or archive file; raises ValueError (or a zstd error) when it is not one."""
    data = file.read_bytes()
    events = parse_jsonl(decode_zstd(data) if file.name.endswith(".zst") else data, source)
    header = _header(events)
    session_id = str(header.get("id") or file.name.split(".jsonl")[0])
    key, entry = index.get(session_id, (None, {}))
    started = _epoch_ms(header.get("timestamp")) or file.stat().st_mtime * 1000
    return Transcript(
        source, key, session_id, agent_id, events, entry, {"session_id": session_id, "file": file.name}, started
    )


def folder_files(folder: Path) -> list[Path]:
    """The transcript and archive files of a legacy ``sessions/`` folder."""
    files = sorted(p for p in folder.glob("*.jsonl") if p.is_file())
    files += sorted(p for p in folder.iterdir() if p.is_file() and _is_archive(p.name))
    cold = folder / "cold"
    if cold.is_dir():
        files += sorted(p for p in cold.iterdir() if p.is_file() and p.name.endswith(_ARCHIVE_SUFFIXES))
    return files


def _is_archive(name: str) -> bool:
    # <id>.jsonl.zst, <id>.jsonl.deleted.<timestamp>.zst, <id>.jsonl.reset.<timestamp>.zst
    return ".jsonl" in name and name.endswith(".zst")


# --- Finding the sources ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    kind: str  # "store" (one SQLite file) or "folder" (a legacy sessions/ folder)
    path: Path
    agent_id: str | None


def find_sources(path: Path) -> tuple[list[Source], list[Path]]:
    """The stores and legacy folders under ``path`` (an OpenClaw home, an agent folder, a ``sessions/`` folder
    or a store file), and every place looked at (for the "nothing found" error)."""
    path = Path(path).expanduser()
    looked: list[Path] = []
    sources: list[Source] = []

    def store(file: Path, agent: str | None) -> None:
        looked.append(file)
        if file.is_file():
            sources.append(Source("store", file, agent))

    def folder(directory: Path, agent: str | None) -> None:
        looked.append(directory)
        if directory.is_dir() and folder_files(directory):
            sources.append(Source("folder", directory, agent))

    def agent_dir(directory: Path) -> None:
        store(directory / "agent" / STORE_NAME, directory.name)
        folder(directory / "sessions", directory.name)

    if path.is_file():
        store(path, _agent_of_store(path))
    elif (path / "agents").is_dir():  # The OpenClaw home (~/.openclaw, or $OPENCLAW_STATE_DIR).
        looked.append(path / "agents")
        for directory in sorted(p for p in (path / "agents").iterdir() if p.is_dir()):
            agent_dir(directory)
        folder(path / "sessions", None)  # The oldest single-agent layout.
    elif (path / "agent").is_dir() or (path / "sessions").is_dir():  # One agent's folder.
        agent_dir(path)
    elif path.name == "agent":
        store(path / STORE_NAME, path.parent.name)
    else:
        folder(path, path.parent.name if path.name == "sessions" else None)
    return sources, looked


def transcript_files(path: Path) -> list[Path]:
    """The files an import of ``path`` reads, one unit of work each (a store, a legacy transcript or archive)."""
    files: list[Path] = []
    for source in find_sources(path)[0]:
        if source.kind == "store":
            files.append(source.path)
        else:
            files += folder_files(source.path)
    return files


# --- Events to turns -----------------------------------------------------------------------------------------------
def _epoch_ms(value: Any) -> float | None:
    when = _time(value)
    return when.timestamp() * 1000 if when else None


def _time(value: Any) -> dt.datetime | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, int | float):
            return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
        if isinstance(value, str):
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


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


def build_turns(transcripts: list[Transcript], *, window: int | None = None) -> list[dict[str, Any]]:
    """The turns of one session (all its windows, oldest first) as ``TurnIn`` bodies, not yet validated."""
    window = settings.MEMORY_GATE_WINDOW_SIZE if window is None else window
    transcripts = sorted(transcripts, key=lambda t: (t.started_at, t.session_id))
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

    turns: list[_Turn] = []
    history: list[dict[str, Any]] = []
    current: _Turn | None = None
    pending: dict[str, Any] = {}  # What happened since the last turn (a compaction, a reset), for the next.

    def close() -> None:
        nonlocal current
        if current is not None and current.users:
            turns.append(current)
        current = None

    for transcript in transcripts:
        header = _header(transcript.events)
        session_meta["windows"].append(
            {
                "session_id": transcript.session_id,
                "source": transcript.source,
                "reason": transcript.window.get("reason"),
                "started": header.get("timestamp"),
                "transcript_version": header.get("version"),
            }
        )
        if transcript is not first:
            close()
            history = []
            pending["new_window"] = transcript.session_id
        for event in transcript.events:
            kind = event.get("type")
            when = _time(event.get("timestamp"))
            if kind == "compaction":
                close()
                summary = str(event.get("summary") or "")
                record = {
                    "id": event.get("id"),
                    "timestamp": event.get("timestamp"),
                    "summary": summary,
                    "first_kept_entry_id": event.get("firstKeptEntryId"),
                    "tokens_before": event.get("tokensBefore"),
                    "tokens_after": event.get("tokensAfter"),
                }
                session_meta["compactions"].append(record)
                pending["after_compaction"] = event.get("id")
                if summary:  # What the model sees from now on instead of the older messages.
                    history.append({"role": "agent", "message": f"[compaction summary] {summary}", "timestamp": when})
                continue
            if kind == "reset":
                close()
                session_meta["resets"].append(
                    {"id": event.get("id"), "timestamp": event.get("timestamp"), "reason": event.get("reason")}
                )
                pending["after_reset"] = event.get("reason") or True
                history = []
                continue
            if kind != "message" or not isinstance(event.get("message"), dict):
                continue
            message = event["message"]
            role = message.get("role")
            if role == "user":
                if current is not None and current.has_answer:
                    close()
                if current is None:
                    current = _Turn(context=history[-window:] if window else [])
                    current.user_meta = {"openclaw": {"entry_id": event.get("id"), "parent_id": event.get("parentId")}}
                    current.user_meta.update(pending)
                    pending = {}
                    if message.get("idempotencyKey"):
                        current.user_meta["openclaw"]["idempotency_key"] = message["idempotencyKey"]
                else:
                    current.user_meta["openclaw"].setdefault("more_entry_ids", []).append(event.get("id"))
                current.users.append({**message, "_at": when})
                text = message_text(message)
                if text:
                    history.append({"role": "user", "message": text, "timestamp": when})
            elif role == "assistant" and current is not None:
                _add_assistant(current, message, event)
                text = message_text(message)
                if text:
                    history.append({"role": "agent", "message": text, "timestamp": when})
            elif role == "toolResult" and current is not None:
                current.has_answer = True
                current.agent_meta.setdefault("tool_results", []).append(tool_result(message))
            elif role == "assistant":  # A greeting before any user message: context only.
                text = message_text(message)
                if text:
                    history.append({"role": "agent", "message": text, "timestamp": when})
    close()

    fallback = dt.datetime.now(tz=dt.UTC)
    bodies = []
    for turn in turns:
        first_user = turn.users[0]
        message_id = turn.run_id or f"entry:{turn.user_meta['openclaw']['entry_id']}"
        created = first_user.get("_at") or _time(first_user.get("timestamp")) or fallback
        bodies.append(
            {
                "session": session,
                "user_message": {
                    "id": str(message_id)[:255],
                    "content": user_text(turn.users),
                    "from": str(peer)[:255] if peer and parsed.get("scope") in ("direct", "dm") else None,
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
        )
    return bodies


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


# --- The import -------------------------------------------------------------------------------------------------------
@contextmanager
def _gate(enabled: bool) -> Iterator[None]:
    """Imported history skips the memory gate unless asked: ingest reads MEMORY_GATE_ENABLED per turn."""
    previous = settings.MEMORY_GATE_ENABLED
    settings.MEMORY_GATE_ENABLED = previous and enabled
    try:
        yield
    finally:
        settings.MEMORY_GATE_ENABLED = previous


def _already_stored(payload: TurnIn) -> bool:
    return ConversationTurn.objects.filter(
        session_id=payload.session.id, user_message_id=payload.user_message.id
    ).exists()


def import_key(path: Path) -> str:
    """The checkpoint key of an import: the resolved path (one import of a place at a time)."""
    return hashlib.sha256(str(Path(path).expanduser().resolve()).encode()).hexdigest()[:32]


def _counts(report: ImportReport) -> dict[str, Any]:
    return {
        "files": report.files,
        "sessions": report.sessions,
        "turns_created": report.turns_created,
        "turns_existing": report.turns_existing,
        "turns_failed": report.turns_failed[-200:],
        "malformed": [list(m) for m in report.malformed[-200:]],
        "session_keys": report.session_keys[-1000:],
    }


def _restore(report: ImportReport, state: dict[str, Any]) -> None:
    counts = state.get("report") or {}
    report.files = counts.get("files", 0)
    report.sessions = counts.get("sessions", 0)
    report.turns_created = counts.get("turns_created", 0)
    report.turns_existing = counts.get("turns_existing", 0)
    report.turns_failed = list(counts.get("turns_failed", []))
    report.malformed = [tuple(m) for m in counts.get("malformed", [])]
    report.session_keys = list(counts.get("session_keys", []))


def _read_unit(root: Path, unit: Path, report: ImportReport, indexes: dict[Path, Any]) -> list[Transcript]:
    """The transcripts of one unit of work: a store, or one file of a legacy folder."""
    label = _label(root, unit)
    if unit.suffix == ".sqlite":
        try:
            transcripts, problems = read_store(unit, label=label)
        except (sqlite3.Error, ValueError, OSError) as exc:
            report.malformed.append((label, str(exc)))
            return []
        report.malformed.extend(problems)
        return transcripts
    folder = unit.parent.parent if unit.parent.name == "cold" else unit.parent
    if folder not in indexes:
        indexes[folder], problems = read_sessions_index(folder, label=_label(root, folder))
        report.malformed.extend(problems)
    agents = folder.parent.parent
    agent_id = folder.parent.name if folder.name == "sessions" and agents.name == "agents" else None
    try:
        return [read_transcript_file(unit, indexes[folder], source=label, agent_id=agent_id)]
    except (ValueError, OSError, zstandard.ZstdError) as exc:
        report.malformed.append((label, str(exc)))
        return []


def _label(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix() or path.name
    except ValueError:
        return str(path)


def _ingest_session(transcripts: list[Transcript], report: ImportReport, *, dry_run: bool) -> None:
    bodies = build_turns(transcripts)
    if not bodies:
        return
    session_id = bodies[0]["session"]["id"]
    if session_id not in report.session_keys:
        report.session_keys.append(session_id)
        report.sessions += 1
    for number, body in enumerate(bodies, start=1):
        label = f"{transcripts[0].source} turn {number}"
        try:
            payload = TurnIn.model_validate(body)
            if dry_run:
                if _already_stored(payload):
                    report.turns_existing += 1
                else:
                    report.turns_created += 1
                continue
            _, created = ingest_turn(payload)
        except ValidationError as exc:
            report.turns_failed.append(f"{label}: {exc.errors()[0].get('msg', 'invalid')}")
            continue
        except ReflectionError as exc:  # Too long, or the same key stored with other content.
            report.turns_failed.append(f"{label}: {exc.message}")
            continue
        if created:
            report.turns_created += 1
        else:
            report.turns_existing += 1


def _import_unit(root: Path, unit: Path, report: ImportReport, indexes: dict[Path, Any], *, dry_run: bool) -> None:
    report.files += 1
    by_key: dict[str, list[Transcript]] = {}
    for transcript in _read_unit(root, unit, report, indexes):
        by_key.setdefault(transcript.session_key or f"openclaw:{transcript.session_id}", []).append(transcript)
    for transcripts in by_key.values():
        _ingest_session(transcripts, report, dry_run=dry_run)


def _root(path: Path) -> Path:
    path = Path(path).expanduser()
    return path.parent if path.is_file() else path


def _units(path: Path) -> list[Path]:
    files = transcript_files(path)
    if not files:
        _, looked = find_sources(path)
        places = ", ".join(str(p) for p in looked) or str(path)
        raise NothingToImport(
            f"Found no OpenClaw sessions to import. Looked for agents/<agentId>/agent/{STORE_NAME} and "
            f"sessions/ (sessions.json, *.jsonl, *.jsonl.zst) in: {places}",
            details={"looked_in": [str(p) for p in looked]},
        )
    return files


def import_sessions(
    path: Path, *, dry_run: bool = False, gate: bool = False, progress: Progress | None = None
) -> ImportReport:
    """Import every OpenClaw session under ``path``; see the module docstring.

    1. Find the stores and legacy folders (``NothingToImport`` names where it looked when there are none).
    2. Read each unit (a store, or one legacy file), build its sessions' turns, ingest them.

    Resumable (seed 004 P2-002): the list of units and the index of the next one are kept in a checkpoint
    (``reflection_site.checkpoints``), so an import killed halfway continues where it stopped on its next run,
    or when a worker starts; turns are idempotent, so the unit it was in is read again without adding
    anything twice. Raises CheckpointBusy while another live process imports the same place.
    """
    if not Path(path).expanduser().exists():
        raise FileNotFoundError(f"{path} does not exist")
    root = _root(path)
    files = _units(path)
    report = ImportReport(dry_run=dry_run)
    indexes: dict[Path, Any] = {}  # A legacy folder's session keys, read once per import.
    if dry_run:
        with _gate(gate):
            for done, file in enumerate(files, start=1):
                _import_unit(root, file, report, indexes, dry_run=True)
                if progress:
                    progress(done, len(files), _label(root, file))
        _found_something(report, files)
        return report

    # An upward hand-off, as the gate's: resumable jobs keep their checkpoints in guardian_app.
    from reflection_site import checkpoints
    from reflection_site.models import JobCheckpoint

    place = Path(path).expanduser().resolve()
    checkpoint = checkpoints.claim(
        JobCheckpoint.Job.OPENCLAW_IMPORT, import_key(place), params={"path": str(place), "gate": gate}, restart=True
    )
    if checkpoint.stage == "importing":
        files = [root / rel for rel in checkpoint.candidates]  # The list the interrupted run was working through.
        _restore(report, checkpoint.state)
    else:
        checkpoints.save(
            checkpoint,
            stage="importing",
            candidates=[_label(root, f) for f in files],
            processed_index=0,
            state={"report": _counts(report)},
        )
    try:
        with _gate(gate):
            for index in range(checkpoint.processed_index, len(files)):
                file = files[index]
                _import_unit(root, file, report, indexes, dry_run=False)
                checkpoints.save(checkpoint, processed_index=index + 1, state={"report": _counts(report)})
                if progress:
                    progress(index + 1, len(files), _label(root, file))
    except (checkpoints.LeaseLost, checkpoints.CheckpointBusy):
        raise
    except BaseException as exc:
        checkpoints.release(checkpoint, error=repr(exc))
        raise
    checkpoints.finish(checkpoint, state={"report": _counts(report)})
    _found_something(report, files)
    return report


def _found_something(report: ImportReport, files: list[Path]) -> None:
    """Sources that hold no conversation at all are "nothing found" too, and say which they were."""
    if report.sessions or report.turns_created or report.turns_existing or report.turns_failed:
        return
    unreadable = "; ".join(f"{name}: {why}" for name, why in report.malformed[:5])
    raise NothingToImport(
        f"Found no OpenClaw conversation in {', '.join(str(f) for f in files)}"
        + (f" (unreadable: {unreadable})" if unreadable else ""),
        details={"looked_in": [str(f) for f in files], "unreadable": [list(m) for m in report.malformed]},
    )


def resume_checkpoint(checkpoint: Any) -> ImportReport | None:
    """``reflection_site.checkpoints.resume_incomplete``'s entry: finish an interrupted import."""
    params = checkpoint.params or {}
    place = Path(params.get("path") or "")
    if not params.get("path") or not place.exists():
        logger.warning("import_openclaw: cannot resume %s: %s does not exist", checkpoint.key, place)
        return None
    report = import_sessions(place, gate=bool(params.get("gate")))
    logger.info("import_openclaw: resumed %s: %s", place, report.summary())
    return report
