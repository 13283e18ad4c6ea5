"""The recall index's signal receivers, connected in ``GuardianAppConfig.ready()``."""

from __future__ import annotations

from guardian_app.recall.index import enqueue_index


def reindex_after_change(sender: object, file_name: str = "", **kwargs: object) -> None:
    """A memory file changed (write, rollback, recorded hand edit; sent after commit): re-index it."""
    enqueue_index(file_name or None)
