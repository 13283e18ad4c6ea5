"""The four sample types and the stage each one trains, below the models: the export formats read them without
importing ``dataset_app.models`` (which builds its export format choices from those formats)."""

from __future__ import annotations

from django.db import models


class SampleType(models.TextChoices):
    MEMORY_GATE_POSITIVE = "memory_gate_positive", "memory gate positive"
    MEMORY_GATE_NEGATIVE = "memory_gate_negative", "memory gate negative"
    WRITE_GUARDIAN_DECISION = "write_guardian_decision", "write guardian decision"
    ANNOTATED_TURN = "annotated_turn", "annotated turn"


# The stage a sample trains or evaluates: the gate decides NO_WRITE/UPDATE_*, the guardian written/refused.
GATE_SAMPLE_TYPES: tuple[str, ...] = (
    SampleType.MEMORY_GATE_POSITIVE,
    SampleType.MEMORY_GATE_NEGATIVE,
    SampleType.ANNOTATED_TURN,
)
GUARDIAN_SAMPLE_TYPES: tuple[str, ...] = (SampleType.WRITE_GUARDIAN_DECISION,)
