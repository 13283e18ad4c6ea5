"""The dataset API: collection, samples, annotation, exports, evaluations."""

from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Literal

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Status
from ninja.pagination import paginate

from dataset_app import queries
from dataset_app.annotation import approve_sample, reject_sample
from dataset_app.collect import collect_samples
from dataset_app.errors import ExportFileMissing, ExportNotReady
from dataset_app.exporters.registry import writer_class
from dataset_app.exports import start_export
from dataset_app.models import DatasetExport, DatasetSample, EvaluationRun, JobStatus
from dataset_app.schemas import (
    AnnotateIn,
    CollectIn,
    CollectOut,
    EvaluationIn,
    EvaluationOut,
    ExportAccepted,
    ExportIn,
    ExportOut,
    QualityOut,
    SampleFilter,
    SampleOut,
    StatsOut,
)
from reflection_site.api import ApiKey, CursorPagination, ErrorOut
from reflection_site.celery import enqueue_on_commit

router = Router(tags=["dataset"], auth=ApiKey("read"))

_ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


def _actor(request: HttpRequest) -> str:
    key = getattr(request, "auth", None)
    return f"api:{key.name}" if key is not None else "api"


# --- Collection and samples ----------------------------------------------------------------------
@router.post(
    "/dataset/collect", auth=ApiKey("operate"), response={200: CollectOut, **_ERRORS}, url_name="collect_samples"
)
def collect(request: HttpRequest, payload: CollectIn) -> dict:
    """Collect samples from decisions, audits and turns not yet collected (the seed's `dataset collect`);
    `dry_run` only counts."""
    result = collect_samples(
        since=payload.since,
        until=payload.until,
        session_id=payload.session,
        sample_type=payload.type,
        auto_approve=payload.auto_approve,
        dry_run=payload.dry_run,
    )
    return result.as_dict()


@router.get("/dataset/samples", response={200: list[SampleOut], **_ERRORS}, url_name="list_samples")
@paginate(CursorPagination, ordering=("-created_at", "-id"))
def list_samples(request: HttpRequest, filters: Query[SampleFilter]) -> QuerySet[DatasetSample]:
    """Samples, newest first; `type` takes all, positive, negative or a sample type. Content is redacted."""
    return queries.list_samples(
        status=filters.status,
        sample_type=filters.type,
        quality_above=filters.quality_above,
        needs_review=filters.needs_review,
        session_id=filters.session,
    )


@router.get("/dataset/samples/{sample_id}", response={200: SampleOut, **_ERRORS}, url_name="get_sample")
def get_sample(request: HttpRequest, sample_id: str) -> DatasetSample:
    return get_object_or_404(DatasetSample, id=sample_id)


@router.post(
    "/dataset/samples/{sample_id}/approve",
    auth=ApiKey("annotate"),
    response={200: SampleOut, **_ERRORS},
    url_name="approve_sample",
)
def approve(request: HttpRequest, sample_id: str, payload: AnnotateIn) -> DatasetSample:
    sample = get_object_or_404(DatasetSample, id=sample_id)
    return approve_sample(sample, annotated_by=payload.annotated_by, notes=payload.notes)


@router.post(
    "/dataset/samples/{sample_id}/reject",
    auth=ApiKey("annotate"),
    response={200: SampleOut, **_ERRORS},
    url_name="reject_sample",
)
def reject(request: HttpRequest, sample_id: str, payload: AnnotateIn) -> DatasetSample:
    sample = get_object_or_404(DatasetSample, id=sample_id)
    return reject_sample(sample, annotated_by=payload.annotated_by, notes=payload.notes)


@router.get("/dataset/stats", response={200: StatsOut, **_ERRORS}, url_name="dataset_stats")
def stats(
    request: HttpRequest, by: Literal["type", "status", "daily"] = "type", days: int = Query(30, ge=1, le=3660)
) -> dict:
    """Sample counts by type, by annotation status, or per day (the last `days` days, 1 to 3660)."""
    return queries.counts_by(by, days=days)


@router.get("/dataset/quality", response={200: QualityOut, **_ERRORS}, url_name="dataset_quality")
def quality(request: HttpRequest) -> dict:
    """The quality score distribution (ten buckets), summary figures, factor means and means by type."""
    return queries.quality_distribution()


