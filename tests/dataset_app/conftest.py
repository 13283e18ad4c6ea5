"""Fixtures of the dataset tests: a collected dataset of every sample type, and an OpenAI line checker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dataset_app.collect import collect_samples
from dataset_app.models import DatasetSample
from tests.dataset_app.factories import CorrectionFactory, RollbackFactory, written_decision

EMAIL = "dana.lee@example.com"
SECRET = "sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm"


@pytest.fixture
def dataset(db: None) -> dict[str, Any]:
    """Samples of all four types collected from ORM rows: clean ones, one with PII and a secret, a rejected
    one. Returns the ids of the interesting ones."""
    written_decision(days=10, user="I prefer morning check-ins.", fact="Prefers morning check-ins.")
    written_decision(days=12, user="我喜欢喝绿茶,不喝咖啡。", fact="喜欢喝绿茶,不喝咖啡。")
    written_decision(days=9, user="Use make deploy to ship the staging build.", fact="Ship staging with make deploy.")
    refused = written_decision(days=1, user="ok thanks", fact="Said thanks.", status="refused", reason="Small talk.")
    rolled = written_decision(days=3, user="Maybe I like jazz?", fact="Likes jazz.", status="rolled_back")
    RollbackFactory(audit=rolled.audits.get(), reason="Uncertain, not a fact.")
    corrected = written_decision(days=2, user="Remember the launch is on Friday.", fact="Launch is on Friday.")
    CorrectionFactory(
        audit=corrected.audits.get(),
        corrected_status="written",
        corrected_target_file="MEMORY.md",
        corrected_candidate_fact="The launch is on Friday.",
        correction_reason="A project date, not a user fact.",
    )
    pii = written_decision(days=10, user=f"My email is {EMAIL} and the key is {SECRET}", fact=f"Email is {EMAIL}.")
    feedback_turn = written_decision(days=0, user="I am vegetarian.", fact="Is vegetarian.").turn
    feedback_turn.feedback_json = {
        "events": [{"user_id": "u", "feedback": "up", "reason": None, "at": "t"}],
        "last": "up",
    }
    feedback_turn.save()

    collect_samples()
    rejected = DatasetSample.objects.filter(decision=refused, sample_type="memory_gate_negative").get()
    rejected.annotation_status = "rejected"
    rejected.save()
    return {
        "pii_decision": pii.id,
        "rejected": rejected.id,
        "total": DatasetSample.objects.count(),
    }


OPENAI_ROLES = {"system", "user", "assistant"}


def check_openai_line(line: str) -> list[str]:
    """The chat fine-tuning rules (OpenAI's format checks): problems found in one JSONL line."""
    problems: list[str] = []
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return ["not JSON"]
    if set(record) != {"messages"}:
        problems.append(f"keys {sorted(record)}")
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "missing messages"]
    for message in messages:
        if not isinstance(message, dict) or set(message) - {"role", "content", "name", "weight"}:
            problems.append(f"bad message keys {message}")
            continue
        if message.get("role") not in OPENAI_ROLES:
            problems.append(f"role {message.get('role')!r}")
        if not isinstance(message.get("content"), str) or not message["content"].strip():
            problems.append("content is not a non-empty string")
    if messages[-1].get("role") != "assistant":
        problems.append("does not end with the assistant")
    if sum(1 for m in messages if m.get("role") == "system") > 1 or (
        any(m.get("role") == "system" for m in messages) and messages[0].get("role") != "system"
    ):
        problems.append("system message not first")
    if len(line) > 4 * 16_385:  # ~4 characters a token: far over the context limit
        problems.append("too long")
    return problems


def read_lines(path: str | Path) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()
