"""Reads of the dataset: filtered sample lists, counts by type/status/day, and the quality distribution."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Min, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from dataset_app.collect import sample_types_for
from dataset_app.models import AnnotationStatus, DatasetSample, SampleType
from dataset_app.scoring import FACTORS

BUCKETS = 10
# The model's generated columns of the scorer's FACTORS, in that order.
FACTOR_COLUMNS = ("conversation_clarity", "decision_confidence", "fact_verifiability")


def list_samples(
    *,
    status: str | None = None,
    sample_type: str | None = None,
    quality_above: float | None = None,
    needs_review: bool = False,
    session_id: str | None = None,
) -> QuerySet[DatasetSample]:
    """Samples matching the seed's list options (``type`` takes all/positive/negative or a type name).

    Raises ValueError for an unknown type or status.
    """
    samples = DatasetSample.objects.all()
    if needs_review:
        status = AnnotationStatus.NEEDS_REVIEW
    if status:
        if status not in AnnotationStatus.values:
            raise ValueError(f"unknown status {status!r}; use one of {', '.join(AnnotationStatus.values)}")
        samples = samples.filter(annotation_status=status)
    if sample_type and sample_type != "all":
        samples = samples.filter(sample_type__in=sample_types_for(sample_type))
    if quality_above is not None:
        samples = samples.filter(quality_score__gte=quality_above)
    if session_id:
        samples = samples.filter(session_id=session_id)
    return samples


def counts_by(by: str, *, days: int = 30) -> dict[str, Any]:
    """``{"by", "total", "rows": [{"key", "count"}]}``; ``by`` is type, status or daily (last ``days`` days).

    Types and statuses are listed even at zero, so a chart always has the same bars.
    """
    samples = DatasetSample.objects.order_by()
    if by == "type":
        found = dict(samples.values_list("sample_type").annotate(n=Count("*")))
        rows = [{"key": key, "count": found.get(key, 0)} for key in SampleType.values]
    elif by == "status":
        found = dict(samples.values_list("annotation_status").annotate(n=Count("*")))
        rows = [{"key": key, "count": found.get(key, 0)} for key in AnnotationStatus.values]
    elif by == "daily":
        since = timezone.now() - dt.timedelta(days=days)
        per_day = (
            samples.filter(created_at__gte=since)
            .annotate(day=TruncDate("created_at", tzinfo=timezone.get_default_timezone()))
            .values_list("day")
            .annotate(n=Count("*"))
            .order_by("day")
        )
        rows = [{"key": day.isoformat(), "count": n} for day, n in per_day]
    else:
        raise ValueError("by must be type, status or daily")
    return {"by": by, "total": sum(r["count"] for r in rows), "rows": rows}


def quality_distribution() -> dict[str, Any]:
    """Histogram of quality scores in ten buckets, summary figures, factor means and means by type.

    Two queries, whatever the number of samples (issue 9): one pass over the ``dataset_samples_figures`` index
    (type, score and the three factor columns, so no sample's row or JSON is read) grouped by type, that counts,
    sums and bounds the scores, counts each bucket and sums each factor; then the median by the quality index.
    A bucket ``[from, to)`` holds the scores from ``from`` up to ``to`` (the last one 1.0 too). A factor's mean
    is over the scored samples that have that factor (the scorer writes all three).
    """
    scored = Q(quality_score__isnull=False)
    edges = [i / BUCKETS for i in range(BUCKETS)]
    in_bucket = {
        f"b_{i}": Count(
            "quality_score",
            filter=Q(quality_score__gte=low) & (Q(quality_score__lt=edges[i + 1]) if i + 1 < BUCKETS else Q()),
        )
        for i, low in enumerate(edges)
    }
    factors = {f"f_{name}": Sum(name, filter=scored) for name in FACTOR_COLUMNS}
    factor_counts = {f"n_{name}": Count(name, filter=scored) for name in FACTOR_COLUMNS}
    groups = list(
        DatasetSample.objects.order_by()
        .values("sample_type")
        .annotate(
            n=Count("quality_score"),
            rows=Count("*"),
            total=Sum("quality_score"),
            low=Min("quality_score"),
            high=Max("quality_score"),
            below=Count("quality_score", filter=Q(quality_score__lt=settings.DATASET_MIN_QUALITY_SCORE)),
            **in_bucket,
            **factors,
            **factor_counts,
        )
    )
    count = sum(g["n"] for g in groups)
    median = None
    if count:
        ordered = DatasetSample.objects.filter(scored).order_by("quality_score").values_list("quality_score", flat=True)
        middle = list(ordered[(count - 1) // 2 : count // 2 + 1])
        median = round(sum(middle) / len(middle), 4)

    def mean(name: str) -> float | None:
        n = sum(g[f"n_{name}"] for g in groups)
        return round(sum(g[f"f_{name}"] or 0.0 for g in groups) / n, 4) if n else None

    return {
        "count": count,
        "unscored": sum(g["rows"] - g["n"] for g in groups),
        "mean": round(sum(g["total"] or 0.0 for g in groups) / count, 4) if count else None,
        "median": median,
        "min": min((g["low"] for g in groups if g["n"]), default=None),
        "max": max((g["high"] for g in groups if g["n"]), default=None),
        "below_min_quality": sum(g["below"] for g in groups),
        "min_quality": settings.DATASET_MIN_QUALITY_SCORE,
        "buckets": [
            {"from": round(low, 2), "to": round(low + 1 / BUCKETS, 2), "count": sum(g[f"b_{i}"] for g in groups)}
            for i, low in enumerate(edges)
        ],
        "factors": {factor: mean(name) for factor, name in zip(FACTORS, FACTOR_COLUMNS, strict=True)},
        "by_type": {
            g["sample_type"]: round(g["total"] / g["n"], 4)
            for g in sorted(groups, key=lambda g: g["sample_type"])
            if g["n"]
        },
    }
