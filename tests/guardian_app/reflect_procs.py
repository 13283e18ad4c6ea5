"""Entry points for the kill-and-resume tests: ``python -m tests.guardian_app.reflect_procs CMD ARGS``.

Each runs in its own process against the SQLite file in DATABASE_URL and the workspace in WORKSPACE_DIR and
prints one JSON document. With ``DIE_AT=<n>`` the process SIGKILLs itself at its n-th *event*: after a
checkpoint is saved, after an opinion's transaction commits, or just before or just after a file is
replaced, i.e. at every point where a crash leaves different traces behind.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

_events = 0


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    import django

    django.setup()


def _event() -> None:
    global _events
    _events += 1
    if os.environ.get("DIE_AT") and _events == int(os.environ["DIE_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)


def _install_kill_points() -> None:
    from guardian_app.reflect import opinions, reflect
    from guardian_app.write import workspace
    from reflection_site import checkpoints

    real_save, real_write, real_record = checkpoints.save, workspace.write_file, opinions.record_fact

    def save(*args: Any, **kwargs: Any) -> Any:
        result = real_save(*args, **kwargs)
        _event()
        return result

    def write_file(name: str, text: str) -> None:
        _event()
        real_write(name, text)
        _event()

    def record_fact(*args: Any, **kwargs: Any) -> Any:
        result = real_record(*args, **kwargs)
        _event()
        return result

    checkpoints.save = save
    workspace.write_file = write_file
    reflect.record_fact = record_fact


def run_reflect(since: str, until: str) -> dict[str, Any]:
    """Finish an interrupted run, or start the one run of this test (``since`` .. ``until``)."""
    from guardian_app.models import ReflectRun
    from guardian_app.reflect.reflect import execute_run, resume_interrupted, start_run

    _install_kill_points()
    resumed = [r.id for r in resume_interrupted()]
    if not ReflectRun.objects.exists():
        execute_run(start_run(since=since, until=until))
    run = ReflectRun.objects.get()
    return {"run": run.id, "status": run.status, "resumed": resumed, "events": _events}


def reflect_state() -> dict[str, Any]:
    """Everything a reflect run leaves behind, without ids or times: files, opinions, audits, versions."""
    from django.conf import settings

    from guardian_app.models import FileVersion, Opinion, OpinionEvidence, ReflectRun, WriteGuardianAudit

    root = settings.WORKSPACE_DIR
    files = {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*.md"))
        if not p.relative_to(root).as_posix().startswith("memory/")
    }
    opinions = sorted(
        (o.entity, o.statement, o.confidence, o.supporting_count, o.contradicting_count, o.contradiction_streak)
        for o in Opinion.objects.all()
    )
    evidence = sorted(
        (e.opinion.statement, e.fact_id, e.stance, e.confidence_before, e.confidence_after)
        for e in OpinionEvidence.objects.select_related("opinion")
    )
    audits = sorted(
        (a.target_file, a.status, a.lines_added, a.lines_removed, a.lines_modified)
        for a in WriteGuardianAudit.objects.filter(source="reflect")
    )
    versions = sorted(
        (v.file_name, v.seq, v.kind, v.snapshot.content if v.snapshot_id else None)
        for v in FileVersion.objects.select_related("snapshot")
    )
    runs = [
        (r.status, r.facts_count, r.entities_count, r.pages_written, r.pages_unchanged, r.pages_refused)
        + (r.opinions_created, r.opinions_updated, r.memory_proposals, len(r.stats.get("moves", [])))
        for r in ReflectRun.objects.all()
    ]
    return {
        "files": files,
        "opinions": opinions,
        "evidence": evidence,
        "audits": audits,
        "versions": versions,
        "runs": runs,
    }


def run_import(folder: str) -> dict[str, Any]:
    from reflection_site import checkpoints
    from sessions_app import ingest, openclaw_import

    real_save, real_ingest = checkpoints.save, ingest.ingest_turn

    def save(*args: Any, **kwargs: Any) -> Any:
        result = real_save(*args, **kwargs)
        _event()
        return result

    def ingest_turn(*args: Any, **kwargs: Any) -> Any:
        result = real_ingest(*args, **kwargs)
        _event()
        return result

    checkpoints.save = save
    openclaw_import.ingest_turn = ingest_turn
    report = openclaw_import.import_sessions(folder)
    return {"summary": report.summary(), "events": _events}


def import_state() -> dict[str, Any]:
    from reflection_site.models import JobCheckpoint
    from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn

    turns = sorted(
        (t.session_id, t.turn_number, t.user_message_id, t.user_message_content, t.agent_message_content)
        for t in ConversationTurn.objects.all()
    )
    return {
        "sessions": sorted(ConversationSession.objects.values_list("id", flat=True)),
        "turns": turns,
        "contexts": ConversationContext.objects.count(),
        "open_checkpoints": JobCheckpoint.objects.filter(finished_at__isnull=True).count(),
    }


def main() -> None:
    _setup()
    command, *args = sys.argv[1:]
    commands = {
        "reflect": run_reflect,
        "reflect-state": reflect_state,
        "import": run_import,
        "import-state": import_state,
    }
    print(json.dumps(commands[command](*args), default=str))


if __name__ == "__main__":
    main()
