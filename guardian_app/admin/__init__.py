"""The guardian's admin: audits and the rollback console, learning, recall, reflect, and a session's writes and
rollback; importing registers each."""

from guardian_app.admin import audits, learning, recall, reflect, sessions

__all__ = ["audits", "learning", "recall", "reflect", "sessions"]
