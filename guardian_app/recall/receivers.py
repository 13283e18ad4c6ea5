"""The recall index's signal receivers, connected in ``GuardianAppConfig.ready()``."""

from __future__ import annotations

from guardian_app.recall.index import enqueue_index, enqueue_transcript_index


def reindex_after_change(sender: object, file_name: str = "", **kwargs: object) -> None:
    """A memory file changed (write, rollback, recorded hand edit; sent after commit): re-index it."""
    enqueue_index(file_name or None)


def index_turns_after_decision(sender: object, instance: object, created: bool = False, **kwargs: object) -> None:
    """The gate recorded a decision on a turn (in a worker, never in ingest's request): have the new turns
    indexed soon, so recall finds what was said within seconds instead of at the next minute's full run."""
    if created and not kwargs.get("raw"):
        enqueue_transcript_index()
