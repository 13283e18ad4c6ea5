"""Issue 17 (and 18 item 4, 24): every rollback interface reports what the rollback did to the file, measured
by diffing it, and the admin's confirmation page shows the dry run's exact diff or its conflict first."""

from __future__ import annotations

import getpass
import json
from http import HTTPStatus
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from guardian_app.models import Rollback, WriteGuardianAudit
from guardian_app.write.diffs import content_hash, unified_diff

pytestmark = pytest.mark.django_db
Status = WriteGuardianAudit.Status


@pytest.fixture
def operator() -> Client:
    user = User.objects.create_user(username="olga", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name="operator"))
    client = Client()
    client.force_login(user)
    return client


def run(*args: str) -> str:
    out = StringIO()
    call_command("guardian", *args, stdout=out)
    return out.getvalue()


def _rollback_url(audit: WriteGuardianAudit) -> str:
    return reverse("admin:guardian_app_writeguardianaudit_rollback", args=[audit.id])


# --- Admin -------------------------------------------------------------------------------------------
def test_the_confirmation_page_shows_the_exact_diff_the_rollback_then_makes(operator, write, user_md):
    first = write("Prefers green tea in the afternoon.")
    write("Likes long walks on Sundays.")  # The file changed since: a merge, not a restore.
    before = user_md.read_text()
    page = operator.get(_rollback_url(first)).content.decode()
    assert "only this write's lines will be reverted" in page
    expected = unified_diff(before, before.replace("- Prefers green tea in the afternoon.\n", ""), "USER.md")
    assert "1 line(s) removed, 0 restored" in page
    assert '<span class="del">-- Prefers green tea in the afternoon.</span>' in page.split('id="rollback-diff"')[1]
    assert 'name="force"' not in page

    done = operator.post(_rollback_url(first), {"reason": "wrong", "seen_hash": content_hash(before)})
    assert done.status_code == HTTPStatus.FOUND
    assert unified_diff(before, user_md.read_text(), "USER.md") == expected  # What was shown is what happened.
    messages = [str(m) for m in done.wsgi_request._messages]
    assert messages == [f"Rolled back {first.id} (reverted only this write). 1 line(s) removed, 0 restored."]


def test_a_conflict_is_shown_before_submit_with_the_forced_rollbacks_own_diff(operator, write, user_md):
    """Issue 17 item 3: the page said "later changes are kept" for an audit whose rollback then conflicted."""
    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    audit = write("Prefers green tea in the afternoon.")
    user_md.write_text(user_md.read_text().replace("green tea", "jasmine tea"))
    edited = user_md.read_text()

    page = operator.get(_rollback_url(audit))
    text = page.content.decode()
    assert page.status_code == HTTPStatus.OK
    assert 'id="rollback-conflict"' in text and "later changes are kept" not in text
    assert 'id="rollback-preview"' not in text
    force_part = text.split('id="force-preview"')[1]
    assert '<span class="del">-- Prefers jasmine tea in the afternoon.</span>' in force_part
    assert 'name="force"' in text and f'value="{content_hash(edited)}"' in text
    assert user_md.read_text() == edited and not Rollback.objects.exists()  # The dry run wrote nothing.

    # Submitted without force: still the conflict, nothing changed.
    plain = operator.post(_rollback_url(audit), {"reason": "wrong", "seen_hash": content_hash(edited)})
    assert plain.status_code == HTTPStatus.CONFLICT and user_md.read_text() == edited


def test_a_confirmation_of_an_older_file_shows_the_new_dry_run_instead(operator, write, user_md):
    audit = write("Prefers green tea in the afternoon.")
    seen = content_hash(user_md.read_text())
    user_md.write_text(user_md.read_text() + "- Typed by hand.\n")
    response = operator.post(_rollback_url(audit), {"reason": "wrong", "seen_hash": seen})
    assert response.status_code == HTTPStatus.OK
    text = response.content.decode()
    assert "The file changed since this page was shown" in text
    assert f'value="{content_hash(user_md.read_text())}"' in text
    assert not Rollback.objects.exists() and "green tea" in user_md.read_text()


def test_the_audit_history_button_answers_200(operator, admin_client, written_audit):
    """Issue 18 item 4: the file timeline view shadowed Django's history_view(request, object_id): a 500."""
    url = reverse("admin:guardian_app_writeguardianaudit_history", args=[written_audit.id])
    change = admin_client.get(reverse("admin:guardian_app_writeguardianaudit_change", args=[written_audit.id]))
    assert url in change.content.decode()
    assert admin_client.get(url).status_code == HTTPStatus.OK
    assert operator.get(url).status_code == HTTPStatus.OK
    timeline = reverse("admin:guardian_app_file_history", args=["USER.md"])
    assert operator.get(timeline).status_code == HTTPStatus.OK


# --- API ---------------------------------------------------------------------------------------------
def test_the_api_reports_the_lines_removed_and_restored(api_client, write, user_md):
    first = write("Prefers green tea in the afternoon.")
    write("Likes long walks on Sundays.")
    before = user_md.read_text()
    preview = api_client.post(f"/api/v1/guardian/audits/{first.id}/rollback/preview", {})
    assert preview.status_code == HTTPStatus.OK, preview.content
    shown = preview.json()
    assert shown["clean"] and shown["lines_removed"] == ["- Prefers green tea in the afternoon."]
    assert user_md.read_text() == before

    response = api_client.post(
        f"/api/v1/guardian/audits/{first.id}/rollback", {"reason": "wrong", "expected_hash": shown["content_hash"]}
    )
    assert response.status_code == HTTPStatus.OK, response.content
    body = response.json()
    assert body["changed"] is True and body["lines_removed"] == ["- Prefers green tea in the afternoon."]
    assert body["lines_restored"] == [] and body["diff"] == unified_diff(before, user_md.read_text(), "USER.md")
    assert body["diff"] == shown["diff"]


