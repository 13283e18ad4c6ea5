"""The seed's SQLite PRAGMAs (storage.sqlite.*) on a new database file, and the incremental vacuum retention runs."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from dataset_app import retention
from tests.dataset_app.factories import SessionFactory, TurnFactory

ROOT = Path(__file__).resolve().parents[2]


def migrate_fresh(tmp_path: Path, **env: str) -> Path:
    workspace = tmp_path / "fresh"
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    environment.update(WORKSPACE_DIR=str(workspace), **env)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=environment,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return workspace / ".openclaw-reflection" / "reflection.db"


def pragma(path: Path, name: str) -> object:
    with sqlite3.connect(path) as db:
        return db.execute(f"PRAGMA {name}").fetchone()[0]


@pytest.mark.parametrize(("setting", "mode"), [("true", 2), ("false", 0)])
def test_a_new_database_file_gets_the_auto_vacuum_mode_and_wal(tmp_path, setting, mode):
    """auto_vacuum takes effect only before the file's first page is written, which switching to WAL does."""
    db = migrate_fresh(tmp_path, SQLITE_AUTO_VACUUM=setting)

    assert pragma(db, "auto_vacuum") == mode  # 2 = INCREMENTAL, 0 = NONE
    assert pragma(db, "journal_mode") == "wal"


@pytest.mark.django_db
def test_retention_gives_the_deleted_sessions_pages_back(settings):
    """The suite's SQLite database is created with the same PRAGMAs (auto_vacuum=INCREMENTAL)."""
    with connection.cursor() as cursor:
        assert cursor.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    old = SessionFactory()
    for n in range(1, 41):
        TurnFactory(session=old, turn_number=n, user_message_content="x" * 4000)
    type(old).objects.filter(pk=old.pk).update(last_activity_at=old.last_activity_at.replace(year=2020))

    result = retention.apply_retention(days=30)

    assert result.sessions_deleted == 1
    assert result.pages_vacuumed > 0
    with connection.cursor() as cursor:
        assert cursor.execute("PRAGMA freelist_count").fetchone()[0] == 0


@pytest.mark.django_db
def test_the_vacuum_is_a_no_op_without_free_pages():
    assert retention.incremental_vacuum() == 0
