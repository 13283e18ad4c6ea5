"""What the LLM guardian is asked (prompt ``guardian_app/prompts/guardian-v1.*``, with the operators'
corrections) and the shape its reply must have (``validate_reply``)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from guardian_app.errors import GuardianError
from guardian_app.models import BehaviorCorrection
from guardian_app.write.heuristic_guardian import GuardianCorrection
from reflection_site.prompts import load_prompt

PROMPT_VERSION = "guardian-v1"
MAX_EDITS = 20


class InvalidReply(GuardianError, ValueError):
    """The guardian's reply has not the shape of one (a ValueError too: the LLM client retries it as unparseable)."""

    code = "invalid_reply"


def active_corrections(limit: int = 50) -> list[GuardianCorrection]:
    """The operators' corrections marked ``apply_to_future`` that carry a pattern, newest first."""
    rows = BehaviorCorrection.objects.prompt_rows(limit, with_pattern=True)
    return [
        GuardianCorrection(
            pattern=row.correction_pattern or "",
            corrected_status=row.corrected_status,
            reason=row.correction_reason,
            correction_id=row.id,
            corrected_target_file=row.corrected_target_file,
        )
        for row in rows
    ]


def build_messages(
    fact: str,
    content: str | None,
    *,
    target_file: str,
    corrections: list[GuardianCorrection],
    version: str = PROMPT_VERSION,
) -> list[dict[str, str]]:
    """The chat messages for the guardian prompt ``version`` (a template pair in ``guardian_app/prompts/``)."""
    correction_lines = "\n".join(
        json.dumps(
            {
                "id": c.correction_id,
                "pattern": c.pattern,
                "corrected_status": c.corrected_status,
                "corrected_target_file": c.corrected_target_file,
                "reason": c.reason,
            },
            ensure_ascii=False,
        )
        for c in corrections
    )
    return load_prompt("guardian_app", version).messages(
        system={"max_removed": settings.GUARDIAN_MAX_REMOVED_LINES, "corrections": correction_lines or "(none)"},
        user={"file_name": target_file, "content": content or "", "fact": fact},
    )


def validate_reply(data: dict[str, Any]) -> dict[str, Any]:
    """The LLM's reply checked for shape; InvalidReply (a ValueError: an unparseable reply, retried) when it is not."""
    action = str(data.get("action", "")).strip().lower()
    if action not in {"write", "refuse"}:
        raise InvalidReply("action must be 'write' or 'refuse'")
    edits = data.get("edits") or []
    if not isinstance(edits, list) or len(edits) > MAX_EDITS:
        raise InvalidReply(f"edits must be a list of at most {MAX_EDITS}")
    for edit in edits:
        if not isinstance(edit, dict) or edit.get("op") not in {"append", "replace", "delete"}:
            raise InvalidReply("each edit needs op append, replace or delete")
        for key in ("section", "text", "find"):
            if key in edit and edit[key] is not None and not isinstance(edit[key], str):
                raise InvalidReply(f"edit {key} must be text")
    if action == "write" and not edits:
        raise InvalidReply("a write needs at least one edit")
    return {"action": action, "reason": str(data.get("reason") or "").strip(), "edits": edits}
