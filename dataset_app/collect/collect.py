"""REQ-004 collection: gate decisions, guardian audits and annotated turns become labelled samples.

The four sample types and the seed's criteria (``datasetCollection.*``, all in settings):

* ``memory_gate_positive``: the gate proposed a write and was right. The write stood (was not rolled back
  within ``notRolledBackWithinDays``, so the sample is collected only once that many days have passed),
  or a person's correction confirmed it; no objection (no thumbs-down on the turn); quality at least
  ``minQualityScore``.
* ``memory_gate_negative``: the gate proposed a write and was wrong: the guardian refused it (and no retry
  wrote it), the write was rolled back within ``notRolledBackWithinDays``, or a behaviour correction says
  so. The sample records the correct decision (NO_WRITE, or the UPDATE_* of the corrected file).
* ``write_guardian_decision``: each written or refused audit with the file content the guardian saw, the
  guardian's decision and, from a correction or a rollback, the person's correction. Collected at once; a
  correction or rollback that comes later amends the sample (``amend_guardian_samples``), and a person's
  approval of it is then asked for again. Audits without a session (learning, reflect) are not samples.
* ``annotated_turn``: a turn with a behaviour correction or user feedback, with both stages' inputs,
  outputs and labels (``correct``/``incorrect``/``corrected``; ``missed``, label ``missed_write``, for a
  thumbs-down on a NO_WRITE: a memory the gate missed).

The label is judged in ``judge.py``, the content drafted in ``drafts.py``, score, privacy and status set in
``status.py``.

A source (decision, audit or turn) is collected once per sample type: ``source_key`` is unique, and the
insert is ``bulk_create(ignore_conflicts=True)``, so two collectors running at once add nothing twice.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.utils import timezone

from dataset_app.collect.drafts import Draft, draft_annotated_turn, draft_gate_sample, draft_guardian_sample
from dataset_app.collect.judge import REFUSED, ROLLED_BACK, WRITTEN
from dataset_app.collect.status import COLLECTOR, finish_drafts
from dataset_app.models import AnnotationStatus, DatasetSample, SampleType
from dataset_app.scoring import QualityWeights
from guardian_app.models import BehaviorCorrection, Rollback, WriteGuardianAudit
from sessions_app.models import ConversationTurn, Decision, MemoryGateDecision

logger = logging.getLogger("dataset_app.collect")

Progress = Callable[[int, int], None]  # (done, total)

BATCH = 500

# --type accepts the seed's all | positive | negative, the two other kinds, and the full type names.
TYPE_ALIASES: dict[str, tuple[str, ...]] = {
    "all": tuple(SampleType.values),
    "positive": (SampleType.MEMORY_GATE_POSITIVE,),
    "negative": (SampleType.MEMORY_GATE_NEGATIVE,),
    "guardian": (SampleType.WRITE_GUARDIAN_DECISION,),
    "annotated": (SampleType.ANNOTATED_TURN,),
    **{value: (value,) for value in SampleType.values},
}


def sample_types_for(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"all"``, ``"positive"``, a type name, or a list of them -> the sample types. ValueError if unknown."""
    if value is None:
        return TYPE_ALIASES["all"]
    values = [value] if isinstance(value, str) else list(value)
    types: list[str] = []
    for item in values:
        if item not in TYPE_ALIASES:
            raise ValueError(f"unknown sample type {item!r}; use one of {', '.join(TYPE_ALIASES)}")
        types += [t for t in TYPE_ALIASES[item] if t not in types]
    return tuple(types)


@dataclass
class CollectionResult:
    dry_run: bool = False
    considered: int = 0
    created: Counter = field(default_factory=Counter)  # by sample type
    statuses: Counter = field(default_factory=Counter)  # by annotation status
    skipped: Counter = field(default_factory=Counter)  # by reason
    already_collected: int = 0
    superseded: int = 0
    amended: int = 0

    @property
    def total_created(self) -> int:
        return sum(self.created.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "considered": self.considered,
            "created": self.total_created,
            "by_type": {str(k): v for k, v in self.created.items()},
            "by_status": {str(k): v for k, v in self.statuses.items()},
            "skipped": {str(k): v for k, v in self.skipped.items()},
            "already_collected": self.already_collected,
            "superseded": self.superseded,
            "amended": self.amended,
        }


