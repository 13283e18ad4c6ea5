"""Reads of the dataset: filtered sample lists, counts by type/status/day, and the quality distribution."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, FloatField, IntegerField, Max, Min, QuerySet
from django.db.models.functions import Cast, Floor, Least, TruncDate
from django.utils import timezone

from dataset_app.collect import sample_types_for
from dataset_app.models import AnnotationStatus, DatasetSample, SampleType
from dataset_app.scoring import FACTORS

BUCKETS = 10


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
        found = dict(samples.values_list("sample_type").annotate(n=Count("id")))
        rows = [{"key": key, "count": found.get(key, 0)} for key in SampleType.values]
    elif by == "status":
        found = dict(samples.values_list("annotation_status").annotate(n=Count("id")))
        rows = [{"key": key, "count": found.get(key, 0)} for key in AnnotationStatus.values]
    elif by == "daily":
        since = timezone.now() - dt.timedelta(days=days)
        per_day = (
            samples.filter(created_at__gte=since)
            .annotate(day=TruncDate("created_at", tzinfo=timezone.get_default_timezone()))
            .values_list("day")
            .annotate(n=Count("id"))
            .order_by("day")
        )
        rows = [{"key": day.isoformat(), "count": n} for day, n in per_day]
    else:
        raise ValueError("by must be type, status or daily")
    return {"by": by, "total": sum(r["count"] for r in rows), "rows": rows}


def quality_distribution() -> dict[str, Any]:
    """Histogram of quality scores in ten buckets, summary figures, factor means and means by type."""
    scored = DatasetSample.objects.order_by().filter(quality_score__isnull=False)
    bucket = Least(Cast(Floor(Cast("quality_score", FloatField()) * BUCKETS), IntegerField()), BUCKETS - 1)
    found = dict(scored.annotate(bucket=bucket).values_list("bucket").annotate(n=Count("id")))
    buckets = [
        {"from": round(i / BUCKETS, 2), "to": round((i + 1) / BUCKETS, 2), "count": found.get(i, 0)}
        for i in range(BUCKETS)
    ]
    summary = scored.aggregate(mean=Avg("quality_score"), low=Min("quality_score"), high=Max("quality_score"))
    count = sum(b["count"] for b in buckets)
    median = None
    if count:
        ordered = scored.order_by("quality_score").values_list("quality_score", flat=True)
        middle = list(ordered[(count - 1) // 2 : count // 2 + 1])
        median = round(sum(middle) / len(middle), 4)
    by_type = {
        key: round(mean, 4)
        for key, mean in scored.values_list("sample_type").annotate(m=Avg("quality_score")).order_by("sample_type")
    }
    factor_sums = dict.fromkeys(FACTORS, 0.0)
    factor_n = 0
    for factors in (
        scored.exclude(quality_factors__isnull=True).values_list("quality_factors", flat=True).iterator(chunk_size=2000)
    ):
        if isinstance(factors, dict):
            factor_n += 1
            for name in FACTORS:
                factor_sums[name] += float(factors.get(name) or 0.0)
    return {
        "count": count,
        "unscored": DatasetSample.objects.filter(quality_score__isnull=True).count(),
        "mean": round(summary["mean"], 4) if summary["mean"] is not None else None,
        "median": median,
        "min": summary["low"],
        "max": summary["high"],
        "below_min_quality": scored.filter(quality_score__lt=settings.DATASET_MIN_QUALITY_SCORE).count(),
        "min_quality": settings.DATASET_MIN_QUALITY_SCORE,
        "buckets": buckets,
        "factors": {name: round(total / factor_n, 4) if factor_n else None for name, total in factor_sums.items()},
        "by_type": by_type,
    }