# --- Exports -------------------------------------------------------------------------------------
@router.post(
    "/dataset/exports",
    auth=ApiKey("operate"),
    response={202: ExportAccepted, **_ERRORS},
    url_name="create_export",
)
def create_export(request: HttpRequest, payload: ExportIn) -> Status[dict]:
    """Start an export; a worker writes `<name>-train` and `<name>-val` files. Poll it by id."""
    with transaction.atomic():
        export = start_export(
            export_format=payload.format,
            name=payload.name,
            sample_types=payload.sample_types,
            only_approved=payload.only_approved,
            min_quality=payload.min_quality,
            include_pii=payload.include_pii,
            train_split=payload.train_split,
            session_id=payload.session,
            exported_by=_actor(request),
        )
    return Status(HTTPStatus.ACCEPTED, {"id": export.id, "status": export.status})


@router.get("/dataset/exports", response={200: list[ExportOut], **_ERRORS}, url_name="list_exports")
@paginate(CursorPagination, ordering=("-exported_at", "-id"))
def list_exports(request: HttpRequest) -> QuerySet[DatasetExport]:
    return DatasetExport.objects.all()


@router.get("/dataset/exports/{export_id}", response={200: ExportOut, **_ERRORS}, url_name="get_export")
def get_export(request: HttpRequest, export_id: str) -> DatasetExport:
    """Status, progress, counts, files and their SHA-256 checksums."""
    return get_object_or_404(DatasetExport, id=export_id)


def _stream(paths: list[Path], *, skip_header_after_first: bool) -> Iterator[bytes]:
    for index, path in enumerate(paths):
        with open(path, "rb") as fh:
            if index and skip_header_after_first:
                fh.readline()
            while chunk := fh.read(256 * 1024):
                yield chunk


@router.get(
    "/dataset/exports/{export_id}/download",
    auth=ApiKey("operate"),
    response={200: None, 409: ErrorOut, 410: ErrorOut, **_ERRORS},
    url_name="download_export",
)
def download_export(
    request: HttpRequest, export_id: str, split: Literal["train", "validation", "all"] = "train"
) -> HttpResponse:
    """The train or validation file, or both one after the other (`all`; a CSV keeps one header)."""
    export = get_object_or_404(DatasetExport, id=export_id)
    if export.status != JobStatus.COMPLETED:
        raise ExportNotReady(f"Export {export.id} is {export.status}; download it once it is completed.")
    splits = ["train", "validation"] if split == "all" else [split]
    paths = [Path(f["path"]) for s in splits if (f := export.file_for(s)) is not None]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing or not paths:
        raise ExportFileMissing(f"The export's file is gone: {', '.join(missing) or split}.")
    if len(paths) == 1:
        return FileResponse(open(paths[0], "rb"), as_attachment=True, filename=paths[0].name)  # noqa: SIM115
    writer = writer_class(export.export_format)
    response = StreamingHttpResponse(
        _stream(paths, skip_header_after_first=writer.header is not None), content_type=writer.media_type
    )
    response["Content-Disposition"] = f'attachment; filename="{export.export_name}-all{writer.suffix}"'
    return response


# --- Evaluations ---------------------------------------------------------------------------------
@router.get("/dataset/evaluations", response={200: list[EvaluationOut], **_ERRORS}, url_name="list_evaluations")
@paginate(CursorPagination, ordering=("-created_at", "-id"))
def list_evaluations(request: HttpRequest, stage: Literal["gate", "guardian"] | None = None) -> QuerySet[EvaluationRun]:
    """Evaluation runs, newest first: model, prompt version, split, accuracy, per-label metrics, confusion."""
    runs = EvaluationRun.objects.all()
    if stage:
        runs = runs.filter(stage=stage)
    return runs


@router.get("/dataset/evaluations/{run_id}", response={200: EvaluationOut, **_ERRORS}, url_name="get_evaluation")
def get_evaluation(request: HttpRequest, run_id: str) -> EvaluationRun:
    return get_object_or_404(EvaluationRun, id=run_id)


@router.post(
    "/dataset/evaluations",
    auth=ApiKey("operate"),
    response={202: EvaluationOut, **_ERRORS},
    url_name="start_evaluation",
)
def start_evaluation(request: HttpRequest, payload: EvaluationIn) -> Status[EvaluationRun]:
    """Start an evaluation run on a worker; poll it by id."""

    with transaction.atomic():
        run = EvaluationRun.objects.create(
            stage=payload.stage,
            requested_model=payload.model or "",
            split=payload.split,
            train_split=settings.DATASET_TRAIN_SPLIT,
            status=JobStatus.PENDING,
            created_by=_actor(request),
        )
        enqueue_on_commit("dataset_app.tasks.run_evaluation", run.id, payload.model, payload.offline)
    return Status(HTTPStatus.ACCEPTED, run)
