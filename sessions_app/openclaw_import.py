"""Import what OpenClaw has stored: its sessions become Reflection sessions, its turns our turns.

Where OpenClaw keeps its history and how it is read is ``openclaw_sources``; how its events become turns,
``openclaw_turns``. Turns go through ``ingest_turn``, the ingest API's code path, without a turn number, so a
resent turn is found by its message id.

Finding nothing to import is an error naming every place looked at. A source that cannot be read is
reported by name and the rest goes on. Imported turns skip the memory gate unless ``gate``.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
from sessions_app.openclaw_sources import (
    STORE_NAME,
    Source,
    Transcript,
    decode_zstd,
    find_sources,
    folder_files,
    parse_jsonl,
    read_sessions_index,
    read_store,
    read_transcript_file,
    transcript_files,
)
from sessions_app.openclaw_turns import (
    TOOL_TEXT_LIMIT,
    build_turns,
    message_text,
    parse_session_key,
    reflection_session_id,
    tool_result,
    user_text,
)
from sessions_app.schemas import TurnIn

logger = logging.getLogger(__name__)

# What other code imports from here; the sources and the turns are read in their own modules.
__all__ = [
    "STORE_NAME",
    "TOOL_TEXT_LIMIT",
    "ImportReport",
    "NothingToImport",
    "Progress",
    "Source",
    "Transcript",
    "build_turns",
    "decode_zstd",
    "find_sources",
    "folder_files",
    "import_key",
    "import_sessions",
    "message_text",
    "parse_jsonl",
    "parse_session_key",
    "read_sessions_index",
    "read_store",
    "read_transcript_file",
    "reflection_session_id",
    "resume_checkpoint",
    "tool_result",
    "transcript_files",
    "user_text",
]


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