def test_the_api_refuses_a_rollback_of_a_file_changed_since_its_preview(api_client, written_audit, user_md):
    shown = api_client.post(f"/api/v1/guardian/audits/{written_audit.id}/rollback/preview", {}).json()
    user_md.write_text(user_md.read_text() + "- Typed by hand.\n")
    response = api_client.post(
        f"/api/v1/guardian/audits/{written_audit.id}/rollback",
        {"reason": "wrong", "expected_hash": shown["content_hash"]},
    )
    assert response.status_code == HTTPStatus.CONFLICT
    assert response.json()["error"]["code"] == "rollback_stale" and not Rollback.objects.exists()


def test_a_preview_of_a_conflict_says_so_and_force_previews_its_own_diff(api_client, write, user_md):
    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    audit = write("Prefers green tea in the afternoon.")
    user_md.write_text(user_md.read_text().replace("green tea", "jasmine tea"))
    url = f"/api/v1/guardian/audits/{audit.id}/rollback/preview"
    plain = api_client.post(url, {}).json()
    assert plain["clean"] is False and plain["changed"] is False and plain["conflict"]["hand_edits"]
    forced = api_client.post(url, {"force": True}).json()
    assert forced["lines_removed"] == ["- Prefers jasmine tea in the afternoon."] and forced["conflict"] is None


def test_a_session_rollback_that_changed_nothing_says_so(api_client, write, user_md):
    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    a = write("Prefers green tea in the afternoon.", session_id="s1")
    user_md.write_text(user_md.read_text().replace("- Prefers green tea in the afternoon.\n", ""))  # By hand.
    response = api_client.post("/api/v1/guardian/sessions/s1/rollback", {"reason": "bad"})
    assert response.status_code == HTTPStatus.OK, response.content
    body = response.json()
    assert body["rolled_back"] == 1 and body["changed"] is False
    assert body["summary"] == "Marked 1 write(s) rolled back; their lines were already gone, so no file changed."
    assert body["items"][0]["audit_id"] == a.id and body["items"][0]["lines_removed"] == []


# --- CLI ---------------------------------------------------------------------------------------------
def test_the_seeds_rollback_example_runs_as_written(written_audit, user_md):
    """Issue 24: `guardian rollback <audit-id>` (seed 000) needs no --reason."""
    out = run("rollback", written_audit.id)
    assert f"Rolled back {written_audit.id}" in out and "removed:  - Prefers green tea in the afternoon." in out
    rollback = Rollback.objects.get(audit=written_audit)
    assert rollback.reason == f"rolled back from the CLI by {getpass.getuser()}"
    assert not user_md.exists()


def test_the_cli_dry_run_shows_the_change_and_writes_nothing(write, user_md):
    first = write("Prefers green tea in the afternoon.")
    write("Likes long walks on Sundays.")
    before = user_md.read_text()
    out = run("rollback", first.id, "--dry-run")
    assert "Dry run" in out and "removed:  - Prefers green tea in the afternoon." in out
    assert user_md.read_text() == before and not Rollback.objects.exists()
    record = json.loads(run("rollback", first.id, "--dry-run", "--json"))
    assert record["lines_removed"] == ["- Prefers green tea in the afternoon."] and record["changed"] is True
    done = json.loads(run("rollback", first.id, "--json"))
    assert done["lines_removed"] == record["lines_removed"] and done["diff"] == record["diff"]


def test_the_cli_session_rollback_lists_the_lines_and_says_when_nothing_changed(write, user_md):
    write("Prefers green tea in the afternoon.", session_id="s1")
    write("Likes long walks on Sundays.", session_id="s2")
    out = run("rollback-session", "s1")
    assert "removed:  - Prefers green tea in the afternoon." in out
    assert "Rolled back 1 write(s): 1 line(s) removed, 0 restored." in out
    assert "No written audits" in run("rollback-session", "s1")
    with pytest.raises(CommandError, match="no audit"):
        run("rollback", "nope")


def test_a_reason_given_is_kept(written_audit):
    run("rollback", written_audit.id, "--reason", "wrong file")
    assert Rollback.objects.get().reason == "wrong file"
    with pytest.raises(CommandError, match="already rolled back"):
        run("rollback", written_audit.id)


def test_the_bulk_rollback_reports_the_lines_it_removed(operator, write, user_md):
    a = write("Prefers green tea in the afternoon.")
    b = write("Enjoys chess problems in the evening.")
    url = reverse("admin:guardian_app_writeguardianaudit_changelist")
    done = operator.post(
        url, {"action": "rollback_selected", "_selected_action": [a.id, b.id], "confirm": "yes", "reason": "bad"}
    )
    messages = [str(m) for m in done.wsgi_request._messages]
    # The newest first: its line; then the first write, which created the file: its heading, blank line and line.
    assert messages == ["Rolled back 2 write(s): 4 line(s) removed, 0 restored."]
    assert not user_md.exists()
