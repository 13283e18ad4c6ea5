"""Signals other parts listen to (the recall index re-reads a memory file when it changes)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent after commit with ``file_name=<name>`` after every write, rollback and recorded hand edit.
memory_file_changed = Signal()
