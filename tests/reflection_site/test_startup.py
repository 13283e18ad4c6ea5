"""What settings.py does on disk as it loads (reflection_site.startup): modes, the .gitignore, the secret key, the
SQLite file and its PRAGMAs, the embedded broker's folders, the CSP's style hashes."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from reflection_site.startup import (
    filesystem_broker_options,
    ignored_by_git,
    inline_style_hashes,
    owner_only,
    prepare_data_dir,
    prepare_sqlite_file,
    secret_key,
    sqlite_options,
)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_owner_only_tightens_what_is_ours_and_skips_what_is_absent(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    owner_only(folder, 0o700)
    owner_only(tmp_path / "missing", 0o600)
    assert mode(folder) == 0o700 and not (tmp_path / "missing").exists()


def test_the_gitignore_is_written_once_and_kept(tmp_path: Path) -> None:
    ignored_by_git(tmp_path)
    assert (tmp_path / ".gitignore").read_text().splitlines()[-1] == "*"
    (tmp_path / ".gitignore").write_text("# edited\n*\n")
    ignored_by_git(tmp_path)
    assert (tmp_path / ".gitignore").read_text() == "# edited\n*\n"


def test_the_data_dir_is_made_owner_only_with_its_gitignore(tmp_path: Path) -> None:
    data = tmp_path / "ws" / ".openclaw-reflection"
    prepare_data_dir(data)
    assert mode(data) == 0o700 and (data / ".gitignore").is_file()


def test_the_secret_key_is_generated_once_mode_600(tmp_path: Path) -> None:
    path = tmp_path / "secret_key"
    key = secret_key(path)
    assert len(key) > 50 and mode(path) == 0o600
    assert secret_key(path) == key


def test_the_sqlite_file_is_created_600_and_its_companions_tightened(tmp_path: Path) -> None:
    db = tmp_path / "reflection.db"
    (tmp_path / "reflection.db-wal").write_text("")
    (tmp_path / "reflection.db-wal").chmod(0o644)
    prepare_sqlite_file(db)
    assert mode(db) == 0o600 and mode(tmp_path / "reflection.db-wal") == 0o600
    prepare_sqlite_file(Path(":memory:"))
    prepare_sqlite_file(tmp_path / "absent" / "x.db")
    assert not (tmp_path / "absent").exists()


def test_sqlite_options_run_the_seed_pragmas_auto_vacuum_first() -> None:
    options = sqlite_options(
        auto_vacuum=True,
        wal_mode=False,
        synchronous="FULL",
        busy_timeout_ms=5000,
        cache_size_pages=-2000,
        mmap_size_mb=2,
    )
    assert options["transaction_mode"] == "IMMEDIATE" and options["timeout"] == 5
    assert options["init_command"].split(";") == [
        "PRAGMA auto_vacuum=INCREMENTAL",
        "PRAGMA journal_mode=DELETE",
        "PRAGMA synchronous=FULL",
        "PRAGMA busy_timeout=5000",
        "PRAGMA cache_size=-2000",
        f"PRAGMA mmap_size={2 * 1024 * 1024}",
        "PRAGMA foreign_keys=ON",
    ]


def test_the_embedded_broker_gets_its_folders(tmp_path: Path) -> None:
    options = filesystem_broker_options(
        tmp_path / "broker", fsync=False, polling_interval=0.5, busy_polling_interval=0.1
    )
    assert sorted(p.name for p in (tmp_path / "broker").iterdir()) == ["bad", "control", "processed", "queue", "tmp"]
    assert options["data_folder_in"] == options["data_folder_out"] == str(tmp_path / "broker" / "queue")
    assert (options["fsync"], options["polling_interval"], options["busy_polling_interval"]) == (False, 0.5, 0.1)


def test_inline_style_hashes_are_sha256_of_each_style_element() -> None:
    import django

    template = "contrib/admin/templates/admin/change_list.html"
    text = (Path(django.__file__).parent / template).read_text(encoding="utf-8")
    body = text.split("<style>", 1)[1].split("</style>", 1)[0]
    expected = f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'"
    assert inline_style_hashes(template)[0] == expected


@pytest.mark.django_db
def test_django_runs_on_the_sqlite_library_that_loads_sqlite_vec():
    """One SQLite library per process: the recall index's sqlite-vec connections and Django's share a file, and
    two libraries on one file drop each other's locks (reflection_site.startup.use_one_sqlite_library)."""
    import sys

    from django.conf import settings
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL: no SQLite file is shared")
    connection.ensure_connection()
    assert type(connection.connection).__module__ == "pysqlite3.dbapi2"
    assert sys.modules["sqlite3"] is sys.modules["pysqlite3"]
    assert connection.connection.execute("SELECT sqlite_version()").fetchone()[0] == settings.SQLITE_VERSION


def test_without_the_wheel_the_stdlib_library_stays(monkeypatch):
    import sys

    from reflection_site.startup import use_one_sqlite_library

    stdlib = SimpleNamespace(sqlite_version="3.40.1")  # Stands for the stdlib's module.
    monkeypatch.setitem(sys.modules, "pysqlite3", None)  # An import of it fails, as without the wheel.
    monkeypatch.setitem(sys.modules, "pysqlite3.dbapi2", None)
    monkeypatch.setitem(sys.modules, "sqlite3", stdlib)
    assert use_one_sqlite_library() == "3.40.1"
    assert sys.modules["sqlite3"] is stdlib
