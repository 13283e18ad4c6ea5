"""Issue 18, item 1: a symbolic link, a FIFO or a hard link in place of a memory file is never read or written
through. For each of the five files and each kind of stand-in (a link to /etc/passwd, a link to the data dir's
secret_key, a FIFO):

- ``GET /api/v1/guardian/files/<name>`` and its ``/history`` answer 409 ``unsafe_file`` at once, without the
  target's content (and without hanging on the FIFO);
- the next write fails with a reason that says what is there, and the target's content is nowhere: not in the
  file, not in a snapshot or version, not in the recall index; the target itself is unchanged;
- a drift finding is recorded on the file's row (the admin's workspace files, ``guardian drift``) and closed
  once a regular file is back, after which writes resume.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from guardian_app.errors import UnknownFile, UnsafeFile
from guardian_app.models import FileSnapshot, FileVersion, MemoryChunk, WorkspaceFile, WriteGuardianAudit
from guardian_app.recall.index import index_workspace
from guardian_app.write import history
from guardian_app.write import workspace as ws
from sessions_app.models import FILE_FOR_DECISION

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

FILES = ["MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "TOOLS.md"]
DECISION_FOR = {name: decision for decision, name in FILE_FOR_DECISION.items()}
SECRET = "s3cr3t-key-that-must-never-leave-the-data-dir-0123456789"
PASSWD = Path("/etc/passwd")


def _secret_key(workspace: Path) -> Path:
    key = workspace / ".openclaw-reflection" / "secret_key"
    key.write_text(SECRET)
    key.chmod(0o600)
    return key


def _stand_in(kind: str, path: Path, workspace: Path) -> tuple[str, str | None]:
    """Put ``kind`` where the memory file ``path`` should be; returns (what the refusal says, target text)."""
    if kind == "link_to_passwd":
        path.symlink_to(PASSWD)
        return "a symbolic link", PASSWD.read_text().splitlines()[0]
    if kind == "link_to_secret_key":
        path.symlink_to(_secret_key(workspace))
        return "a symbolic link", SECRET
    if kind == "fifo":
        os.mkfifo(path)
        return "a FIFO", None
    raise AssertionError(kind)


KINDS = ["link_to_passwd", "link_to_secret_key", "fifo"]


def _nowhere(text: str | None) -> None:
    """The target's text is in no snapshot, no version's diff and no recall chunk."""
    if text is None:
        return
    assert not FileSnapshot.objects.filter(content__contains=text).exists()
    assert not FileVersion.objects.filter(diff__contains=text).exists()
    assert not MemoryChunk.objects.filter(text__contains=text).exists()
    assert not WriteGuardianAudit.objects.filter(diff__contains=text).exists()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", FILES)
def test_the_api_refuses_to_serve_a_stand_in_and_records_a_drift_finding(api_client, workspace, name, kind):
    found, target = _stand_in(kind, workspace / name, workspace)

    response = api_client.get(reverse("api:get_memory_file", args=[name]))
    assert response.status_code == HTTPStatus.CONFLICT, response.content
    error = response.json()["error"]
    assert error["code"] == "unsafe_file" and found in error["message"], error
    if target is not None:
        assert target not in response.content.decode()

    history = api_client.get(reverse("api:file_history", args=[name]))
    assert history.status_code == HTTPStatus.CONFLICT, history.content
    assert history.json()["error"]["code"] == "unsafe_file"
    if target is not None:
        assert target not in history.content.decode()

    row = WorkspaceFile.objects.get(file_name=name)
    assert found in row.unsafe_reason and row.unsafe_since is not None
    assert ws.unsafe_files() == {name: row.unsafe_reason}
    assert not FileVersion.objects.filter(file_name=name).exists()
    _nowhere(target)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", FILES)
def test_the_next_write_fails_with_the_reason_and_copies_nothing(write, workspace, name, kind):
    path = workspace / name
    found, target = _stand_in(kind, path, workspace)
    before = PASSWD.read_bytes()

    audit = write("Prefers green tea in the afternoon.", file=name)

    assert audit.status == WriteGuardianAudit.Status.FAILED
    assert found in audit.reason and "nothing was written" in audit.reason, audit.reason
    assert audit.after_snapshot_id is None and audit.before_snapshot_id is None
    # The stand-in is still there, untouched; so is its target.
    assert path.is_symlink() if kind != "fifo" else path.is_fifo()
    assert PASSWD.read_bytes() == before
    if kind == "link_to_secret_key":
        assert (workspace / ".openclaw-reflection" / "secret_key").read_text() == SECRET
    assert sorted(p.name for p in workspace.iterdir() if p.name.startswith(".")) == [".openclaw-reflection"]

    index_workspace()
    assert not MemoryChunk.objects.filter(path=name).exists()
    assert WorkspaceFile.objects.get(file_name=name).unsafe_reason.startswith(found)
    _nowhere(target)


@pytest.mark.parametrize("kind", KINDS)
def test_the_drift_check_reports_the_finding_and_reads_nothing(workspace, kind):
    found, target = _stand_in(kind, workspace / "SOUL.md", workspace)
    (workspace / "USER.md").write_text("# User\n- Likes tea.\n")

    versions = history.check_drift()

    assert [(v.file_name, v.kind) for v in versions] == [("USER.md", "initial")]
    assert found in ws.unsafe_files()["SOUL.md"]
    err = io.StringIO()
    call_command("guardian", "drift", stdout=io.StringIO(), stderr=err)
    assert "SOUL.md is " + found in err.getvalue()
    _nowhere(target)


def test_the_finding_shows_in_the_admin_and_closes_when_a_regular_file_is_back(admin_client, write, workspace):
    user_md = workspace / "USER.md"
    user_md.symlink_to(PASSWD)
    assert write("Prefers green tea.").status == WriteGuardianAudit.Status.FAILED

    page = admin_client.get(reverse("admin:guardian_app_workspacefile_changelist"))
    assert page.status_code == HTTPStatus.OK
    assert "a symbolic link" in page.content.decode() and "not read or written" in page.content.decode()

    user_md.unlink()
    user_md.write_text("# User\n- Lives in Lisbon.\n")
    assert history.check_drift() and ws.unsafe_files() == {}
    audit = write("Prefers green tea in the afternoon.")
    assert audit.status == WriteGuardianAudit.Status.WRITTEN, audit.reason
    assert "green tea" in user_md.read_text() and not user_md.is_symlink()
    page = admin_client.get(reverse("admin:guardian_app_workspacefile_changelist"))
    assert "not read or written" not in page.content.decode()


def test_a_hard_link_to_the_secret_key_is_refused(api_client, workspace):
    os.link(_secret_key(workspace), workspace / "USER.md")
    response = api_client.get(reverse("api:get_memory_file", args=["USER.md"]))
    assert response.status_code == HTTPStatus.CONFLICT
    assert "hard link" in response.json()["error"]["message"] and SECRET not in response.content.decode()


def test_a_folder_in_place_of_a_file_is_refused(api_client, workspace):
    (workspace / "TOOLS.md").mkdir()
    response = api_client.get(reverse("api:get_memory_file", args=["TOOLS.md"]))
    assert response.status_code == HTTPStatus.CONFLICT
    assert "a folder" in response.json()["error"]["message"]


@pytest.mark.parametrize("kind", KINDS)
def test_write_file_and_remove_file_never_go_through_a_stand_in(workspace, kind):
    """The low-level writer checks too (a link swapped in after the guardian looked)."""
    path = workspace / "MEMORY.md"
    found, _ = _stand_in(kind, path, workspace)
    with pytest.raises(UnsafeFile, match=found):
        ws.write_file("MEMORY.md", "overwritten")
    with pytest.raises(UnsafeFile, match=found):
        ws.remove_file("MEMORY.md")
    assert path.is_symlink() if kind != "fifo" else path.is_fifo()
    assert PASSWD.read_text() != "overwritten"
    assert sorted(p.name for p in workspace.iterdir()) == [".openclaw-reflection", "MEMORY.md"]


def test_a_link_swapped_in_between_the_read_and_the_write_fails_the_audit(write, make_decision, workspace, monkeypatch):
    """The guardian read a regular file; a link takes its place before the write: the audit fails, nothing
    is written through the link, and no write is left pending."""
    user_md = workspace / "USER.md"
    write("Prefers green tea in the afternoon.")
    real_write_file = ws.write_file

    def swap_then_write(name: str, text: str) -> None:
        user_md.unlink()
        user_md.symlink_to(PASSWD)
        real_write_file(name, text)

    monkeypatch.setattr(ws, "write_file", swap_then_write)
    from guardian_app.write.guardian import write_fact

    audit = write_fact(make_decision("UPDATE_USER", "Likes long walks on Sundays."))
    assert audit.status == WriteGuardianAudit.Status.FAILED and "a symbolic link" in audit.reason
    assert user_md.is_symlink()
    assert WorkspaceFile.objects.get(file_name="USER.md").pending_audit_id is None


def test_a_link_in_a_bank_folder_is_not_followed(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "world.md").write_text("outside content")
    (workspace / "bank").symlink_to(outside, target_is_directory=True)
    with pytest.raises(Exception) as exc:  # noqa: PT011 - UnknownFile (path_for) or UnsafeFile (the open).
        ws.read_file("bank/world.md")
    assert "outside content" not in str(exc.value)
    with pytest.raises(Exception):  # noqa: B017, PT011
        ws.write_file("bank/world.md", "new")
    assert (outside / "world.md").read_text() == "outside content"


def test_a_regular_file_reads_and_writes_as_before(workspace, make_decision: Callable):
    (workspace / "USER.md").write_text("# User\n- Likes tea.\n")
    assert ws.read_file("USER.md") == "# User\n- Likes tea.\n"
    ws.write_file("USER.md", "# User\n- Likes coffee.\n")
    assert (workspace / "USER.md").read_text() == "# User\n- Likes coffee.\n"
    assert ws.unsafe_files() == {}


def test_the_openclaw_profile_s_files_are_guarded_too(api_client, workspace, settings, tmp_path):
    """AGENTS.md (the openclaw profile's home of tool facts) and its pages under memory/bank/ are opened the
    same way: a link to /etc/passwd is a 409, and a memory/ folder linked outside the workspace is not entered."""
    settings.WORKSPACE_PROFILE = "openclaw"
    (workspace / "AGENTS.md").symlink_to(PASSWD)
    response = api_client.get(reverse("api:get_memory_file", args=["AGENTS.md"]))
    assert response.status_code == HTTPStatus.CONFLICT, response.content
    assert PASSWD.read_text().splitlines()[0] not in response.content.decode()

    outside = tmp_path / "outside"
    (outside / "bank").mkdir(parents=True)
    (outside / "bank" / "world.md").write_text("outside content")
    (workspace / "memory").symlink_to(outside, target_is_directory=True)
    with pytest.raises((UnsafeFile, UnknownFile)):
        ws.read_file("bank/world.md")
    with pytest.raises((UnsafeFile, UnknownFile)):
        ws.write_file("bank/world.md", "new")
    assert (outside / "bank" / "world.md").read_text() == "outside content"


@pytest.mark.parametrize("kind", KINDS)
def test_the_admin_timeline_of_a_stand_in_shows_the_history_and_not_the_target(admin_client, write, workspace, kind):
    """The file's history is Reflection's own record: it stays readable, with the finding said, never the target."""
    write("Prefers green tea in the afternoon.")
    (workspace / "USER.md").unlink()
    found, target = _stand_in(kind, workspace / "USER.md", workspace)
    page = admin_client.get(reverse("admin:guardian_app_file_history", args=["USER.md"]))
    assert page.status_code == HTTPStatus.OK
    text = page.content.decode()
    assert found in text and "green tea" in text
    if target is not None:
        assert target not in text
