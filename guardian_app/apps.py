from celery.signals import worker_ready
from django.apps import AppConfig
from django.db.models.signals import post_save


class GuardianAppConfig(AppConfig):
    name = "guardian_app"
    verbose_name = "Memory files and the write guardian"

    def ready(self) -> None:
        """Connect the receivers: every process (web, worker, commands) runs this before it sends a signal."""
        from guardian_app.models import WriteGuardianAudit
        from guardian_app.recall.receivers import index_turns_after_decision, reindex_after_change
        from guardian_app.signals import memory_file_changed
        from guardian_app.write.refusals import on_audit_saved

        post_save.connect(on_audit_saved, sender=WriteGuardianAudit, dispatch_uid="guardian_app.redact_refused")
        memory_file_changed.connect(reindex_after_change, dispatch_uid="guardian_app.recall_reindex")
        # Conversations as a recall source: the turns are indexed after the gate's decision (a worker), not in ingest.
        post_save.connect(
            index_turns_after_decision,
            sender="sessions_app.MemoryGateDecision",
            dispatch_uid="guardian_app.recall_index_turns",
        )
        # Sent by a Celery worker once it is up; the web never sends it (the tasks module is imported by then).
        worker_ready.connect(
            _resume_jobs_at_worker_start, dispatch_uid="guardian_app.resume_jobs_at_worker_start", weak=False
        )


def _resume_jobs_at_worker_start(sender: object = None, **kwargs: object) -> None:
    from guardian_app.tasks import resume_jobs_at_worker_start

    resume_jobs_at_worker_start(sender, **kwargs)
