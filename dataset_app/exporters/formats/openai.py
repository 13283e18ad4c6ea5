"""``openai``: ``{"messages": [system, user, assistant]}``, the chat fine-tuning format. The assistant message is
the correct output as the JSON object the gate replies with (``{"decision", "reason", "candidate_fact"}``) or, for
the guardian, ``{"decision": "written"|"refused", "reason"}``."""

from __future__ import annotations

from typing import Any

from dataset_app.exporters.examples import example_of
from dataset_app.exporters.registry import register
from dataset_app.exporters.rows import Row
from dataset_app.exporters.writer import Writer


@register
class OpenAIWriter(Writer):
    name = "openai"
    label = "OpenAI"
    order = 3

    def record(self, row: Row) -> Any:
        ex = example_of(row.content)
        if ex is None:
            return None
        return {
            "messages": [
                {"role": "system", "content": ex.system},
                {"role": "user", "content": ex.input},
                {"role": "assistant", "content": ex.output_json},
            ]
        }
