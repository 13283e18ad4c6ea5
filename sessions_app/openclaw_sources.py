"""Where OpenClaw keeps its history, and reading it: the per-agent SQLite stores, the legacy ``sessions/``
folders and their archives, each window of a session as a ``Transcript`` of events (``openclaw_import``
imports them, ``openclaw_turns`` makes them turns).

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

A source that cannot be read is reported by name (``problems``, ``ValueError``) and the rest goes on.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

STORE_NAME = "openclaw-agent.sqlite"
_MAX_EVENT_BYTES = 4 * 1024 * 1024  # OpenClaw's own bound on one event (its CHECK on transcript_events).
_ARCHIVE_SUFFIXES = (".jsonl.zst",)


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


# --- Times as OpenClaw writes them ------------------------------------------------------------------------------------
def epoch_ms(value: Any) -> float | None:
    """``event_time`` as epoch milliseconds."""
    when = event_time(value)
    return when.timestamp() * 1000 if when else None


def event_time(value: Any) -> dt.datetime | None:
    """An event's time: epoch milliseconds or ISO 8601 (UTC without a zone); None for anything else."""
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


# --- Reading the stores -----------------------------------------------------------------------------------------------
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


def transcript_header(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A transcript's ``{"type": "session", …}`` header, or {}."""
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
    header = transcript_header(events)
    session_id = str(header.get("id") or file.name.split(".jsonl")[0])
    key, entry = index.get(session_id, (None, {}))
    started = epoch_ms(header.get("timestamp")) or file.stat().st_mtime * 1000
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


# --- Finding the sources ----------------------------------------------------------------------------------------------
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
