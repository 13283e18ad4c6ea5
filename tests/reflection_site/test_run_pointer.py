"""``var/run.env``: what ``make run`` leaves for ``manage.py`` in another terminal (issue 16)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reflection_site.startup import use_the_running_instance


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name in ("WORKSPACE_DIR", "DATABASE_URL", "REDIS_URL"):
        monkeypatch.setenv(name, "")  # Recorded, so that what the test sets is undone afterwards too.
        monkeypatch.delenv(name)
    return os.environ  # type: ignore[return-value]


def _pointer(tmp_path: Path, pid: int, **values: str) -> Path:
    lines = ["# Written by make run", f"REFLECTION_RUN_PID={pid}", *(f"{k}={v}" for k, v in values.items())]
    path = tmp_path / "run.env"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_live_run_lends_its_data_and_the_cli_says_so(tmp_path, environ, capsys, monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://mine")  # What the terminal sets wins.
    pointer = _pointer(
        tmp_path, os.getpid(), WORKSPACE_DIR="/srv/ws", DATABASE_URL="sqlite:///x", REDIS_URL="redis://run"
    )
    use_the_running_instance(pointer)
    assert (environ["WORKSPACE_DIR"], environ["DATABASE_URL"], environ["REDIS_URL"]) == (
        "/srv/ws",
        "sqlite:///x",
        "redis://mine",
    )
    assert capsys.readouterr().err == f"Using the data of the running `make run`: /srv/ws ({pointer})\n"


def test_a_pointer_left_by_a_dead_run_or_unreadable_is_ignored(tmp_path, environ, capsys):
    dead = subprocess.Popen(["true"])
    dead.wait()
    for pointer in (
        _pointer(tmp_path, dead.pid, WORKSPACE_DIR="/srv/dead"),
        tmp_path / "missing.env",
    ):
        use_the_running_instance(pointer)
    (tmp_path / "garbled.env").write_text("REFLECTION_RUN_PID=abc\nWORKSPACE_DIR=/srv/x\n")
    use_the_running_instance(tmp_path / "garbled.env")
    assert "WORKSPACE_DIR" not in environ
    assert capsys.readouterr().err == ""
