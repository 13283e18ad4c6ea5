"""The guardian's admin: audits and the rollback console, learning, recall and reflect; importing registers each."""

from guardian_app.admin import audits, learning, recall, reflect

__all__ = ["audits", "learning", "recall", "reflect"]
