"""Issue 18, item 7: the data dir and what it holds are the owner's only. Exports (dataset and conversation) and
``reflection.db`` with its WAL files were created 0644 under the usual umask 022; they are 0600 now, the data dir
and the exports folder 0700, and files and folders left looser by an older release are tightened on start.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.utils import timezone

from dataset_app.exporters.conversations import export_conversations
from dataset_app.exporters.files import export_dir
from dataset_app.exports import create_export, run_export
from tests.dataset_app.factories import TurnFactory
from tests.services import ROOT

pytestmark = pytest.mark.django_db


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most systems give (022): what made these files world-readable."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_dataset_export_files_are_0600_in_a_0700_folder(dataset):
    row = create_export(export_format="openai", name="modes")
    done = run_export(row.id)
    assert done is not None and done.status == "completed", done.error if done else None
    files = [Path(f["path"]) for f in done.files]
    assert files and all(mode(path) == 0o600 for path in files), {str(p): oct(mode(p)) for p in files}
    assert mode(export_dir()) == 0o700


def test_an_export_file_left_0644_is_tightened_when_rewritten(dataset):
    row = create_export(export_format="raw", name="old-file")
    done = run_export(row.id)
    path = Path(done.files[0]["path"])
    path.chmod(0o644)
    part = path.with_name(path.name + ".part")
    part.write_text("left by a crash")
    part.chmod(0o644)
    again = run_export(create_export(export_format="raw", name="old-file").id)
    assert again is not None and mode(Path(again.files[0]["path"])) == 0o600


def test_the_conversation_export_is_0600():
    day = dt.date(2026, 3, 11)
    TurnFactory(created_at=timezone.make_aware(dt.datetime(2026, 3, 11, 9)))
    result = export_conversations(day)
    assert result.turns == 1 and mode(result.path) == 0o600
    assert mode(result.path.parent) == 0o700


def _settings_run(workspace: Path, *code: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workspace.parent),
        "WORKSPACE_DIR": str(workspace),
        "DJANGO_SETTINGS_MODULE": "reflection_site.settings",
    }
    script = "import os; os.umask(0o022)\nimport django; django.setup()\n" + "\n".join(code)
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_new_data_dir_and_database_are_owner_only(tmp_path):
    workspace = tmp_path / "fresh"
    _settings_run(
        workspace,
        "from django.db import connection",
        "with connection.cursor() as c: c.execute('CREATE TABLE t (x)'); c.execute('INSERT INTO t VALUES (1)')",
    )
    data = workspace / ".openclaw-reflection"
    assert mode(data) == 0o700
    db = data / "reflection.db"
    assert mode(db) == 0o600
    for companion in (data / "reflection.db-wal", data / "reflection.db-shm"):
        assert not companion.exists() or mode(companion) == 0o600
    assert mode(data / "secret_key") == 0o600


def test_an_older_data_dir_and_database_are_tightened_on_start(tmp_path):
    workspace = tmp_path / "old"
    data = workspace / ".openclaw-reflection"
    data.mkdir(parents=True)
    data.chmod(0o755)
    for name in ("reflection.db", "reflection.db-wal", "reflection.db-shm"):
        (data / name).write_bytes(b"")
        (data / name).chmod(0o644)
    _settings_run(workspace)
    assert mode(data) == 0o700
    assert all(mode(data / name) == 0o600 for name in ("reflection.db", "reflection.db-wal", "reflection.db-shm"))


def test_memory_files_keep_the_operators_umask(workspace):
    """Only Reflection's own data is tightened: a new memory file is still 0644 under umask 022."""
    from guardian_app.write import workspace as ws

    ws.write_file("USER.md", "# User\n")
    assert mode(workspace / "USER.md") == 0o644