def _sampled(sample_types: Sequence[str], **outer: str) -> Exists:
    return Exists(
        DatasetSample.objects.filter(sample_type__in=sample_types, **{k: OuterRef(v) for k, v in outer.items()})
    )


def _in_range(
    queryset: QuerySet,
    *,
    since: dt.datetime | None,
    until: dt.datetime | None,
    session_id: str | None,
    session_field: str = "session_id",
) -> QuerySet:
    if since is not None:
        queryset = queryset.filter(created_at__gte=since)
    if until is not None:
        queryset = queryset.filter(created_at__lt=until)
    if session_id:
        queryset = queryset.filter(**{session_field: session_id})
    return queryset


_AUDITS = Prefetch(
    "audits",
    queryset=WriteGuardianAudit.objects.select_related("before_snapshot", "rollback").prefetch_related("corrections"),
)


GATE_TYPES: tuple[str, ...] = (SampleType.MEMORY_GATE_POSITIVE, SampleType.MEMORY_GATE_NEGATIVE)


def decision_candidates(types: Sequence[str], **window: Any) -> list[str]:
    """UPDATE_* decisions with an audit and no gate sample yet, or with a correction or rollback newer than
    their gate sample (which may turn a positive into a negative); ids, oldest first."""
    if not any(t in GATE_TYPES for t in types):
        return []
    latest_sample = (
        DatasetSample.objects.filter(decision_id=OuterRef(OuterRef("pk")), sample_type__in=GATE_TYPES)
        .order_by("-created_at")
        .values("created_at")[:1]
    )
    newer_correction = Exists(
        BehaviorCorrection.objects.filter(audit__decision_id=OuterRef("pk"), corrected_at__gt=Subquery(latest_sample))
    )
    newer_rollback = Exists(
        Rollback.objects.filter(audit__decision_id=OuterRef("pk"), rolled_back_at__gt=Subquery(latest_sample))
    )
    decisions = (
        MemoryGateDecision.objects.exclude(decision=Decision.NO_WRITE)
        .filter(Exists(WriteGuardianAudit.objects.filter(decision=OuterRef("pk"))))
        .filter(~_sampled(GATE_TYPES, decision_id="pk") | newer_correction | newer_rollback)
    )
    return list(_in_range(decisions, **window).order_by("created_at", "id").values_list("id", flat=True))


def audit_candidates(**window: Any) -> list[str]:
    audits = WriteGuardianAudit.objects.filter(
        status__in=[WRITTEN, REFUSED, ROLLED_BACK], session__isnull=False
    ).exclude(_sampled([SampleType.WRITE_GUARDIAN_DECISION], audit_id="pk"))
    return list(_in_range(audits, **window).order_by("created_at", "id").values_list("id", flat=True))


def turn_candidates(**window: Any) -> list[str]:
    corrected = Exists(BehaviorCorrection.objects.filter(audit__turn=OuterRef("pk")))
    turns = (
        ConversationTurn.objects.filter(Q(feedback_json__isnull=False) | corrected)
        .filter(Exists(MemoryGateDecision.objects.filter(turn=OuterRef("pk"))))
        .exclude(_sampled([SampleType.ANNOTATED_TURN], turn_id="pk"))
    )
    return list(_in_range(turns, **window).order_by("created_at", "id").values_list("id", flat=True))


