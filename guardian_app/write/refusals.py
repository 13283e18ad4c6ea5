"""What a refused write leaves behind: nothing refused stays readable outside the verbatim turn.

The guardian refuses a fact that carries a key, a password or personal data (and facts for other reasons);
the turn that said it keeps its verbatim text in ``conversation_turns`` (REQ-001, behind the raw-text
permission), but the records derived from it must not repeat it: the refused audit (its fact, reason and edits)
and the gate decision that proposed it (its candidate fact and raw reply) are redacted with
``reflection_site.privacy`` as the refusal is recorded, in the same transaction. Every reader (the admin,
``gate list``, ``guardian export``, the API, the dataset, the nightly conversation export) then sees
``[SECRET]``, ``[PHONE]`` … where the value was. A fact holding such a placeholder is refused by the guardian
(``precheck``), so retrying a redacted refusal can never write the placeholder into a memory file.
"""

from __future__ import annotations

import logging
from typing import Any

from reflection_site import privacy

logger = logging.getLogger(__name__)


def _redacted(value: str | None) -> str | None:
    return privacy.redact(value) if value else value


def redact_refused(audit: Any) -> bool:
    """Redact a refused audit and its gate decision in place in the database; True if anything changed."""
    from guardian_app.models import WriteGuardianAudit
    from sessions_app.models import MemoryGateDecision

    if audit.status != WriteGuardianAudit.Status.REFUSED:
        return False
    changed = False
    fact, reason = _redacted(audit.candidate_fact), _redacted(audit.reason)
    edits = privacy.redact_data(audit.edits) if audit.edits else audit.edits
    if (fact, reason, edits) != (audit.candidate_fact, audit.reason, audit.edits):
        WriteGuardianAudit.objects.filter(id=audit.id).update(candidate_fact=fact or "", reason=reason, edits=edits)
        audit.candidate_fact, audit.reason, audit.edits = fact or "", reason, edits
        changed = True
    if audit.decision_id:
        decision = (
            MemoryGateDecision.objects.filter(id=audit.decision_id)
            .values("candidate_fact", "raw_response", "reason")
            .first()
        )
        if decision is not None:
            clean = {key: _redacted(value) for key, value in decision.items()}
            if clean != decision:
                MemoryGateDecision.objects.filter(id=audit.decision_id).update(**clean)
                changed = True
    if changed:
        logger.info("redacted the refused write %s and its gate decision", audit.id)
    return changed


def on_audit_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    """``post_save`` of ``WriteGuardianAudit``: inside the transaction that records the refusal."""
    if kwargs.get("raw"):
        return  # loaddata
    redact_refused(instance)
