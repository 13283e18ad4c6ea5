"""Import an OpenClaw ``sessions/`` folder (seed 003 §4): transcripts become sessions, turns and context windows.

The folder, as OpenClaw writes it (JSON5):

    sessions/
      registry.json5          session key -> SessionEntry (sessionId, sessionFile, channel, origin, groupId, …)
      chats/{sessionId}.json5 {sessionId, createdAt, messages: [{role, content, timestamp, …}], compactedHistory}
      groups/{groupId}.json5  the same, for group chats (user messages carry a sender)

Each transcript is one Reflection session, ``openclaw:<sessionId>`` (the registry's session key, channel,
origin and compaction summaries go into its metadata). Each user message and the assistant reply that
follows it is one turn: consecutive user messages are joined, the assistant's text messages until the next
user message are joined, and its thinking, tool calls and tool results are kept in the turn's metadata.
The messages before a turn (up to ``MEMORY_GATE_WINDOW_SIZE``) are its context window.

Every turn goes through ``sessions_app.ingest.ingest_turn``, the ingest API's own code path, with turn
number = its position in the transcript and user message id = ``<sessionId>:<message index>`` (or the
message's own id): importing again finds each turn stored and adds nothing. A file that does not parse is
reported with its name and skipped; the rest goes on. Imported turns skip the memory gate unless ``gate``.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5
from django.conf import settings
from pydantic import ValidationError

from reflection_site.errors import ReflectionError
from sessions_app.ingest import ingest_turn
from sessions_app.models import ConversationTurn
from sessions_app.schemas import TurnIn

logger = logging.getLogger(__name__)

SESSION_PREFIX = "openclaw:"
_USER_ROLES = {"user", "human"}
_ASSISTANT_ROLES = {"assistant", "model", "agent"}
_TOOL_ROLES = {"tool", "toolResult", "tool_result", "function"}

Progress = Callable[[int, int, str], None]


@dataclass
class ImportReport:
    files: int = 0
    sessions: int = 0
    turns_created: int = 0
    turns_existing: int = 0
    turns_failed: list[str] = field(default_factory=list)
    malformed: list[tuple[str, str]] = field(default_factory=list)  # (file, why)
    dry_run: bool = False

    def summary(self) -> str:
        verb = "Would import" if self.dry_run else "Imported"
        line = (
            f"{verb} {self.sessions} session(s) from {self.files} file(s): {self.turns_created} new turn(s), "
            f"{self.turns_existing} already stored"
        )
        if self.turns_failed:
            line += f", {len(self.turns_failed)} turn(s) refused"
        if self.malformed:
            line += f"; skipped {len(self.malformed)} malformed file(s)"
        return line


@dataclass
class Transcript:
    rel: str  # "chats/<id>.json5"
    session_id: str
    session_key: str | None
    entry: dict[str, Any]
    data: dict[str, Any]
    is_group: bool


@dataclass
class _Turn:
    user_parts: list[str] = field(default_factory=list)
    user_index: int = 0
    user_id: str | None = None
    user_from: str | None = None
    user_at: dt.datetime | None = None
    user_meta: dict[str, Any] = field(default_factory=dict)
    reply_parts: list[str] = field(default_factory=list)
    agent_meta: dict[str, Any] = field(default_factory=dict)
    context: list[dict[str, Any]] = field(default_factory=list)


# --- Reading the folder ---------------------------------------------------------------------------------------
def resolve_folder(path: Path) -> Path:
    """The ``sessions/`` folder itself, or an OpenClaw home that holds one."""
    path = Path(path).expanduser()
    if not (path / "registry.json5").exists() and (path / "sessions").is_dir():
        return path / "sessions"
    return path


def _load(path: Path) -> Any:
    return json5.loads(path.read_text(encoding="utf-8"))


def read_registry(folder: Path, report: ImportReport) -> dict[str, tuple[str, dict[str, Any]]]:
    """``{sessionId or sessionFile: (session key, entry)}``; a broken registry is reported and ignored."""
    path = folder / "registry.json5"
    if not path.exists():
        return {}
    try:
        raw = _load(path)
    except (ValueError, OSError) as exc:
        report.malformed.append(("registry.json5", str(exc)))
        return {}
    if isinstance(raw, dict) and "sessions" in raw and isinstance(raw["sessions"], dict | list):
        raw = raw["sessions"]
    if isinstance(raw, list):  # [{key, sessionId, …}]
        raw = {str(e.get("key") or e.get("sessionKey") or e.get("sessionId")): e for e in raw if isinstance(e, dict)}
    if not isinstance(raw, dict):
        report.malformed.append(("registry.json5", "expected an object of session entries"))
        return {}
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for key, entry in raw.items():
        if not isinstance(entry, dict):
            continue
        if entry.get("sessionId"):
            found[str(entry["sessionId"])] = (key, entry)
        if entry.get("sessionFile"):
            found[str(entry["sessionFile"]).lstrip("./")] = (key, entry)
    return found


def transcript_files(folder: Path) -> list[Path]:
    files: list[Path] = []
    for sub in ("chats", "groups"):
        base = folder / sub
        if base.is_dir():
            files += sorted(p for p in base.iterdir() if p.is_file() and p.suffix in (".json5", ".json"))
    return files


def load_transcript(folder: Path, path: Path, registry: dict[str, tuple[str, dict[str, Any]]]) -> Transcript:
    """Parse one transcript file; raises ValueError when it is not one."""
    data = _load(path)
    if not isinstance(data, dict):
        raise ValueError("expected an object with a messages list")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ValueError("no messages list")
    rel = path.relative_to(folder).as_posix()
    session_id = str(data.get("sessionId") or path.stem)
    key, entry = registry.get(rel) or registry.get(session_id) or (None, {})
    return Transcript(
        rel=rel, session_id=session_id, session_key=key, entry=entry, data=data, is_group=rel.startswith("groups/")
    )


# --- Messages to turns ----------------------------------------------------------------------------------------------
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


def _parts(message: dict[str, Any]) -> tuple[str, list[Any], list[Any], list[str]]:
    """(text, thinking, tool calls, other part types) of a message whose content is a string or a list of parts."""
    content = message.get("content")
    texts: list[str] = []
    thinking: list[Any] = list(message.get("thinkingBlocks") or [])
    tool_calls: list[Any] = list(message.get("toolCalls") or message.get("tool_calls") or [])
    other: list[str] = []
    items = content if isinstance(content, list) else [content]
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict):
            kind = item.get("type", "text")
            if kind in ("text", "output_text", "input_text"):
                texts.append(str(item.get("text") or ""))
            elif kind in ("thinking", "thought", "reasoning"):
                thinking.append(item)
            elif kind in ("toolCall", "tool_use", "tool_call", "function_call"):
                tool_calls.append(item)
            else:
                other.append(str(kind))
    return "\n".join(t for t in texts if t).strip(), thinking, tool_calls, other


def _sender(message: dict[str, Any]) -> str | None:
    for key in ("sender", "from", "senderName", "name", "author"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:255]
        if isinstance(value, dict) and (value.get("name") or value.get("id")):
            return str(value.get("name") or value.get("id"))[:255]
    return None


def build_turns(transcript: Transcript, *, window: int | None = None) -> list[dict[str, Any]]:
    """The transcript's turns as ``TurnIn`` bodies, in order (not yet validated)."""
    window = settings.MEMORY_GATE_WINDOW_SIZE if window is None else window
    data = transcript.data
    fallback = _time(data.get("createdAt")) or _time(data.get("updatedAt")) or dt.datetime.now(tz=dt.UTC)
    entry = transcript.entry
    origin = entry.get("origin") if isinstance(entry.get("origin"), dict) else {}
    channel = str(entry.get("channel") or origin.get("provider") or ("group" if transcript.is_group else "openclaw"))
    session = {
        "id": f"{SESSION_PREFIX}{transcript.session_id}"[:255],
        "channel_id": channel[:255],
        "conversation_target": str(entry.get("groupId") or data.get("groupId") or origin.get("from") or "")[:255]
        or None,
        "account_id": str(origin.get("accountId"))[:255] if origin.get("accountId") else None,
        "metadata": {
            "source": "openclaw_import",
            "session_key": transcript.session_key,
            "session_file": transcript.rel,
            "openclaw": {
                k: entry[k] for k in ("channel", "origin", "groupId", "modelOverride", "thinkingLevel") if k in entry
            },
            "compacted_history": [
                str(item.get("content") or "") for item in data.get("compactedHistory") or [] if isinstance(item, dict)
            ],
        },
    }

    turns: list[_Turn] = []
    history: list[dict[str, Any]] = []  # Context items seen so far.
    current: _Turn | None = None
    last_time = fallback

    def close() -> None:
        nonlocal current
        if current is not None and current.user_parts:
            turns.append(current)
        current = None

    for index, message in enumerate(data.get("messages") or []):
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or "")
        when = _time(message.get("timestamp")) or last_time
        last_time = when
        text, thinking, tool_calls, other = _parts(message)
        if role in _USER_ROLES:
            if current is not None and current.reply_parts:
                close()
            if current is None:
                current = _Turn(
                    user_index=index,
                    user_id=str(message["id"])[:255] if message.get("id") else None,
                    user_from=_sender(message),
                    user_at=when,
                    context=history[-window:] if window else [],
                )
            current.user_parts.append(text or f"[{', '.join(other) or 'empty'} message]")
            if other:
                current.user_meta.setdefault("attachments", []).extend(other)
            if len(current.user_parts) > 1:
                current.user_meta["message_count"] = len(current.user_parts)
            if text:
                history.append({"role": "user", "message": text, "timestamp": when})
        elif role in _ASSISTANT_ROLES:
            if current is None:  # A greeting before any user message: context only.
                if text:
                    history.append({"role": "agent", "message": text, "timestamp": when})
                continue
            if text:
                current.reply_parts.append(text)
                history.append({"role": "agent", "message": text, "timestamp": when})
            meta = current.agent_meta
            if thinking:
                meta.setdefault("thinking", []).extend(thinking)
            if tool_calls:
                meta.setdefault("tool_calls", []).extend(tool_calls)
            if message.get("usage"):
                meta.setdefault("usage", []).append(message["usage"])
            if other:
                meta.setdefault("other_parts", []).extend(other)
            meta.setdefault("timestamps", []).append(when.isoformat())
        elif role in _TOOL_ROLES and current is not None:
            current.agent_meta.setdefault("tool_results", []).append(
                {
                    "tool_call_id": message.get("toolCallId") or message.get("tool_call_id"),
                    "name": message.get("name") or message.get("toolName"),
                    "content": text,
                }
            )
    close()

    bodies = []
    for number, turn in enumerate(turns, start=1):
        user_meta = {"openclaw_message_index": turn.user_index, **turn.user_meta}
        bodies.append(
            {
                "session": session,
                "turn_number": number,
                "user_message": {
                    "id": turn.user_id or f"{transcript.session_id}:{turn.user_index}"[:255],
                    "content": "\n\n".join(turn.user_parts),
                    "from": turn.user_from,
                    "metadata": user_meta,
                },
                "agent_reply": {"content": "\n\n".join(turn.reply_parts), "metadata": turn.agent_meta or None},
                "context": [
                    {**item, "timestamp": item["timestamp"].isoformat()} for item in turn.context if item["message"]
                ],
                "created_at": (turn.user_at or fallback).isoformat(),
            }
        )
    return bodies


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