def _batches(ids: Sequence[str], size: int = BATCH) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def _drafts_for(
    kind: str, ids: Sequence[str], *, now: dt.datetime, types: Sequence[str], result: CollectionResult
) -> list[Draft]:
    drafts: list[Draft] = []
    if kind == "decision":
        rows = MemoryGateDecision.objects.filter(id__in=ids).select_related("turn").prefetch_related(_AUDITS)
        made = [draft_gate_sample(row, now=now, types=types) for row in rows]
    elif kind == "audit":
        rows = (
            WriteGuardianAudit.objects.filter(id__in=ids)
            .select_related("before_snapshot", "rollback", "turn", "decision")
            .prefetch_related("corrections")
        )
        made = [draft_guardian_sample(row, now=now) for row in rows]
    else:
        rows = ConversationTurn.objects.filter(id__in=ids).prefetch_related(
            Prefetch("decisions", queryset=MemoryGateDecision.objects.prefetch_related(_AUDITS))
        )
        made = [draft_annotated_turn(row, now=now) for row in rows]
    candidates = [draft for draft, _ in made if draft is not None]
    collected = set(
        DatasetSample.objects.filter(source_key__in=[d.sample.source_key for d in candidates]).values_list(
            "source_key", flat=True
        )
    )
    for draft, why_not in made:
        if draft is None:
            result.skipped[why_not] += 1
        elif draft.sample.source_key in collected:
            result.skipped["already_collected"] += 1
        else:
            drafts.append(draft)
    return drafts


def _insert(drafts: Sequence[Draft], result: CollectionResult) -> list[DatasetSample]:
    """Insert the drafts; those whose source was collected meanwhile are left out by the constraint."""
    keys = [d.sample.source_key for d in drafts]
    existing = set(DatasetSample.objects.filter(source_key__in=keys).values_list("source_key", flat=True))
    DatasetSample.objects.bulk_create([d.sample for d in drafts], ignore_conflicts=True, batch_size=BATCH)
    stored = set(DatasetSample.objects.filter(source_key__in=keys).values_list("source_key", flat=True))
    result.already_collected += len(existing)
    return [d.sample for d in drafts if d.sample.source_key in stored and d.sample.source_key not in existing]


def supersede_contradicted(new_samples: Sequence[DatasetSample], *, now: dt.datetime) -> int:
    """A decision judged again (a later correction or rollback): the gate sample of the other kind for the
    same decision is rejected, or sent back to review if a person approved it, so the dataset never
    teaches both answers."""
    changed = 0
    for sample in new_samples:
        if sample.sample_type not in GATE_TYPES or sample.decision_id is None:
            continue
        other = [t for t in GATE_TYPES if t != sample.sample_type]
        stale = DatasetSample.objects.filter(decision_id=sample.decision_id, sample_type__in=other).exclude(
            annotation_status=AnnotationStatus.REJECTED
        )
        note = f"Contradicted by {sample.sample_type} sample {sample.id} ({sample.collection_strategy})."
        # Rejected first: the approved ones it leaves are then sent back to review (not rejected too).
        changed += stale.exclude(annotation_status=AnnotationStatus.APPROVED).update(
            annotation_status=AnnotationStatus.REJECTED, annotated_by=COLLECTOR, annotated_at=now, annotation_notes=note
        )
        changed += stale.filter(annotation_status=AnnotationStatus.APPROVED).update(
            annotation_status=AnnotationStatus.NEEDS_REVIEW, annotation_notes=note
        )
    return changed


def amend_guardian_samples(
    *, now: dt.datetime, auto_approve: bool, weights: QualityWeights, dry_run: bool = False
) -> int:
    """Guardian samples whose audit was corrected or rolled back after collection get the new label.

    A sample a person approved goes back to review; one a person rejected stays rejected; any other gets
    its status from the rules again. Returns how many samples changed (or would, with ``dry_run``).
    """
    touched = (
        DatasetSample.objects.filter(sample_type=SampleType.WRITE_GUARDIAN_DECISION, audit__isnull=False)
        .filter(
            Exists(BehaviorCorrection.objects.filter(audit_id=OuterRef("audit_id")))
            | Exists(Rollback.objects.filter(audit_id=OuterRef("audit_id")))
        )
        .select_related("audit__before_snapshot", "audit__rollback", "audit__turn")
        .prefetch_related("audit__corrections")
    )
    changed = 0
    for sample in touched.iterator(chunk_size=200):
        draft, _ = draft_guardian_sample(sample.audit, now=now)
        if draft is None or (
            draft.sample.label == sample.label
            and draft.sample.content.get("userCorrection") == sample.content.get("userCorrection")
        ):
            continue
        changed += 1
        if dry_run:
            continue
        finish_drafts([draft], auto_approve=auto_approve, now=now, weights=weights)
        new = draft.sample
        previous = sample.annotation_status
        sample.content, sample.label = new.content, new.label
        sample.quality_score, sample.quality_factors = new.quality_score, new.quality_factors
        sample.privacy_checked, sample.contains_pii = new.privacy_checked, new.contains_pii
        sample.pii_redacted_content = new.pii_redacted_content
        sample.collection_strategy, sample.fingerprint = new.collection_strategy, new.fingerprint
        note = f"Amended: the audit was {new.collection_strategy.replace('_', ' ')} after collection."
        if previous == AnnotationStatus.APPROVED:
            sample.annotation_status, sample.annotation_notes = AnnotationStatus.NEEDS_REVIEW, note
        elif previous != AnnotationStatus.REJECTED:
            sample.annotation_status = new.annotation_status
            sample.annotated_by, sample.annotated_at = new.annotated_by, new.annotated_at
            sample.annotation_notes = f"{note} {new.annotation_notes or ''}".strip()
        sample.save()
    return changed


