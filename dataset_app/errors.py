"""The dataset app's errors; the API turns each into ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

from http import HTTPStatus

from reflection_site.errors import ReflectionError


class DatasetError(ReflectionError):
    code = "dataset_error"
    status = HTTPStatus.BAD_REQUEST


class InvalidExportOptions(DatasetError):
    code = "invalid_export_options"
    status = HTTPStatus.UNPROCESSABLE_ENTITY


class ExportNotReady(DatasetError):
    code = "export_not_ready"
    status = HTTPStatus.CONFLICT


class ExportFileMissing(DatasetError):
    code = "export_file_missing"
    status = HTTPStatus.GONE


class EvaluationUnavailable(DatasetError):
    code = "evaluation_unavailable"
    status = HTTPStatus.SERVICE_UNAVAILABLE
