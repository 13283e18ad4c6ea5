"""``alpaca``: ``{"instruction", "input", "output"}`` as in the seed's example (``Decision: …\\nFact: …\\nReason: …``)."""

from __future__ import annotations

from typing import Any

from dataset_app.exporters.examples import example_of
from dataset_app.exporters.registry import register
from dataset_app.exporters.rows import Row
from dataset_app.exporters.writer import Writer


@register
class AlpacaWriter(Writer):
    name = "alpaca"
    label = "Alpaca"
    order = 1

    def record(self, row: Row) -> Any:
        ex = example_of(row.content)
        if ex is None:
            return None
        return {"instruction": ex.instruction, "input": ex.input, "output": ex.output_text}