def collect_samples(
    *,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    session_id: str | None = None,
    sample_type: str | Sequence[str] | None = "all",
    auto_approve: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
    now: dt.datetime | None = None,
) -> CollectionResult:
    """Collect samples from decisions, audits and turns not yet collected.

    1. List candidates of each requested kind that have no sample of that kind yet (``since``/``until``
       bound the source's creation time, ``session_id`` its session).
    2. In batches: build each sample's content, score it, check its privacy, set its status.
    3. Unless ``dry_run``, insert each batch with ``ignore_conflicts``: the unique ``source_key`` keeps a
       source that another collector took meanwhile from being collected twice.
    4. A new gate sample rejects the contradicted one of the same decision (``supersede_contradicted``).
    5. Guardian samples whose audit was corrected or rolled back since get the new label (``amend_guardian_samples``).
    Raises ValueError for an unknown ``sample_type``.
    """
    types = sample_types_for(sample_type)
    now = now or timezone.now()
    result = CollectionResult(dry_run=dry_run)
    if not settings.DATASET_COLLECTION_ENABLED:
        result.skipped["collection_disabled"] += 1
        return result
    window = {"since": since, "until": until, "session_id": session_id}
    weights = QualityWeights.from_settings()
    work: list[tuple[str, list[str]]] = [("decision", decision_candidates(types, **window))]
    if SampleType.WRITE_GUARDIAN_DECISION in types:
        work.append(("audit", audit_candidates(**window)))
    if SampleType.ANNOTATED_TURN in types:
        work.append(("turn", turn_candidates(**window)))
    total = sum(len(ids) for _, ids in work)
    done = 0
    if progress:
        progress(0, total)
    for kind, ids in work:
        for batch in _batches(ids):
            drafts = _drafts_for(kind, batch, now=now, types=types, result=result)
            finish_drafts(drafts, auto_approve=auto_approve, now=now, weights=weights)
            # Quality below minQualityScore keeps a positive out of the dataset altogether.
            kept = []
            for draft in drafts:
                sample = draft.sample
                if (
                    sample.sample_type == SampleType.MEMORY_GATE_POSITIVE
                    and sample.quality_score is not None
                    and sample.quality_score < settings.DATASET_MIN_QUALITY_SCORE
                ):
                    result.skipped["below_min_quality"] += 1
                else:
                    kept.append(draft)
            if dry_run:
                created = [d.sample for d in kept]
            else:
                with transaction.atomic():
                    created = _insert(kept, result)
                    result.superseded += supersede_contradicted(created, now=now)
            for sample in created:
                result.created[sample.sample_type] += 1
                result.statuses[sample.annotation_status] += 1
            result.considered += len(batch)
            done += len(batch)
            if progress:
                progress(done, total)
    if SampleType.WRITE_GUARDIAN_DECISION in types:
        result.amended = amend_guardian_samples(now=now, auto_approve=auto_approve, weights=weights, dry_run=dry_run)
    logger.info("dataset collection: %s", result.as_dict())
    return result
