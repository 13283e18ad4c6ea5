"""The guardian's admin: audits and the rollback console, learning, recall, reflect, and a session's writes and
rollback; importing registers each."""

from guardian_app.admin import audits, corrections, files, learning, recall, reflect, sessions

__all__ = ["audits", "corrections", "files", "learning", "recall", "reflect", "sessions"]
