"""The incremental recall index: what it covers, what it skips, what a change touches, and the re-index hooks."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from guardian_app.models import MemoryChunk, MemoryIndexFile
from guardian_app.recall import index as index_module
from guardian_app.recall.index import index_workspace
from guardian_app.recall.recall import recall, record_hits
from guardian_app.recall.sources import workspace_files
from guardian_app.recall.storage import ensure_search_schema
from guardian_app.tasks import run_memory_index

pytestmark = pytest.mark.django_db

USER = """\
# User

## Preferences
- Prefers summaries on Fridays.
- Drinks green tea in the afternoon.
- Uses Neovim with a dark theme.
"""

DAILY = """\
# 2026-02-03

Spent the morning on the staging migration.

## Retain
- W @staging: The staging server runs PostgreSQL 15 on db-2.
- B @warelay: I fixed the reconnect loop by wrapping connection.update in try/catch.
- O(c=0.8) @Peter: Prefers short replies on WhatsApp.
"""


@pytest.fixture
def populated(write_md: Callable[[str, str], Path]) -> Callable[[str, str], Path]:
    write_md("USER.md", USER)
    write_md("MEMORY.md", "# Memory\n\n- The project is called Reflection.\n")
    write_md("memory/2026-02-03.md", DAILY)
    write_md("bank/entities/Peter.md", "# Peter\n\n- Lives in Vienna.\n")
    write_md("bank/world.md", "# World\n\n- The office closes at 18:00.\n")
    return write_md


def chunk_rows(path: str) -> list[tuple[int, int, int, str]]:
    return list(
        MemoryChunk.objects.filter(path=path).order_by("start_line").values_list("id", "start_line", "end_line", "text")
    )


def test_indexes_the_memory_files_daily_logs_and_bank_pages(populated, workspace):
    (workspace / "notes.txt").write_text("- not indexed\n")
    (workspace / "memory" / "scratch.md").write_text("- not a daily log\n")
    (workspace / "bank" / ".hidden").mkdir()
    (workspace / "bank" / ".hidden" / "x.md").write_text("- hidden\n")
    (workspace / "README.md").write_text("- not a memory file\n")
    report = index_workspace()
    paths = sorted(MemoryIndexFile.objects.values_list("path", flat=True))
    assert paths == ["MEMORY.md", "USER.md", "bank/entities/Peter.md", "bank/world.md", "memory/2026-02-03.md"]
    assert report.files_indexed == 5
    assert report.chunks_added == MemoryChunk.objects.count() == 3 + 1 + 4 + 1 + 1
    peter = MemoryChunk.objects.get(path="bank/entities/Peter.md")
    assert peter.entities == ["Peter"] and peter.entity_keys == "|peter|"
    assert MemoryChunk.objects.get(path="bank/world.md").kind == "world"


def test_retain_bullets_are_stored_typed_and_dated(populated):
    index_workspace()
    rows = MemoryChunk.objects.filter(path="memory/2026-02-03.md", kind__isnull=False).order_by("start_line")
    assert [(r.kind, r.entities, r.start_line, r.confidence) for r in rows] == [
        ("world", ["staging"], 6, None),
        ("experience", ["warelay"], 7, None),
        ("opinion", ["Peter"], 8, 0.8),
    ]
    assert rows[0].content == "The staging server runs PostgreSQL 15 on db-2."
    assert {r.timestamp.date().isoformat() for r in rows} == {"2026-02-03"}


def test_nothing_outside_the_workspace_and_no_symlink_that_leaves_it(populated, workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("- the secret outside\n")
    (outside / "2026-01-01.md").write_text("- outside log\n")
    os.symlink(outside / "secret.md", workspace / "TOOLS.md")
    os.symlink(outside / "2026-01-01.md", workspace / "memory" / "2026-01-01.md")
    os.symlink(outside, workspace / "bank" / "linked")
    inside_link = workspace / "memory" / "2026-02-04.md"
    os.symlink(workspace / "memory" / "2026-02-03.md", inside_link)  # Stays inside: allowed.
    paths = {f.path for f in workspace_files()}
    assert "TOOLS.md" not in paths and "memory/2026-01-01.md" not in paths
    assert not any(p.startswith("bank/linked") for p in paths)
    assert "memory/2026-02-04.md" in paths
    index_workspace()
    assert not MemoryChunk.objects.filter(text__contains="outside").exists()
    assert not MemoryChunk.objects.filter(text__contains="secret").exists()


def test_an_unchanged_workspace_is_skipped_without_touching_a_row(populated, django_assert_max_num_queries):
    index_workspace()
    before = list(MemoryChunk.objects.order_by("id").values_list("id", "start_line", "hash", "updated_at"))
    # Stat only: the meta and file rows are read, no file is hashed, nothing is written.
    # + the transcripts' watermark and delta, the matrix's generation (and on PostgreSQL the advisory lock).
    with django_assert_max_num_queries(11):
        report = index_workspace()
    assert (report.files_unchanged, report.files_indexed, report.changed) == (5, 0, False)
    assert list(MemoryChunk.objects.order_by("id").values_list("id", "start_line", "hash", "updated_at")) == before


def test_a_touched_but_identical_file_is_not_rechunked(populated):
    index_workspace()
    before = chunk_rows("USER.md")
    touched = populated("USER.md", USER)  # Same content, new mtime.
    report = index_workspace()
    assert report.files_indexed == 0 and report.files_unchanged == 5
    assert chunk_rows("USER.md") == before
    # The new mtime is recorded, so the next run skips the file on its stat alone.
    assert MemoryIndexFile.objects.get(path="USER.md").mtime == touched.stat().st_mtime_ns // 1_000_000


def test_an_edited_file_changes_only_its_changed_chunks(populated):
    index_workspace()
    before = {text: (chunk_id, start) for chunk_id, start, _, text in chunk_rows("USER.md")}
    other_files = list(MemoryChunk.objects.exclude(path="USER.md").order_by("id").values_list("id", "hash"))
    edited = USER.replace("## Preferences\n", "## Preferences\n- Wakes up at 6.\n").replace(
        "- Drinks green tea in the afternoon.\n", ""
    )
    populated("USER.md", edited)
    report = index_workspace()
    assert (report.files_indexed, report.chunks_added, report.chunks_removed) == (1, 1, 1)
    after = {text: (chunk_id, start) for chunk_id, start, _, text in chunk_rows("USER.md")}
    assert "- Drinks green tea in the afternoon." not in after
    assert after["- Prefers summaries on Fridays."] == (
        before["- Prefers summaries on Fridays."][0],
        5,
    )  # Same row, moved.
    assert after["- Uses Neovim with a dark theme."][0] == before["- Uses Neovim with a dark theme."][0]
    assert after["- Wakes up at 6."][1] == 4
    assert report.chunks_moved == 1  # Neovim stays on line 6; "Prefers summaries" moved from 4 to 5.
    assert list(MemoryChunk.objects.exclude(path="USER.md").order_by("id").values_list("id", "hash")) == other_files
    # The full-text index follows: the removed fact is gone, the new one is found.
    assert not recall("green tea", mode="keyword").results
    assert recall("wakes up", mode="keyword").results[0].source == "USER.md#L4"


def test_a_deleted_file_is_gone_from_the_index(populated, workspace):
    index_workspace()
    (workspace / "bank" / "world.md").unlink()
    report = index_workspace()
    assert report.files_removed == 1 and report.chunks_removed == 1
    assert not MemoryIndexFile.objects.filter(path="bank/world.md").exists()
    assert not MemoryChunk.objects.filter(path="bank/world.md").exists()
    assert not recall("office closes", mode="keyword").results


def test_a_named_file_is_hashed_even_when_size_and_mtime_look_unchanged(populated, workspace):
    index_workspace()
    path = workspace / "MEMORY.md"
    stat = path.stat()
    path.write_text("# Memory\n\n- The project is called Reflektion.\n")  # Same size.
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert index_workspace().files_indexed == 0  # The stat fast path trusts size and mtime ...
    assert index_workspace(paths=["MEMORY.md"]).files_indexed == 1  # ... a caller naming the file does not.
    assert recall("Reflektion", mode="keyword").results[0].path == "MEMORY.md"


def test_paths_limit_the_run_and_a_missing_named_file_is_removed(populated, workspace):
    index_workspace()
    (workspace / "USER.md").unlink()
    populated("MEMORY.md", "# Memory\n\n- Changed.\n")
    report = index_workspace(paths=["USER.md", "../etc/passwd", "notes.txt"])
    assert report.files_removed == 1
    assert not MemoryChunk.objects.filter(path="USER.md").exists()
    assert MemoryChunk.objects.filter(path="MEMORY.md", text="- The project is called Reflection.").exists()


def test_rebuild_reindexes_everything_and_keeps_hit_counts(populated):
    index_workspace()
    chunk = MemoryChunk.objects.get(text="- Uses Neovim with a dark theme.")
    record_hits([chunk.id, chunk.id])
    record_hits([chunk.id])
    report = index_workspace(rebuild=True)
    assert report.files_indexed == 5
    rebuilt = MemoryChunk.objects.get(text="- Uses Neovim with a dark theme.")
    assert rebuilt.id != chunk.id
    assert rebuilt.hits == 2 and rebuilt.timestamp == chunk.timestamp


def test_changed_chunk_settings_rechunk_on_the_next_run(populated, settings):
    index_workspace()
    settings.RECALL_CHUNK_TOKENS = 64
    report = index_workspace()
    assert report.files_indexed == 5
    assert index_workspace().files_indexed == 0


def test_an_oversized_file_is_skipped_with_a_warning(populated, settings):
    settings.RECALL_MAX_FILE_BYTES = 100
    report = index_workspace()
    assert "memory/2026-02-03.md" in report.files_too_large
    assert not MemoryChunk.objects.filter(path="memory/2026-02-03.md").exists()


def test_progress_is_reported_per_file(populated):
    calls: list[tuple[int, int, str]] = []
    index_workspace(progress=lambda done, total, path: calls.append((done, total, path)))
    assert [c[0] for c in calls] == [1, 2, 3, 4, 5] and {c[1] for c in calls} == {5}
    assert calls[0][2] == "MEMORY.md"


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite triggers")
def test_missing_fts_triggers_are_recreated_and_the_fts_table_rebuilt(populated):
    index_workspace()
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER memory_index_chunks_fts_ai")
    assert ensure_search_schema() is True
    populated("MEMORY.md", "# Memory\n\n- Rebuilt after a table copy.\n")
    index_workspace()
    assert recall("rebuilt table copy", mode="keyword").results[0].path == "MEMORY.md"
    assert ensure_search_schema() is False


def test_a_guardian_write_enqueues_a_reindex_of_that_file(write, sent_tasks, django_capture_on_commit_callbacks):
    queued = sent_tasks.to("guardian_app.tasks.run_memory_index")
    with django_capture_on_commit_callbacks(execute=True):
        audit = write("Prefers oat milk in coffee.", file="USER.md")
    assert audit.is_written
    assert queued == [("USER.md",)]


def test_a_burst_of_writes_asks_once_and_again_after_the_task_starts(
    write, sent_tasks, django_capture_on_commit_callbacks
):
    """One re-index task for a burst of writes to a file, not one a write (each was a message's fsync with the file's
    lock held); the task clears the mark before it reads the file, so a write after that asks again."""
    queued = sent_tasks.to("guardian_app.tasks.run_memory_index")
    with django_capture_on_commit_callbacks(execute=True):
        assert write("Prefers oat milk in coffee.", file="USER.md").is_written
    with django_capture_on_commit_callbacks(execute=True):
        assert write("Lives in Lisbon.", file="USER.md").is_written
    with django_capture_on_commit_callbacks(execute=True):
        assert write("The deploy script is make ship.", file="TOOLS.md").is_written
    assert queued == [("USER.md",), ("TOOLS.md",)]
    run_memory_index("USER.md")
    with django_capture_on_commit_callbacks(execute=True):
        assert write("Has a cat named Miso.", file="USER.md").is_written
    assert queued == [("USER.md",), ("TOOLS.md",), ("USER.md",)]
    answer = recall("Lisbon", mode="keyword")
    assert answer.results and answer.results[0].path == "USER.md"


def test_a_failed_ask_leaves_no_mark(sent_tasks, caplog):
    queued = sent_tasks.to("guardian_app.tasks.run_memory_index")
    sent_tasks.error = ConnectionError("broker down")
    assert index_module.enqueue_index("USER.md") is False
    sent_tasks.error = None
    assert index_module.enqueue_index("USER.md") is True
    assert queued == [("USER.md",)]


def test_the_reindex_task_indexes_the_written_fact(write, sent_tasks, django_capture_on_commit_callbacks):
    sent_tasks.run_now = True
    with django_capture_on_commit_callbacks(execute=True):
        write("Prefers oat milk in coffee.", file="USER.md")
    answer = recall("oat milk", mode="keyword")
    assert answer.results and answer.results[0].path == "USER.md"
    assert "oat milk" in answer.results[0].content


def test_a_dead_broker_is_logged_not_raised(sent_tasks, caplog):
    sent_tasks.error = ConnectionError("broker down")
    index_module.enqueue_index("USER.md")
    assert "could not enqueue" in caplog.text


def test_the_index_command_reports_and_rebuilds(populated):
    out = io.StringIO()
    call_command("memory", "index", "--no-progress", stdout=out)
    assert "5 file(s): 5 indexed" in out.getvalue()
    out = io.StringIO()
    call_command("memory", "index", "--rebuild", "--json", stdout=out, stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert report["files_indexed"] == 5 and report["status"]["chunks"] == MemoryChunk.objects.count()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_index_command_draws_a_progress_bar_on_a_terminal_only(populated):
    err = _Terminal()
    call_command("memory", "index", "--rebuild", stdout=io.StringIO(), stderr=err)
    assert "indexing" in err.getvalue()
    piped = io.StringIO()
    call_command("memory", "index", "--rebuild", stdout=io.StringIO(), stderr=piped)
    assert "indexing" not in piped.getvalue()
