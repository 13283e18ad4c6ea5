"""``raw``: the sample record (the seed's ``DatasetSampleRecord``, camelCase, ``createdAt`` in epoch ms) with a
fixed schema: no field is null or changes type between rows; ``content`` is JSON text."""

from __future__ import annotations

import datetime as dt

import orjson

from dataset_app.exporters.registry import register
from dataset_app.exporters.rows import Row
from dataset_app.exporters.writer import Writer

NOT_SCORED = -1.0  # the quality of a sample that was collected with quality scoring off
QUALITY_FACTORS = ("conversationClarity", "decisionConfidence", "factVerifiability")


def _epoch_ms(value: dt.datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


@register
class RawWriter(Writer):
    """The sample record (the seed's ``DatasetSampleRecord``) with one schema in every row of every file.

    A loader that infers the schema from the first rows (Hugging Face ``datasets``, pandas, Arrow) fails when a
    field is null in one file and a string in another, and the four sample types' contents have different
    shapes. So no field is ever null or changes type: an absent text is ``""``, ``annotatedAt`` is ``0`` for a
    sample never annotated, a sample collected with scoring off has ``qualityScore`` and every quality factor
    ``-1``, and ``content`` is the sample's content as JSON text (as the seed's ``content TEXT`` column holds
    it): ``json.loads(record["content"])`` gives the object. The stored JSON is spliced in, never re-encoded.
    The annotator's notes may quote the sample: redacted unless ``include_pii``, as the content is.
    """

    name = "raw"
    label = "Raw"
    order = 4
    full_rows = True
    pii_fields = ("annotation_notes",)

    def line(self, row: Row) -> bytes:
        extra = row.extra
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
                "annotationNotes": extra.get("annotation_notes") or "",
                "privacyChecked": bool(extra.get("privacy_checked")),
                "containsPii": bool(extra.get("contains_pii")),
                "collectionStrategy": extra.get("collection_strategy") or "",
                "createdAt": _epoch_ms(extra.get("created_at")) or 0,
                "content": row.content_text,
            }
        )
