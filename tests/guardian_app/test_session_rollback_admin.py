# ruff: noqa: F811  (the guardian tests' fixtures, imported below, are parameters of the tests)
"""Issue 23: a session's admin page offers "Roll back this session" behind a dry-run confirmation that shows each
file's exact diff or the conflicts; operators only (guardian_app/admin/sessions.py)."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

from guardian_app.admin.rendering import diff_html
from guardian_app.models import Rollback, WriteGuardianAudit
from guardian_app.write.diffs import unified_diff
from tests.guardian_app.conftest import make_decision, offline_guardian, write  # noqa: F401, F811  (fixtures)
from tests.guardian_app.test_guardian_admin import annotator, operator  # noqa: F401  (fixtures: a group's member)

pytestmark = pytest.mark.django_db
SESSION = "channel:test:alice"
Status = WriteGuardianAudit.Status


def _change_url(session_id: str = SESSION) -> str:
    return reverse("admin:sessions_app_conversationsession_change", args=[quote(session_id)])


def _rollback_url(session_id: str = SESSION) -> str:
    return reverse("admin:sessions_app_conversationsession_rollback", args=[quote(session_id)])


def _seen(page: str) -> str:
    return page.split('name="seen" value="')[1].split('"')[0]


def test_the_rollback_shows_each_files_exact_diff_and_then_does_it(operator, write, workspace: Path):
    user_md, tools_md = workspace / "USER.md", workspace / "TOOLS.md"
    user_md.write_text("# User\n\n- Lives in Lisbon.\n")
    write("Prefers green tea in the afternoon.")
    write("Uses vim for every edit.", file="TOOLS.md")
    write("Likes long walks on Sundays.")
    write("Other session's fact.", session_id="channel:test:bob")
    before_user, before_tools = user_md.read_text(), tools_md.read_text()

    page = operator.get(_change_url()).content.decode()
    assert 'id="rollback-session-link"' in page
    confirm = operator.get(_rollback_url())
    text = confirm.content.decode()
    assert confirm.status_code == HTTPStatus.OK
    assert "Dry run: 3 of 3 write(s) can be rolled back cleanly." in text
    user_part = text.split('data-file="USER.md"')[1]
    assert '<span class="del">-- Prefers green tea in the afternoon.</span>' in user_part
    assert '<span class="del">-- Likes long walks on Sundays.</span>' in user_part
    assert "TOOLS.md will be removed (this session's writes created it)" in text
    assert user_md.read_text() == before_user and not Rollback.objects.exists()  # The dry run wrote nothing.

    missing_reason = operator.post(_rollback_url(), {"seen": _seen(text)})
    assert missing_reason.status_code == HTTPStatus.OK and not Rollback.objects.exists()
    assert "This field is required" in missing_reason.content.decode()

    done = operator.post(_rollback_url(), {"reason": "wrong session", "seen": _seen(text)})
    assert done.status_code == HTTPStatus.FOUND and done["Location"] == _change_url()
    [message] = [str(m) for m in done.wsgi_request._messages]
    assert message.startswith("Rolled back 3 write(s):")
    # What was shown is what happened, file by file (TOOLS.md was created by the session's write: removed).
    assert "Other session's fact." in user_md.read_text() and "green tea" not in user_md.read_text()
    assert not tools_md.exists() and before_tools
    assert str(diff_html(unified_diff(before_user, user_md.read_text(), "USER.md"))) in text
    assert str(diff_html(unified_diff(before_tools, None, "TOOLS.md"))) in text
    assert set(WriteGuardianAudit.objects.filter(session_id=SESSION).values_list("status", flat=True)) == {
        Status.ROLLED_BACK
    }
    assert WriteGuardianAudit.objects.get(session_id="channel:test:bob").status == Status.WRITTEN


def test_a_conflict_is_shown_first_and_stops_the_whole_rollback(operator, write, workspace: Path):
    user_md = workspace / "USER.md"
    user_md.write_text("# User\n\n- Lives in Lisbon.\n")
    edited_audit = write("Prefers green tea in the afternoon.")
    clean_audit = write("Likes long walks on Sundays.")
    user_md.write_text(user_md.read_text().replace("green tea", "jasmine tea"))  # A hand edit over the write.
    edited = user_md.read_text()

    text = operator.get(_rollback_url()).content.decode()
    assert 'id="session-conflicts"' in text and "Dry run: 1 of 2 write(s) can be rolled back cleanly." in text
    conflict_row = text.split('class="rollback-conflict"')[1].split("</tr>")[0]
    assert edited_audit.id in conflict_row and "hand edits:" in conflict_row
    assert clean_audit.id in text.split('class="rollback-clean"')[1].split("</tr>")[0]
    assert 'name="partial"' in text
    assert '<span class="del">-- Likes long walks on Sundays.</span>' in text.split('data-file="USER.md"')[1]

    refused = operator.post(_rollback_url(), {"reason": "wrong", "seen": _seen(text)})
    assert refused.status_code == HTTPStatus.CONFLICT
    assert "nothing was changed" in refused.content.decode()
    assert user_md.read_text() == edited and not Rollback.objects.exists()

    partial = operator.post(_rollback_url(), {"reason": "wrong", "seen": _seen(text), "partial": "on"})
    assert partial.status_code == HTTPStatus.FOUND
    assert user_md.read_text() == edited.replace("- Likes long walks on Sundays.\n", "")
    clean_audit.refresh_from_db()
    edited_audit.refresh_from_db()
    assert (clean_audit.status, edited_audit.status) == (Status.ROLLED_BACK, Status.WRITTEN)


def test_a_confirmation_of_an_older_dry_run_shows_the_new_one(operator, write, workspace: Path):
    write("Prefers green tea in the afternoon.")
    text = operator.get(_rollback_url()).content.decode()
    write("Likes long walks on Sundays.")  # A new write of the session since the page was shown.
    again = operator.post(_rollback_url(), {"reason": "wrong", "seen": _seen(text)})
    assert again.status_code == HTTPStatus.OK
    body = again.content.decode()
    assert "changed since this page was shown" in body and "Likes long walks" in body
    assert not Rollback.objects.exists()
    assert _seen(body) != _seen(text)


def test_annotators_see_no_rollback_and_get_403(annotator, write):
    write("Prefers green tea in the afternoon.")
    page = annotator.get(_change_url())
    assert page.status_code == HTTPStatus.OK
    text = page.content.decode()
    assert 'class="turn-row"' in text and "Roll back this session" not in text
    assert annotator.get(_rollback_url()).status_code == HTTPStatus.FORBIDDEN
    assert annotator.post(_rollback_url(), {"reason": "x", "seen": "x"}).status_code == HTTPStatus.FORBIDDEN
    assert not Rollback.objects.exists()


def test_a_session_without_writes_says_so(operator, make_decision: Callable):
    make_decision("NO_WRITE", None, session_id=SESSION)
    text = operator.get(_rollback_url()).content.decode()
    assert "has no written audits to roll back; nothing changed." in text
    assert 'id="session-rollback-form"' not in text


def test_with_rollback_disabled_the_page_says_so_and_changes_nothing(operator, write, settings):
    audit = write("Prefers green tea in the afternoon.")
    settings.WRITE_GUARDIAN_ENABLE_ROLLBACK = False
    response = operator.get(_rollback_url())
    assert response.status_code == HTTPStatus.FOUND and response["Location"] == _change_url()
    assert [str(m) for m in response.wsgi_request._messages] == [
        "Rollback is disabled (WRITE_GUARDIAN_ENABLE_ROLLBACK=false)."
    ]
    audit.refresh_from_db()
    assert audit.status == Status.WRITTEN and not Rollback.objects.exists()
