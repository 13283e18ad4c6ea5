"""Dataset exports as jobs: record one (``create_export``, ``start_export``), write it (``run_export``,
``write_export``), and re-enqueue what a dead worker left (``sweep_stale_exports``).

Each sample becomes one record in the export's format (``dataset_app.exporters.formats``; gate samples teach the
memory gate, guardian samples the write guardian), in ``<name>-train`` or ``<name>-val`` by the deterministic
split (``dataset_app.exporters.split``). Rows are read with a server-side iterator and written through a small
buffer, so memory stays flat whatever the number of samples. Files are written under a temporary name and
renamed when complete, and recorded with counts, sizes and SHA-256.

Unless ``include_pii``, a sample's redacted content is exported (``visible_content_sql``, the SQL of
``DatasetSample.visible_content``), and a sample whose PII could not be redacted is left out (counted in
``skipped_pii_samples``); a sample collected with privacy filtering off is redacted on the way out, and so are the
other columns a format declares may hold PII (``Writer.pii_fields``).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from dataset_app.errors import InvalidExportOptions
from dataset_app.exporters.files import HashingFile, export_dir
from dataset_app.exporters.registry import format_names, writer_class
from dataset_app.exporters.rows import Row, parse_time, reading_without_mmap, stream_values
from dataset_app.exporters.split import SPLIT_SUFFIX, SPLITS, Edges, split_point
from dataset_app.exporters.writer import Writer
from dataset_app.models import (
    APPROVED_STATUSES,
    AnnotationStatus,
    DatasetExport,
    DatasetSample,
    JobStatus,
    SampleType,
    visible_content_sql,
)
from reflection_site import privacy
from reflection_site.celery import enqueue_on_commit, send

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (done, total)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
EXPORT_TASK = "dataset_app.tasks.run_export"


# --- Creating an export ----------------------------------------------------------------------------


def file_paths(directory: Path, name: str, export_format: str) -> dict[str, Path]:
    suffix = writer_class(export_format).suffix
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
    if export_format not in format_names():
        raise InvalidExportOptions(f"Unknown format {export_format!r}; use one of {', '.join(format_names())}.")
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


# --- Reading the samples ---------------------------------------------------------------------------


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


def _as_text(field: str) -> Cast:
    # Text, not JSONField: no decoding in the ORM; the writers decode with orjson only what they need.
    return Cast(field, TextField())


def iter_rows(export: DatasetExport, *, chunk_size: int = 2000) -> Iterator[Row | None]:
    """The export's rows, content chosen in SQL (redacted unless include_pii) and read as JSON text; None
    for a sample left out because its PII could not be redacted. Every column for a format with ``full_rows``,
    its ``pii_fields`` redacted unless include_pii."""
    include_pii = bool((export.filters or {}).get("include_pii"))
    writer = writer_class(export.export_format)
    content = _as_text("content") if include_pii else visible_content_sql(_as_text)
    queryset = selected_samples(export).annotate(_export_content=content)
    names: tuple[str, ...] = _SLIM_FIELDS
    full = writer.full_rows
    if full:
        queryset = queryset.annotate(
            _factors=_as_text("quality_factors"),
            _created_at=_as_text("created_at"),
            _annotated_at=_as_text("annotated_at"),
        )
        names += _EXTRA_FIELDS
    if not include_pii:
        names += ("privacy_checked",) if not full else ()
    checked_at = names.index("privacy_checked") if not include_pii else -1
    redacted = () if include_pii else writer.pii_fields
    for values in stream_values(queryset.values_list(*names), names, chunk_size=chunk_size):
        text = values[2]
        if text is None:
            yield None  # Contains PII that could not be redacted.
            continue
        extra = None
        if full:
            extra = dict(zip(_EXTRA_FIELDS, values[6:18], strict=True))
            extra["quality_factors"] = extra.pop("_factors")
            extra["created_at"] = parse_time(extra.pop("_created_at"))
            extra["annotated_at"] = parse_time(extra.pop("_annotated_at"))
            for field in redacted:
                if extra.get(field):
                    extra[field] = privacy.redact(extra[field])
        if not isinstance(text, str):  # A driver that decoded the JSON already.
            text = orjson.dumps(text).decode()
        row = Row(values[0], values[1], text, values[3], values[4], values[5], extra)
        if checked_at >= 0 and not values[checked_at]:
            row.content = privacy.redact_data(row.content)  # Collected with privacy filtering off.
        yield row


# --- Writing it ------------------------------------------------------------------------------------


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


@dataclass
class _Tally:
    """What an export counted on its way through the rows."""

    total: int = 0  # the samples selected, for progress
    done: int = 0
    approved: int = 0
    skipped_pii: int = 0
    unusable: int = 0
    quality_sum: float = 0.0
    quality_n: int = 0


def _write_rows(
    export: DatasetExport, writers: dict[str, Writer], tally: _Tally, *, train_split: float, progress: Progress | None
) -> None:
    """Stream the export's rows into the split's writers. The sample nearest the boundary on each side is held
    back (``Edges``) and placed last, so a small export leaves neither file empty."""
    save_progress = _progress_saver(export)
    edges = Edges()
    for row in iter_rows(export):
        tally.done += 1
        if row is None:
            tally.skipped_pii += 1
            continue
        point = split_point(row.id)
        split = "train" if point < train_split else "validation"
        line = writers[split].line(row)
        if line is None:
            tally.unusable += 1
            continue
        if row.annotation_status in APPROVED_STATUSES:
            tally.approved += 1
        if row.quality_score is not None:
            tally.quality_sum += row.quality_score
            tally.quality_n += 1
        line = edges.swap(split, point, line)
        if line is not None:
            writers[split].add(line)
        if tally.done % 1000 == 0:
            if progress:
                progress(tally.done, tally.total)
            save_progress(tally.done, tally.total)
    edges.place(writers, train_split=train_split)


def _record_completed(
    export: DatasetExport, outs: dict[str, HashingFile], paths: dict[str, Path], tally: _Tally, *, rejected: int
) -> None:
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
    export.approved_samples = tally.approved
    export.rejected_samples = rejected
    export.skipped_pii_samples = tally.skipped_pii
    export.avg_quality_score = round(tally.quality_sum / tally.quality_n, 4) if tally.quality_n else None
    export.files = files
    export.file_size_bytes = sum(f["size_bytes"] for f in files)
    export.checksum = files[0]["sha256"]
    export.finished_at = timezone.now()
    export.heartbeat_at = export.finished_at
    export.error = None
    export.save()


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
    parts = {split: path.with_name(path.name + ".part") for split, path in paths.items()}
    outs: dict[str, HashingFile] = {}
    tally = _Tally()
    try:
        paths["train"].parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with reading_without_mmap():
            tally.total = selected_samples(export).count()
            rejected = _matching(export).filter(annotation_status=AnnotationStatus.REJECTED).count()
            outs = {split: HashingFile(part) for split, part in parts.items()}
            writers = {split: writer_class(export.export_format)(out) for split, out in outs.items()}
            _write_rows(export, writers, tally, train_split=train_split, progress=progress)
        for writer in writers.values():
            writer.close()
        for split in SPLITS:
            os.replace(parts[split], paths[split])
    except BaseException as exc:
        for out in outs.values():
            out.discard()
        for part in parts.values():
            part.unlink(missing_ok=True)
        DatasetExport.objects.filter(id=export.id).update(
            status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
        )
        raise
    if progress:
        progress(tally.done, tally.total)
    _record_completed(export, outs, paths, tally, rejected=rejected)
    if tally.unusable:
        logger.warning("export %s: %d sample(s) had content this format cannot express", export.id, tally.unusable)
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
