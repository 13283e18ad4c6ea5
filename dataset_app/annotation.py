"""Annotation: approve, reject or send back to review; the review queue and moving through it.

The admin review page, the terminal review (``manage.py dataset review``), the API and the
import-export round trip all change a sample's status through these functions.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from dataset_app.errors import DatasetError
from dataset_app.models import AnnotationStatus, DatasetSample

# A person sets these; pending and auto_approved are set by the collector.
ANNOTATION_CHOICES: tuple[str, ...] = (
    AnnotationStatus.APPROVED,
    AnnotationStatus.REJECTED,
    AnnotationStatus.NEEDS_REVIEW,
)


def annotate_sample(
    sample: DatasetSample, *, status: str, annotated_by: str, notes: str | None = None
) -> DatasetSample:
    """Set the sample's status, who did it and when; ``notes`` replaces the notes when given.

    Raises DatasetError for a status a person cannot set or an empty ``annotated_by``.
    """
    if status not in ANNOTATION_CHOICES:
        raise DatasetError(f"Annotation status must be one of {', '.join(ANNOTATION_CHOICES)}.", code="invalid_status")
    if not (annotated_by or "").strip():
        raise DatasetError("annotated_by is required.", code="annotator_required")
    sample.annotation_status = status
    sample.annotated_by = annotated_by.strip()[:255]
    sample.annotated_at = timezone.now()
    fields = ["annotation_status", "annotated_by", "annotated_at"]
    if notes is not None:
        sample.annotation_notes = notes
        fields.append("annotation_notes")
    sample.save(update_fields=fields)
    return sample


def approve_sample(sample: DatasetSample, *, annotated_by: str, notes: str | None = None) -> DatasetSample:
    return annotate_sample(sample, status=AnnotationStatus.APPROVED, annotated_by=annotated_by, notes=notes)


def reject_sample(sample: DatasetSample, *, annotated_by: str, notes: str | None = None) -> DatasetSample:
    return annotate_sample(sample, status=AnnotationStatus.REJECTED, annotated_by=annotated_by, notes=notes)


def annotate_samples(queryset: QuerySet[DatasetSample], *, status: str, annotated_by: str) -> int:
    """Set many samples' status in one UPDATE (the admin's bulk actions); returns how many changed."""
    if status not in ANNOTATION_CHOICES:
        raise DatasetError(f"Annotation status must be one of {', '.join(ANNOTATION_CHOICES)}.", code="invalid_status")
    with transaction.atomic():
        return queryset.update(annotation_status=status, annotated_by=annotated_by[:255], annotated_at=timezone.now())


def approve_samples(queryset: QuerySet[DatasetSample], *, annotated_by: str) -> int:
    return annotate_samples(queryset, status=AnnotationStatus.APPROVED, annotated_by=annotated_by)


def reject_samples(queryset: QuerySet[DatasetSample], *, annotated_by: str) -> int:
    return annotate_samples(queryset, status=AnnotationStatus.REJECTED, annotated_by=annotated_by)


# --- The review queue: needs_review, best quality first, then id -----------------------------------

_NO_SCORE = -1.0  # Unscored samples come last.


def review_queue() -> QuerySet[DatasetSample]:
    return DatasetSample.objects.review_queue()


def _ranked(queryset: QuerySet[DatasetSample]) -> QuerySet[DatasetSample]:
    return queryset.annotate(_rank=Coalesce(F("quality_score"), Value(_NO_SCORE)))


def next_in_queue(after: DatasetSample | None = None, *, exclude_id: str | None = None) -> DatasetSample | None:
    """The queue's first sample, or the first one after ``after`` in queue order (whatever its status now),
    wrapping to the start so that a sample skipped earlier comes round again."""
    queue = _ranked(review_queue())
    if exclude_id:
        queue = queue.exclude(id=exclude_id)
    if after is not None:
        rank = after.quality_score if after.quality_score is not None else _NO_SCORE
        later = queue.filter(Q(_rank__lt=rank) | Q(_rank=rank, id__gt=after.id)).order_by("-_rank", "id").first()
        if later is not None:
            return later
    return queue.order_by("-_rank", "id").first()


def queue_position(sample: DatasetSample) -> int:
    """1 + how many queued samples come before ``sample`` in queue order."""
    rank = sample.quality_score if sample.quality_score is not None else _NO_SCORE
    return _ranked(review_queue()).filter(Q(_rank__gt=rank) | Q(_rank=rank, id__lt=sample.id)).count() + 1


def previous_in_queue(before: DatasetSample) -> DatasetSample | None:
    """The sample before ``before`` in queue order, or None at the start."""
    rank = before.quality_score if before.quality_score is not None else _NO_SCORE
    return (
        _ranked(review_queue())
        .filter(Q(_rank__gt=rank) | Q(_rank=rank, id__lt=before.id))
        .order_by("_rank", "-id")
        .first()
    )