def import_key(folder: Path) -> str:
    """The checkpoint key of an import: the resolved folder (one import of a folder at a time)."""
    import hashlib

    return hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:32]


def _counts(report: ImportReport) -> dict[str, Any]:
    return {
        "files": report.files,
        "sessions": report.sessions,
        "turns_created": report.turns_created,
        "turns_existing": report.turns_existing,
        "turns_failed": report.turns_failed[-200:],
        "malformed": [list(m) for m in report.malformed[-200:]],
    }


def _restore(report: ImportReport, state: dict[str, Any]) -> None:
    counts = state.get("report") or {}
    report.files = counts.get("files", 0)
    report.sessions = counts.get("sessions", 0)
    report.turns_created = counts.get("turns_created", 0)
    report.turns_existing = counts.get("turns_existing", 0)
    report.turns_failed = list(counts.get("turns_failed", []))
    report.malformed = [tuple(m) for m in counts.get("malformed", [])]


def _import_file(
    folder: Path, file: Path, registry: dict[str, tuple[str, dict[str, Any]]], report: ImportReport, *, dry_run: bool
) -> None:
    rel = file.relative_to(folder).as_posix()
    report.files += 1
    try:
        transcript = load_transcript(folder, file, registry)
        bodies = build_turns(transcript)
    except (ValueError, TypeError, OSError) as exc:
        logger.warning("import_openclaw: skipped %s: %s", rel, exc)
        report.malformed.append((rel, str(exc)))
        return
    if bodies:
        report.sessions += 1
    for body in bodies:
        label = f"{rel} turn {body['turn_number']}"
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


