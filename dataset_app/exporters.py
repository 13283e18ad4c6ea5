"""Dataset exports: one streaming writer per format, a deterministic train/validation split, checksums.

Formats (each sample becomes one record; gate samples teach the memory gate, guardian samples the write
guardian):

* ``openai``: ``{"messages": [system, user, assistant]}``, the chat fine-tuning format; the assistant
  message is the correct output as the JSON object the gate replies with
  (``{"decision", "reason", "candidate_fact"}``) or, for the guardian, ``{"decision": "written"|"refused",
  "reason"}``.
* ``alpaca``: ``{"instruction", "input", "output"}`` as in the seed's example (``Decision: …\\nFact: …\\nReason: …``).
* ``sharegpt``: ``{"conversations": [{"from": "system"|"human"|"gpt", "value"}]}``: the instruction as
  ``system``, then the user's and the agent's messages alternating as ``human`` and ``gpt``; the last ``gpt``
  message also carries ``memory_gate_decision`` and ``candidate_fact``, as in the seed's example.
* ``raw``: the sample record (the seed's ``DatasetSampleRecord``, camelCase, ``createdAt`` in epoch ms) with a
  fixed schema: no field is null or changes type between rows (``RawWriter``); ``content`` is JSON text.
* ``csv``: one row per sample with the instruction, input and output as columns.

Rows are read with a server-side iterator and written through a small buffer, so memory stays flat
whatever the number of samples. Each sample goes to ``<name>-train`` or ``<name>-val`` by a hash of its id
(``split_of``): re-exporting gives the same split, and raising ``train_split`` only moves samples from
validation to train. One exception keeps small exports loadable: if every sample falls on one side (and
``train_split`` is below 1), the one nearest the boundary goes to the other file. Files are written under a temporary name and renamed when complete.

Unless ``include_pii``, a sample's redacted content is exported, and a sample whose PII could not be
redacted is left out (counted in ``skipped_pii_samples``); a sample collected with privacy filtering off
is redacted on the way out.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import orjson
from django.conf import settings
from django.db import connection, connections
from django.db.models import Case, Q, QuerySet, TextField, When
from django.db.models.functions import Cast
from django.utils import timezone

from dataset_app.errors import InvalidExportOptions
from dataset_app.models import (
    APPROVED_STATUSES,
    AnnotationStatus,
    DatasetExport,
    DatasetSample,
    ExportFormat,
    JobStatus,
    SampleType,
)
from reflection_site import privacy
from reflection_site.celery import enqueue_on_commit, send

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (done, total)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
SPLITS = ("train", "validation")
SPLIT_SUFFIX = {"train": "train", "validation": "val"}
EXPORT_TASK = "dataset_app.tasks.run_export"
FLUSH_EVERY = 512  # records buffered before a write

GATE_INSTRUCTION = (
    "Based on the following conversation, decide if this should be written to memory and which file it belongs to."
)
GATE_SYSTEM = (
    "You are the memory gate of an AI agent. " + GATE_INSTRUCTION + " Decisions: NO_WRITE, UPDATE_MEMORY "
    "(MEMORY.md: things to remember, ongoing work), UPDATE_USER (USER.md: stable facts and preferences of the "
    "user), UPDATE_SOUL (SOUL.md: the agent's manner), UPDATE_IDENTITY (IDENTITY.md: the agent's identity), "
    "UPDATE_TOOLS (TOOLS.md: tools and environment). Reply with one JSON object: "
    '{"decision": …, "reason": …, "candidate_fact": … or null}.'
)
GUARDIAN_INSTRUCTION = (
    "Decide whether the candidate fact should be written to the memory file, given the file's current content. "
    "Refuse duplicates, contradictions, low-value facts and secrets."
)
GUARDIAN_SYSTEM = (
    "You are the write guardian of an AI agent's memory files. "
    + GUARDIAN_INSTRUCTION
    + ' Reply with one JSON object: {"decision": "written" or "refused", "reason": …}.'
)


# --- The split -------------------------------------------------------------------------------------


def split_point(sample_id: str) -> float:
    """Where a sample falls in [0, 1): CRC-32 of its id over 2**32. Uniform over ULIDs' random part, and
    cheap enough to run per row at export speed (nobody chooses ids to game the split)."""
    return zlib.crc32(sample_id.encode()) / 4294967296


def split_of(sample_id: str, train_split: float) -> str:
    """``"train"`` or ``"validation"``, from a hash of the id: the same sample always lands the same way."""
    return "train" if split_point(sample_id) < train_split else "validation"


# --- From a sample to a training example ------------------------------------------------------------


@dataclass(frozen=True)
class GateCase:
    """What the gate saw and what it should have answered."""

    window: list[tuple[str, str]]
    user_message: str
    agent_reply: str
    decision: str
    fact: str | None
    reason: str


@dataclass(frozen=True)
class GuardianCase:
    candidate_fact: str
    target_file: str
    current_content: str
    decision: str  # written | refused: the correct one
    reason: str


def _pairs(messages: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(str(m.get("role", "")), str(m.get("message", ""))) for m in messages or ()]


def gate_case(content: dict[str, Any]) -> GateCase | None:
    """The gate's input and correct output from a gate sample's content; None for a guardian sample."""
    kind = content.get("type")
    if kind in (SampleType.MEMORY_GATE_POSITIVE, SampleType.MEMORY_GATE_NEGATIVE):
        conversation = _pairs(content.get("conversation") or [])
        window, turn = conversation[:-2], conversation[-2:]
        user = next((m for r, m in turn if r == "user"), "")
        agent = next((m for r, m in turn if r == "agent"), "")
        reason = content.get("reason") if kind == SampleType.MEMORY_GATE_POSITIVE else content.get("rejectionReason")
        return GateCase(
            window, user, agent, content.get("correctDecision") or "", content.get("correctFact") or None, reason or ""
        )
    if kind == SampleType.ANNOTATED_TURN:
        gate = content.get("memoryGate") or {}
        given = gate.get("input") or {}
        output = gate.get("correctedOutput") or gate.get("output") or {}
        return GateCase(
            _pairs(content.get("context") or []),
            given.get("userMessage") or "",
            given.get("agentReply") or "",
            output.get("decision") or "",
            output.get("candidateFact") or None,
            output.get("reason") or "",
        )
    return None


def guardian_case(content: dict[str, Any]) -> GuardianCase | None:
    if content.get("type") != SampleType.WRITE_GUARDIAN_DECISION:
        return None
    correction = content.get("userCorrection") or None
    return GuardianCase(
        candidate_fact=content.get("candidateFact") or "",
        target_file=content.get("targetFile") or "",
        current_content=content.get("currentFileContent") or "",
        decision=(correction or {}).get("correctedDecision") or content.get("decision") or "",
        reason=(correction or {}).get("reason") or content.get("reason") or "",
    )


_SPEAKER = {"user": "User", "agent": "Agent"}


def render_conversation(window: Sequence[tuple[str, str]], user_message: str, agent_reply: str) -> str:
    """``User: …\\nAgent: …`` lines, oldest first, ending with the turn (the seed's alpaca ``input``)."""
    lines = [f"{_SPEAKER.get(role, role.title())}: {message}" for role, message in window]
    lines.append(f"User: {user_message}")
    if agent_reply:
        lines.append(f"Agent: {agent_reply}")
    return "\n".join(lines)


class Example(NamedTuple):
    """One training example in neutral form; each writer lays it out in its format."""

    stage: str
    system: str
    instruction: str
    input: str
    output_text: str  # the seed's "Decision: …\nFact: …\nReason: …"
    output_json: str  # the JSON object the model replies with
    decision: str
    fact: str | None


def _render(messages: Sequence[dict[str, Any]]) -> str:
    """``render_conversation`` straight from the stored messages (the export's hot path)."""
    lines = [f"{_SPEAKER.get(m.get('role'), 'Agent')}: {m.get('message') or ''}" for m in messages]
    if messages and messages[-1].get("role") == "agent" and not messages[-1].get("message"):
        lines.pop()  # The turn had no agent reply.
    return "\n".join(lines)


def _gate_example(decision: str, fact: str | None, reason: str, conversation: str) -> Example:
    output = (
        f"Decision: {decision}\nFact: {fact}\nReason: {reason}" if fact else f"Decision: {decision}\nReason: {reason}"
    )
    answer = orjson.dumps({"decision": decision, "reason": reason, "candidate_fact": fact}).decode()
    return Example("gate", GATE_SYSTEM, GATE_INSTRUCTION, conversation, output, answer, decision, fact)


def example_of(content: dict[str, Any]) -> Example | None:
    """The training example of a sample's content, or None if it has none (an unknown shape)."""
    kind = content.get("type")
    if kind == SampleType.MEMORY_GATE_POSITIVE:
        conversation = _render(content.get("conversation") or [])
        return _gate_example(
            content.get("correctDecision") or "",
            content.get("correctFact") or None,
            content.get("reason") or "",
            conversation,
        )
    if kind == SampleType.MEMORY_GATE_NEGATIVE:
        conversation = _render(content.get("conversation") or [])
        return _gate_example(
            content.get("correctDecision") or "",
            content.get("correctFact") or None,
            content.get("rejectionReason") or "",
            conversation,
        )
    if kind == SampleType.ANNOTATED_TURN:
        case = gate_case(content)
        if case is None:
            return None
        conversation = render_conversation(case.window, case.user_message, case.agent_reply)
        return _gate_example(case.decision, case.fact, case.reason, conversation)
    g = guardian_case(content)
    if g is not None:
        given = (
            f"Target file: {g.target_file}\nCandidate fact: {g.candidate_fact}\n"
            f"Current content of {g.target_file}:\n{g.current_content or '(empty file)'}"
        )
        return Example(
            "guardian",
            GUARDIAN_SYSTEM,
            GUARDIAN_INSTRUCTION,
            given,
            f"Decision: {g.decision}\nReason: {g.reason}",
            orjson.dumps({"decision": g.decision, "reason": g.reason}).decode(),
            g.decision,
            g.candidate_fact,
        )
    return None


# --- Writers ---------------------------------------------------------------------------------------


class Row:
    """One sample as the exporter reads it. ``content_text`` is the stored JSON (redacted unless include_pii);
    ``content`` decodes it once, when a format needs it (``raw`` splices the text as it is)."""

    __slots__ = (
        "_content",
        "content_text",
        "id",
        "sample_type",
        "quality_score",
        "annotation_status",
        "session_id",
        "extra",
    )

    def __init__(
        self,
        id: str,  # noqa: A002 - the column's name
        sample_type: str,
        content_text: str,
        quality_score: float | None,
        annotation_status: str,
        session_id: str,
        extra: dict[str, Any] | None = None,
    ):
        self.id = id
        self.sample_type = sample_type
        self.content_text = content_text
        self._content: dict[str, Any] | None = None
        self.quality_score = quality_score
        self.annotation_status = annotation_status
        self.session_id = session_id
        self.extra = extra or {}

    @property
    def content(self) -> dict[str, Any]:
        if self._content is None:
            self._content = orjson.loads(self.content_text)
        return self._content

    @content.setter
    def content(self, value: dict[str, Any]) -> None:
        self._content = value
        self.content_text = orjson.dumps(value).decode()


class HashingFile:
    """A binary file that counts and hashes what is written to it."""

    def __init__(self, path: Path):
        self.path = path
        self.fh: BinaryIO = open_private(path)
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.count = 0

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.sha256.update(data)
        self.size += len(data)

    def close(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()


class Writer:
    """Writes records of one format to one file, buffering a few hundred at a time."""

    suffix = ".jsonl"

    def __init__(self, out: HashingFile):
        self.out = out
        self.buffer: list[bytes] = []
        self.start()

    def start(self) -> None:
        pass

    def record(self, row: Row) -> Any:
        raise NotImplementedError

    def line(self, row: Row) -> bytes | None:
        record = self.record(row)
        return None if record is None else orjson.dumps(record)

    def write(self, row: Row) -> bool:
        """Buffer the row's line; False (nothing written) for a sample this format cannot express."""
        line = self.line(row)
        if line is None:
            return False
        self.add(line)
        return True

    def add(self, line: bytes) -> None:
        self.buffer.append(line)
        self.out.count += 1
        if len(self.buffer) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.buffer.append(b"")
            self.out.write(b"\n".join(self.buffer))
            self.buffer.clear()

    def close(self) -> None:
        self.flush()
        self.out.close()


class OpenAIWriter(Writer):
    def record(self, row: Row) -> Any:
        ex = example_of(row.content)
        if ex is None:
            return None
        return {
            "messages": [
                {"role": "system", "content": ex.system},
                {"role": "user", "content": ex.input},
                {"role": "assistant", "content": ex.output_json},
            ]
        }


class AlpacaWriter(Writer):
    def record(self, row: Row) -> Any:
        ex = example_of(row.content)
        if ex is None:
            return None
        return {"instruction": ex.instruction, "input": ex.input, "output": ex.output_text}


def sharegpt_turns(content: dict[str, Any], ex: Example) -> list[tuple[str, str]]:
    """The chat of a sample as alternating ``human``/``gpt`` values, oldest first, ending with ``gpt``.

    A gate sample's chat is its conversation (the context window, then the turn: user message and agent
    reply), as in the seed's example; consecutive messages of one speaker are joined by a blank line so the
    roles alternate, and a turn without an agent reply ends on an empty ``gpt``. A guardian sample's chat is
    its question and the right answer."""
    if ex.stage != "gate":
        return [("human", ex.input), ("gpt", ex.output_text)]
    case = gate_case(content)
    if case is None:  # pragma: no cover - example_of returned a gate example, so gate_case has one too
        return [("human", ex.input), ("gpt", ex.output_text)]
    messages = [("human" if role == "user" else "gpt", text) for role, text in case.window]
    messages += [("human", case.user_message), ("gpt", case.agent_reply)]
    turns: list[tuple[str, str]] = []
    for speaker, text in messages:
        if not turns and speaker == "gpt":
            continue  # a chat starts with the human
        if turns and turns[-1][0] == speaker:
            turns[-1] = (speaker, turns[-1][1] + "\n\n" + text if text else turns[-1][1])
        else:
            turns.append((speaker, text))
    return turns


class ShareGPTWriter(Writer):
    """``system`` (the instruction), then ``human``/``gpt`` alternating; the last ``gpt`` carries the gate's
    decision and fact as in the seed's example. Every field is a string in every row (an absent fact is
    ``""``), so every file of an export has one schema whatever samples it holds."""

    def record(self, row: Row) -> Any:
        ex = example_of(row.content)
        if ex is None:
            return None
        turns = sharegpt_turns(row.content, ex)
        conversations: list[dict[str, str]] = [{"from": "system", "value": ex.system}]
        conversations += [{"from": speaker, "value": text} for speaker, text in turns[:-1]]
        conversations.append(
            {
                "from": "gpt",
                "value": turns[-1][1],
                "memory_gate_decision": ex.decision if ex.stage == "gate" else "",
                "candidate_fact": ex.fact or "",
            }
        )
        return {"conversations": conversations}


def _epoch_ms(value: dt.datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


NOT_SCORED = -1.0  # raw: the quality of a sample that was collected with quality scoring off
QUALITY_FACTORS = ("conversationClarity", "decisionConfidence", "factVerifiability")


class RawWriter(Writer):
    """The sample record (the seed's ``DatasetSampleRecord``) with one schema in every row of every file.

    A loader that infers the schema from the first rows (Hugging Face ``datasets``, pandas, Arrow) fails when a
    field is null in one file and a string in another, and the four sample types' contents have different
    shapes. So no field is ever null or changes type: an absent text is ``""``, ``annotatedAt`` is ``0`` for a
    sample never annotated, a sample collected with scoring off has ``qualityScore`` and every quality factor
    ``-1``, and ``content`` is the sample's content as JSON text (as the seed's ``content TEXT`` column holds
    it): ``json.loads(record["content"])`` gives the object. The stored JSON is spliced in, never re-encoded.
    """

    def __init__(self, out: HashingFile, *, include_pii: bool = False):
        self.include_pii = include_pii
        super().__init__(out)

    def line(self, row: Row) -> bytes:
        extra = row.extra
        notes = extra.get("annotation_notes") or ""
        if notes and not self.include_pii:
            notes = privacy.redact(notes)
        factors = extra.get("quality_factors")
        if isinstance(factors, str):
            factors = orjson.loads(factors) if factors else None
        scored = row.quality_score is not None
        return orjson.dumps(
            {
                "id": row.id,
                "sampleType": row.sample_type,
                "turnId": extra.get("turn_id") or "",
                "decisionId": extra.get("decision_id") or "",
                "auditId": extra.get("audit_id") or "",
                "sessionId": row.session_id or "",
                "label": extra.get("label") or "",
                "qualityScore": float(row.quality_score) if scored else NOT_SCORED,
                "qualityFactors": {
                    name: float((factors or {}).get(name, NOT_SCORED)) if scored else NOT_SCORED
                    for name in QUALITY_FACTORS
                },
                "annotationStatus": row.annotation_status,
                "annotatedBy": extra.get("annotated_by") or "",
                "annotatedAt": _epoch_ms(extra.get("annotated_at")) or 0,
                "annotationNotes": notes,
                "privacyChecked": bool(extra.get("privacy_checked")),
                "containsPii": bool(extra.get("contains_pii")),
                "collectionStrategy": extra.get("collection_strategy") or "",
                "createdAt": _epoch_ms(extra.get("created_at")) or 0,
                "content": row.content_text,
            }
        )


CSV_COLUMNS = [
    "id",
    "sample_type",
    "stage",
    "instruction",
    "input",
    "output",
    "label",
    "candidate_fact",
    "quality_score",
    "annotation_status",
    "session_id",
    "created_at",
]


def _csv_text(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


class CSVWriter(Writer):
    """RFC 4180: text always quoted (quotes doubled, newlines kept inside quotes), numbers bare, one header.

    Written by hand rather than with ``csv.writer``, which scans every character of every field to decide
    on quoting and was a third of the export's time; always quoting text needs no scan.
    """

    suffix = ".csv"

    def start(self) -> None:
        self.buffer.append(",".join(CSV_COLUMNS).encode())

    def line(self, row: Row) -> bytes | None:
        ex = example_of(row.content)
        if ex is None:
            return None
        extra = row.extra
        created = extra.get("created_at")
        fields = (
            _csv_text(row.id),
            _csv_text(row.sample_type),
            _csv_text(ex.stage),
            _csv_text(ex.instruction),
            _csv_text(ex.input),
            _csv_text(ex.output_text),
            _csv_text(extra.get("label") or ""),
            _csv_text(ex.fact or ""),
            "" if row.quality_score is None else repr(float(row.quality_score)),
            _csv_text(row.annotation_status),
            _csv_text(row.session_id),
            _csv_text(created.isoformat() if created is not None else ""),
        )
        return ",".join(fields).encode()


WRITERS: dict[str, type[Writer]] = {
    ExportFormat.OPENAI: OpenAIWriter,
    ExportFormat.ALPACA: AlpacaWriter,
    ExportFormat.SHAREGPT: ShareGPTWriter,
    ExportFormat.RAW: RawWriter,
    ExportFormat.CSV: CSVWriter,
}


def make_writer(export_format: str, out: HashingFile, *, include_pii: bool = False) -> Writer:
    cls = WRITERS[export_format]
    if cls is RawWriter:
        return RawWriter(out, include_pii=include_pii)
    return cls(out)


# --- Creating and running an export ----------------------------------------------------------------


def export_dir() -> Path:
    return Path(settings.DATASET_EXPORT_DIR) if settings.DATASET_EXPORT_DIR else Path(settings.DATA_DIR) / "exports"


def open_private(path: Path) -> BinaryIO:
    """A new (or emptied) file for an export, readable by its owner only (0600): exports hold conversations, and
    PII when ``include_pii``. Its folder is created 0700."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)  # A file left by an older release keeps its inode: tighten it too.
    return os.fdopen(fd, "wb")


def file_paths(directory: Path, name: str, export_format: str) -> dict[str, Path]:
    suffix = WRITERS[export_format].suffix
    return {split: directory / f"{name}-{SPLIT_SUFFIX[split]}{suffix}" for split in SPLITS}


def default_name(export_format: str, now: dt.datetime | None = None) -> str:
    return f"dataset-{export_format}-{(now or timezone.now()):%Y%m%d-%H%M%S}"


def validate_export_options(
    *,
    export_format: str,
    name: str | None,
    sample_types: Sequence[str] | None,
    train_split: float | None,
    min_quality: float | None,
) -> tuple[str, list[str], float]:
    """(name, sample types, train split), checked and defaulted.

    Raises InvalidExportOptions for an unknown format or sample type, a name that is not a plain file name,
    a train split outside (0, 1] or a minimum quality outside [0, 1].
    """
    if export_format not in WRITERS:
        raise InvalidExportOptions(f"Unknown format {export_format!r}; use one of {', '.join(WRITERS)}.")
    name = name or default_name(export_format)
    if not NAME_RE.fullmatch(name):
        raise InvalidExportOptions("The export name may hold letters, digits, '.', '_' and '-' (at most 100).")
    types = list(sample_types or [])
    unknown = [t for t in types if t not in SampleType.values]
    if unknown:
        raise InvalidExportOptions(f"Unknown sample type(s): {', '.join(unknown)}.")
    train_split = settings.DATASET_TRAIN_SPLIT if train_split is None else float(train_split)
    if not 0 < train_split <= 1:
        raise InvalidExportOptions("train_split must be greater than 0 and at most 1.")
    if min_quality is not None and not 0 <= min_quality <= 1:
        raise InvalidExportOptions("min_quality must be between 0 and 1.")
    return name, types, train_split


def create_export(
    *,
    export_format: str,
    name: str | None = None,
    sample_types: Sequence[str] | None = None,
    only_approved: bool = False,
    min_quality: float | None = None,
    include_pii: bool = False,
    train_split: float | None = None,
    session_id: str | None = None,
    sample_ids: Sequence[str] | None = None,
    exported_by: str = "system",
    directory: Path | None = None,
) -> DatasetExport:
    """Validate the options (``validate_export_options``) and record a pending export; ``run_export``
    writes it."""
    name, types, train_split = validate_export_options(
        export_format=export_format,
        name=name,
        sample_types=sample_types,
        train_split=train_split,
        min_quality=min_quality,
    )
    directory = Path(directory) if directory is not None else export_dir()
    paths = file_paths(directory, name, export_format)
    filters: dict[str, Any] = {
        "only_approved": only_approved,
        "min_quality": min_quality,
        "include_pii": include_pii,
        "train_split": train_split,
    }
    if session_id:
        filters["session"] = session_id
    if sample_ids is not None:
        filters["sample_ids"] = list(sample_ids)
    return DatasetExport.objects.create(
        export_name=name,
        export_format=export_format,
        sample_types=types,
        filters=filters,
        file_path=str(paths["train"]),
        exported_by=exported_by,
    )


def start_export(**options: Any) -> DatasetExport:
    """Create an export and hand it to a worker after commit (a dead broker is logged; the sweep retries)."""
    export = create_export(**options)
    enqueue_on_commit(EXPORT_TASK, export.id)
    return export


def selected_samples(export: DatasetExport) -> QuerySet[DatasetSample]:
    """The samples an export takes, rejected ones excepted, in id order."""
    return _matching(export).exclude(annotation_status=AnnotationStatus.REJECTED).order_by("id")


def _matching(export: DatasetExport) -> QuerySet[DatasetSample]:
    filters = export.filters or {}
    samples = DatasetSample.objects.all()
    if export.sample_types:
        samples = samples.filter(sample_type__in=export.sample_types)
    if filters.get("only_approved"):
        samples = samples.filter(
            Q(annotation_status__in=APPROVED_STATUSES) | Q(annotation_status=AnnotationStatus.REJECTED)
        )
    if filters.get("min_quality") is not None:
        samples = samples.filter(quality_score__gte=filters["min_quality"])
    if filters.get("session"):
        samples = samples.filter(session_id=filters["session"])
    if filters.get("sample_ids") is not None:
        samples = samples.filter(id__in=filters["sample_ids"])
    return samples


_SLIM_FIELDS = ("id", "sample_type", "_export_content", "quality_score", "annotation_status", "session_id")
_EXTRA_FIELDS = (
    "turn_id",
    "decision_id",
    "audit_id",
    "label",
    "_factors",
    "annotated_by",
    "_annotated_at",
    "annotation_notes",
    "privacy_checked",
    "contains_pii",
    "collection_strategy",
    "_created_at",
)


def _parse_time(value: Any) -> dt.datetime | None:
    """A timestamp read as text (cheaper than the ORM's converter): ISO 8601, naive meaning UTC (SQLite)."""
    if value is None or isinstance(value, dt.datetime):
        return value
    parsed = dt.datetime.fromisoformat(value)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


@contextmanager
def _reading_connection(alias: str) -> Iterator[Any]:
    """The connection to stream the export from.

    On PostgreSQL a connection of its own, in one read-only transaction: a server-side cursor outside a
    transaction is declared WITH HOLD, which makes the server compute every row before the first one is
    sent; inside one, rows stream while they are computed. Its own connection, so that the export's
    progress updates (on the default connection) are seen by pollers at once. Elsewhere the default one.
    """
    db = connections[alias]
    if db.vendor != "postgresql" or db.in_atomic_block:
        yield db  # Inside a transaction already (a test, a caller's atomic block): it streams as it is.
        return
    reader = connections.create_connection(alias)
    try:
        reader.set_autocommit(False)
        with reader.cursor() as cursor:
            cursor.execute("SET TRANSACTION READ ONLY")
        yield reader
    finally:
        try:
            reader.rollback()
        finally:
            reader.close()


def _stream(queryset: QuerySet, names: Sequence[str], *, chunk_size: int) -> Iterator[tuple[Any, ...]]:
    """The queryset's rows as plain tuples in ``names`` order, from a server-side cursor on PostgreSQL.

    What ``.iterator()`` does, without the ORM's per-row converters: every column here is text, a number
    or a boolean (SQLite's 0/1 serves as one), so the driver's values are used as they are; that is a
    quarter of the export's time. Columns are found by name in the cursor's description.
    """
    sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    with _reading_connection(queryset.db) as db, db.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        columns = [column[0] for column in cursor.description]
        order = [columns.index(name) for name in names]
        identity = order == list(range(len(columns)))
        while rows := cursor.fetchmany(chunk_size):
            if identity:
                yield from rows
            else:
                for row in rows:
                    yield tuple(row[i] for i in order)


def iter_rows(export: DatasetExport, *, chunk_size: int = 2000) -> Iterator[Row | None]:
    """The export's rows, content chosen in SQL (redacted unless include_pii) and read as JSON text; None
    for a sample left out because its PII could not be redacted."""
    include_pii = bool((export.filters or {}).get("include_pii"))
    # Text, not JSONField: no decoding in the ORM; the writers decode with orjson only what they need.
    if include_pii:
        content = Cast("content", TextField())
    else:
        content = Case(
            When(contains_pii=True, then=Cast("pii_redacted_content", TextField())),
            default=Cast("content", TextField()),
            output_field=TextField(),
        )
    queryset = selected_samples(export).annotate(_export_content=content)
    names: tuple[str, ...] = _SLIM_FIELDS
    full = export.export_format in (ExportFormat.RAW, ExportFormat.CSV)
    if full:
        queryset = queryset.annotate(
            _factors=Cast("quality_factors", TextField()),
            _created_at=Cast("created_at", TextField()),
            _annotated_at=Cast("annotated_at", TextField()),
        )
        names += _EXTRA_FIELDS
    if not include_pii:
        names += ("privacy_checked",) if not full else ()
    checked_at = names.index("privacy_checked") if not include_pii else -1
    for values in _stream(queryset.values_list(*names), names, chunk_size=chunk_size):
        text = values[2]
        if text is None:
            yield None  # Contains PII that could not be redacted.
            continue
        extra = None
        if full:
            extra = dict(zip(_EXTRA_FIELDS, values[6:18], strict=True))
            extra["quality_factors"] = extra.pop("_factors")
            extra["created_at"] = _parse_time(extra.pop("_created_at"))
            extra["annotated_at"] = _parse_time(extra.pop("_annotated_at"))
        if not isinstance(text, str):  # A driver that decoded the JSON already.
            text = orjson.dumps(text).decode()
        row = Row(values[0], values[1], text, values[3], values[4], values[5], extra)
        if checked_at >= 0 and not values[checked_at]:
            row.content = privacy.redact_data(row.content)  # Collected with privacy filtering off.
        yield row


@contextmanager
def reading_without_mmap() -> Iterator[None]:
    """On SQLite, read through the page cache instead of the memory map while exporting.

    Every mapped page the export touches counts in the process's resident memory (up to
    SQLITE_MMAP_SIZE_MB, 256 MB by default), so a one-pass read of a large table would look like a
    memory leak of that size; the small page cache keeps the export's memory flat.
    """
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA mmap_size=0")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA mmap_size={int(settings.SQLITE_MMAP_SIZE_MB) * 1024 * 1024}")


def _progress_saver(export: DatasetExport) -> Progress:
    last = {"percent": -1, "at": timezone.now()}

    def save(done: int, total: int) -> None:
        percent = 100 if total == 0 else min(99, done * 100 // total)
        now = timezone.now()
        if percent != last["percent"] and (
            percent - last["percent"] >= 2 or now - last["at"] > dt.timedelta(seconds=5)
        ):
            DatasetExport.objects.filter(id=export.id).update(progress=percent, heartbeat_at=now)
            last.update(percent=percent, at=now)

    return save


def claim_export(export_id: str) -> DatasetExport | None:
    """Mark a pending export running; None if another worker has it or it is finished."""
    now = timezone.now()
    if not DatasetExport.objects.filter(id=export_id, status=JobStatus.PENDING).update(
        status=JobStatus.RUNNING, started_at=now, heartbeat_at=now, progress=0, error=None
    ):
        return None
    return DatasetExport.objects.get(id=export_id)


def _place_edges(
    edge: dict[str, tuple[float, bytes] | None], writers: dict[str, Writer], *, train_split: float
) -> None:
    """Write the held-back samples: to their own split, unless the other split would stay empty (and this
    one keeps at least one sample, and the caller did not ask for everything in train with 1.0)."""
    for split, other in (("train", "validation"), ("validation", "train")):
        held = edge[split]
        if held is None:
            continue
        lonely = writers[other].out.count == 0 and edge[other] is None and writers[split].out.count >= 1
        target = other if lonely and 0 < train_split < 1 else split
        writers[target].add(held[1])
        if target != split:
            edge[split] = None


def write_export(export: DatasetExport, *, progress: Progress | None = None) -> DatasetExport:
    """Write the export's two files and record counts, sizes and checksums.

    1. Count the samples (for progress) and the rejected ones left out.
    2. Stream the rows into ``<name>-train`` / ``<name>-val`` (``.part`` files, then renamed).
    3. Record totals, average quality, each file's size and SHA-256, and mark it completed.
    On error the ``.part`` files are removed and the export is marked failed with the error; it re-raises.
    """
    paths = file_paths(Path(export.file_path).parent, export.export_name, export.export_format)
    include_pii = bool((export.filters or {}).get("include_pii"))
    if include_pii:  # the opt-in to raw text is on the record (the export row keeps who asked: exported_by)
        logger.warning(
            "export %s (%s) by %s includes PII: unredacted text", export.id, export.export_name, export.exported_by
        )
    train_split = float((export.filters or {}).get("train_split", settings.DATASET_TRAIN_SPLIT))
    save_progress = _progress_saver(export)
    parts = {split: path.with_name(path.name + ".part") for split, path in paths.items()}
    outs: dict[str, HashingFile] = {}
    try:
        paths["train"].parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with reading_without_mmap():
            total = selected_samples(export).count()
            rejected = _matching(export).filter(annotation_status=AnnotationStatus.REJECTED).count()
            outs = {split: HashingFile(part) for split, part in parts.items()}
            writers = {
                split: make_writer(export.export_format, out, include_pii=include_pii) for split, out in outs.items()
            }
            approved = skipped_pii = unusable = done = 0
            quality_sum, quality_n = 0.0, 0
            # The sample nearest the boundary on each side is held back: if a small export leaves a split
            # empty, it crosses over, so both files hold data (datasets refuses an empty split).
            edge: dict[str, tuple[float, bytes] | None] = {"train": None, "validation": None}
            for row in iter_rows(export):
                done += 1
                if row is None:
                    skipped_pii += 1
                    continue
                point = split_point(row.id)
                split = "train" if point < train_split else "validation"
                line = writers[split].line(row)
                if line is None:
                    unusable += 1
                    continue
                if row.annotation_status in APPROVED_STATUSES:
                    approved += 1
                if row.quality_score is not None:
                    quality_sum += row.quality_score
                    quality_n += 1
                held = edge[split]
                if held is None or (point > held[0] if split == "train" else point < held[0]):
                    edge[split] = (point, line)
                    line = held[1] if held is not None else None
                if line is not None:
                    writers[split].add(line)
                if done % 1000 == 0:
                    if progress:
                        progress(done, total)
                    save_progress(done, total)
            _place_edges(edge, writers, train_split=train_split)
        for writer in writers.values():
            writer.close()
        for split in SPLITS:
            os.replace(parts[split], paths[split])
    except BaseException as exc:
        for out in outs.values():
            if not out.fh.closed:
                out.fh.close()
        for part in parts.values():
            part.unlink(missing_ok=True)
        DatasetExport.objects.filter(id=export.id).update(
            status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
        )
        raise
    if progress:
        progress(done, total)
    files = [
        {
            "split": split,
            "path": str(paths[split]),
            "samples": outs[split].count,
            "size_bytes": outs[split].size,
            "sha256": outs[split].sha256.hexdigest(),
        }
        for split in SPLITS
    ]
    export.status = JobStatus.COMPLETED
    export.progress = 100
    export.total_samples = outs["train"].count + outs["validation"].count
    export.train_samples = outs["train"].count
    export.validation_samples = outs["validation"].count
    export.approved_samples = approved
    export.rejected_samples = rejected
    export.skipped_pii_samples = skipped_pii
    export.avg_quality_score = round(quality_sum / quality_n, 4) if quality_n else None
    export.files = files
    export.file_size_bytes = sum(f["size_bytes"] for f in files)
    export.checksum = files[0]["sha256"]
    export.finished_at = timezone.now()
    export.heartbeat_at = export.finished_at
    export.error = None
    export.save()
    if unusable:
        logger.warning("export %s: %d sample(s) had content this format cannot express", export.id, unusable)
    return export


def run_export(export_id: str, *, progress: Progress | None = None) -> DatasetExport | None:
    """Claim and write one export; None if it was not pending (a redelivered task finds it taken)."""
    export = claim_export(export_id)
    if export is None:
        return None
    return write_export(export, progress=progress)


def sweep_stale_exports(*, grace_s: int | None = None) -> int:
    """Re-enqueue exports a dead worker left pending or running (no heartbeat for ``grace_s``)."""

    grace = dt.timedelta(seconds=settings.DATASET_EXPORT_SWEEP_GRACE_S if grace_s is None else grace_s)
    now = timezone.now()
    cutoff = now - grace
    unfinished = DatasetExport.objects.filter(status__in=[JobStatus.PENDING, JobStatus.RUNNING])
    stale = unfinished.filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, exported_at__lt=cutoff))
    requeued = 0
    for export_id in list(stale.values_list("id", flat=True)[:100]):
        # Back to pending with a fresh heartbeat: exactly one worker claims it, and the next sweep waits.
        if (
            not unfinished.filter(id=export_id)
            .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True))
            .update(status=JobStatus.PENDING, heartbeat_at=now)
        ):
            continue
        try:
            send(EXPORT_TASK, export_id)
            requeued += 1
        except Exception:  # The broker is down: the next sweep tries again.
            logger.warning("could not enqueue export %s", export_id, exc_info=True)
    return requeued
