"""Entry points for the multi-process guardian tests: ``python -m tests.guardian_app.procs CMD ARGS``.

Each runs in its own process against the database in DATABASE_URL (a SQLite file the test shares
between processes) and the workspace in WORKSPACE_DIR, and prints one JSON document.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    import django

    django.setup()


def _decision(fact: str, session_id: str) -> Any:
    from sessions_app.models import ConversationSession, ConversationTurn, GateStatus, MemoryGateDecision

    session, _ = ConversationSession.objects.get_or_create(id=session_id, defaults={"channel_id": "procs"})
    turn = ConversationTurn.objects.create(
        session=session,
        turn_number=ConversationTurn.objects.filter(session=session).count() + 1,
        user_message_content=fact,
        agent_message_content="Noted.",
        gate_status=GateStatus.DONE,
    )
    return MemoryGateDecision.objects.create(
        turn=turn, session=session, decision="UPDATE_USER", reason="procs", candidate_fact=fact, llm_model="procs"
    )


def append(worker: str, count: str) -> dict[str, Any]:
    """Write ``count`` distinct facts to USER.md through the guardian, one decision each."""
    from guardian_app.write.guardian import write_fact

    results = []
    for i in range(int(count)):
        fact = f"Worker {worker} saw marker m{worker}x{i}."
        decision = _decision(fact, f"procs:{worker}")
        audit = write_fact(decision)
        results.append({"fact": fact, "audit": audit.id, "status": audit.status, "reason": audit.reason})
    return {"worker": worker, "results": results}


def decide(fact: str) -> dict[str, Any]:
    return {"decision": _decision(fact, "procs:kill").id}


def write(decision_id: str, die_at: str = "") -> dict[str, Any]:
    """Run the guardian for a decision; ``die_at`` kills this process with SIGKILL mid-write:
    ``before-replace`` (audit written ahead, file untouched) or ``after-replace`` (file written, audit not)."""
    from guardian_app.write import workspace
    from guardian_app.write.guardian import write_fact
    from sessions_app.models import MemoryGateDecision

    real_write = workspace.write_file

    def dying_write(name: str, text: str) -> None:
        if die_at == "before-replace":
            os.kill(os.getpid(), signal.SIGKILL)
        real_write(name, text)
        if die_at == "after-replace":
            os.kill(os.getpid(), signal.SIGKILL)

    workspace.write_file = dying_write
    audit = write_fact(MemoryGateDecision.objects.get(id=decision_id))
    return {"audit": audit.id, "status": audit.status, "reason": audit.reason}


def report() -> dict[str, Any]:
    """Every USER.md audit and version, in history order."""
    from guardian_app.models import FileVersion, WriteGuardianAudit

    versions = [
        {"seq": v.seq, "kind": v.kind, "snapshot": v.snapshot_id, "audit": v.audit_id}
        for v in FileVersion.objects.filter(file_name="USER.md").order_by("seq")
    ]
    audits = {
        a.id: {
            "status": a.status,
            "before": a.before_snapshot_id,
            "after": a.after_snapshot_id,
            "fact": a.candidate_fact,
            "decision": a.decision_id,
        }
        for a in WriteGuardianAudit.objects.filter(target_file="USER.md")
    }
    return {"versions": versions, "audits": audits}


def main() -> None:
    _setup()
    command, *args = sys.argv[1:]
    result = {"append": append, "decide": decide, "write": write, "report": report}[command](*args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