def import_sessions(
    path: Path, *, dry_run: bool = False, gate: bool = False, progress: Progress | None = None
) -> ImportReport:
    """Import every transcript under ``path``; see the module docstring. Never raises for one bad file.

    Resumable (seed 004 P2-002): the list of transcript files and the index of the next one are kept in a
    checkpoint (``guardian_app.checkpoints``), so an import killed halfway continues where it stopped on
    its next run, or when a worker starts; turns are idempotent, so the file it was in is read again
    without adding anything twice. Raises CheckpointBusy while another live process imports the folder.
    """
    folder = resolve_folder(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    report = ImportReport(dry_run=dry_run)
    registry = read_registry(folder, report)
    files = transcript_files(folder)
    if dry_run:
        with _gate(gate):
            for done, file in enumerate(files, start=1):
                _import_file(folder, file, registry, report, dry_run=True)
                if progress:
                    progress(done, len(files), file.relative_to(folder).as_posix())
        return report

    # An upward hand-off, as the gate's: resumable jobs keep their checkpoints in guardian_app.
    from guardian_app import checkpoints
    from guardian_app.models import JobCheckpoint

    checkpoint = checkpoints.claim(
        JobCheckpoint.Job.OPENCLAW_IMPORT, import_key(folder), params={"path": str(folder), "gate": gate}, restart=True
    )
    if checkpoint.stage == "importing":
        files = [folder / rel for rel in checkpoint.candidates]  # The list the interrupted run was working through.
        _restore(report, checkpoint.state)
    else:
        checkpoints.save(
            checkpoint,
            stage="importing",
            candidates=[f.relative_to(folder).as_posix() for f in files],
            processed_index=0,
            state={"report": _counts(report)},
        )
    try:
        with _gate(gate):
            for index in range(checkpoint.processed_index, len(files)):
                file = files[index]
                _import_file(folder, file, registry, report, dry_run=False)
                checkpoints.save(checkpoint, processed_index=index + 1, state={"report": _counts(report)})
                if progress:
                    progress(index + 1, len(files), file.relative_to(folder).as_posix())
    except (checkpoints.LeaseLost, checkpoints.CheckpointBusy):
        raise
    except BaseException as exc:
        checkpoints.release(checkpoint, error=repr(exc))
        raise
    checkpoints.finish(checkpoint, state={"report": _counts(report)})
    return report


def resume_checkpoint(checkpoint: Any) -> ImportReport | None:
    """``guardian_app.checkpoints.resume_incomplete``'s entry: finish an interrupted import."""
    params = checkpoint.params or {}
    folder = Path(params.get("path") or "")
    if not params.get("path") or not folder.is_dir():
        logger.warning("import_openclaw: cannot resume %s: %s is not a folder", checkpoint.key, folder)
        return None
    report = import_sessions(folder, gate=bool(params.get("gate")))
    logger.info("import_openclaw: resumed %s: %s", folder, report.summary())
    return report
