"""The rollback console in the admin: coloured escaped diffs, confirmation pages, groups, bulk rollback, history."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from guardian_app.models import BehaviorCorrection, Rollback, WriteGuardianAudit
from guardian_app.write.diffs import content_hash
from guardian_app.write.guardian import retry_write

pytestmark = pytest.mark.django_db
Status = WriteGuardianAudit.Status


def _member(group: str) -> Client:
    user = User.objects.create_user(username=group, password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=group))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operator() -> Client:
    return _member("operator")


@pytest.fixture
def annotator() -> Client:
    return _member("annotator")


def _change(audit) -> str:
    return reverse("admin:guardian_app_writeguardianaudit_change", args=[audit.id])


def _rollback(audit) -> str:
    return reverse("admin:guardian_app_writeguardianaudit_rollback", args=[audit.id])


def test_the_groups_come_from_a_migration():
    operator = set(Group.objects.get(name="operator").permissions.values_list("codename", flat=True))
    annotator = set(Group.objects.get(name="annotator").permissions.values_list("codename", flat=True))
    assert {"rollback_writeguardianaudit", "retry_writeguardianaudit", "add_behaviorcorrection"} <= operator
    assert "add_behaviorcorrection" in annotator
    assert not {"rollback_writeguardianaudit", "retry_writeguardianaudit"} & annotator


def test_the_change_page_shows_the_diff_in_colour_and_escaped(operator, write):
    held = write("Likes the <script>alert(1)</script> demo page.")
    assert held.held_for_review  # Markup is held (issue 21); an operator's retry is the review that writes it.
    audit = retry_write(held, requested_by="operator")
    assert audit.status == Status.WRITTEN, audit.reason
    page = operator.get(_change(audit)).content.decode()
    assert '<span class="add">+- Likes the &lt;script&gt;alert(1)&lt;/script&gt; demo page.</span>' in page
    assert "<script>alert(1)" not in page
    assert 'id="rollback-button"' in page and 'id="retry-button"' in page
    assert audit.decision.reason in page  # The decision and the turn are shown.
    assert audit.turn.user_message_content.replace("<", "&lt;").replace(">", "&gt;") in page


def test_the_list_filters_and_searches(operator, write, django_assert_max_num_queries):
    written = write("Prefers green tea in the afternoon.")
    refused = write("Stuff.")
    url = reverse("admin:guardian_app_writeguardianaudit_changelist")
    with django_assert_max_num_queries(12):
        page = operator.get(url).content.decode()
    assert written.id in page and refused.id in page
    only_refused = operator.get(url, {"status__exact": "refused"}).content.decode()
    assert refused.id in only_refused and written.id not in only_refused
    found = operator.get(url, {"q": "green tea"}).content.decode()
    assert written.id in found and refused.id not in found
    assert operator.get(url, {"target_file__exact": "USER.md"}).status_code == HTTPStatus.OK


def test_roll_back_through_the_confirmation_page(operator, written_audit, user_md):
    page = operator.get(_rollback(written_audit))
    assert page.status_code == HTTPStatus.OK
    assert b"Reason (required)" in page.content and b'name="force"' not in page.content

    seen = content_hash(user_md.read_text())
    assert f'name="seen_hash" value="{seen}"' in page.content.decode()  # The dry run was made on this file.
    assert operator.post(_rollback(written_audit), {"reason": "", "seen_hash": seen}).status_code == HTTPStatus.OK
    assert operator.post(_rollback(written_audit), {"reason": "unseen"}).status_code == HTTPStatus.OK  # Not shown.
    assert not Rollback.objects.exists()

    response = operator.post(_rollback(written_audit), {"reason": "wrong fact", "seen_hash": seen})
    assert response.status_code == HTTPStatus.FOUND
    written_audit.refresh_from_db()
    assert written_audit.status == Status.ROLLED_BACK
    assert Rollback.objects.get().rolled_back_by == "operator"
    assert not user_md.exists()


def test_a_conflict_is_shown_changes_nothing_and_only_then_offers_force(operator, write, user_md):
    user_md.write_text("## Preferences\n\n- Lives in Lisbon.\n")
    audit = write("Prefers green tea in the afternoon.")
    user_md.write_text(user_md.read_text().replace("green", "jasmine"))
    edited = user_md.read_text()

    response = operator.post(_rollback(audit), {"reason": "wrong", "force": "on"})  # force without having seen it
    assert response.status_code == HTTPStatus.CONFLICT
    page = response.content.decode()
    assert 'id="rollback-conflict"' in page and "hand edit" in page and 'name="force"' in page
    assert "- Prefers jasmine tea in the afternoon." in page
    assert user_md.read_text() == edited and not Rollback.objects.exists()

    forced = operator.post(_rollback(audit), {"reason": "wrong", "force": "on", "seen_hash": content_hash(edited)})
    assert forced.status_code == HTTPStatus.FOUND
    assert Rollback.objects.get().forced is True
    assert user_md.read_text() == "## Preferences\n\n- Lives in Lisbon.\n"


def test_an_annotator_sees_no_rollback_button_and_gets_403(annotator, written_audit, user_md):
    page = annotator.get(_change(written_audit)).content.decode()
    assert 'id="rollback-button"' not in page and 'id="retry-button"' not in page
    assert 'id="correct-button"' in page
    assert annotator.get(_rollback(written_audit)).status_code == HTTPStatus.FORBIDDEN
    assert annotator.post(_rollback(written_audit), {"reason": "x"}).status_code == HTTPStatus.FORBIDDEN
    retry = reverse("admin:guardian_app_writeguardianaudit_retry", args=[written_audit.id])
    assert annotator.post(retry, {"candidate_fact": "x", "target_file": "USER.md"}).status_code == HTTPStatus.FORBIDDEN
    bulk = annotator.post(
        reverse("admin:guardian_app_writeguardianaudit_changelist"),
        {"action": "rollback_selected", "_selected_action": [written_audit.id], "confirm": "yes", "reason": "x"},
    )
    assert bulk.status_code in (HTTPStatus.OK, HTTPStatus.FOUND)
    written_audit.refresh_from_db()
    assert written_audit.status == Status.WRITTEN and user_md.exists()


def test_an_annotator_adds_a_correction_through_the_form(annotator, written_audit):
    url = reverse("admin:guardian_app_writeguardianaudit_correct", args=[written_audit.id])
    form = annotator.get(url).content.decode()
    assert 'value="green tea afternoon"' in form  # The derived pattern is suggested.
    response = annotator.post(
        url, {"status": "refused", "reason": "Drinks are trivia.", "apply_to_future": "on", "correction_pattern": "tea"}
    )
    assert response.status_code == HTTPStatus.FOUND
    correction = BehaviorCorrection.objects.get()
    assert (correction.corrected_by, correction.correction_pattern, correction.apply_to_future) == (
        "annotator",
        "tea",
        True,
    )


def test_retry_through_the_admin(operator, write, workspace):
    refused = write("Stuff.")
    url = reverse("admin:guardian_app_writeguardianaudit_retry", args=[refused.id])
    assert b"Stuff." in operator.get(url).content
    response = operator.post(url, {"candidate_fact": "Prefers dark mode in every editor.", "target_file": "MEMORY.md"})
    new = WriteGuardianAudit.objects.get(retry_of=refused)
    assert response.status_code == HTTPStatus.FOUND and response["Location"] == _change(new)
    assert new.status == Status.WRITTEN and new.requested_by == "operator"
    assert "dark mode" in (workspace / "MEMORY.md").read_text()


def test_bulk_rollback_asks_for_a_reason_then_rolls_back_newest_first(operator, write, user_md):
    a = write("Prefers green tea in the afternoon.")
    b = write("Enjoys chess problems in the evening.")
    refused = write("Stuff.")
    url = reverse("admin:guardian_app_writeguardianaudit_changelist")
    selected = {"action": "rollback_selected", "_selected_action": [a.id, b.id, refused.id]}

    confirm = operator.post(url, selected)
    assert confirm.status_code == HTTPStatus.OK and b'id="bulk-rollback-form"' in confirm.content
    assert not Rollback.objects.exists()

    done = operator.post(url, {**selected, "confirm": "yes", "reason": "bad batch"})
    assert done.status_code == HTTPStatus.FOUND
    assert set(WriteGuardianAudit.objects.filter(id__in=[a.id, b.id]).values_list("status", flat=True)) == {
        "rolled_back"
    }
    assert not user_md.exists()


def test_the_file_history_page_is_a_timeline_with_diffs(operator, write, user_md):
    audit = write("Prefers green tea in the afternoon.")
    user_md.write_text(user_md.read_text() + "- <b>By hand</b>.\n")
    page = operator.get(reverse("admin:guardian_app_file_history", args=["USER.md"])).content.decode()
    assert page.index("hand edit") < page.index(f"audit {audit.id}")
    assert "+- &lt;b&gt;By hand&lt;/b&gt;." in page
    assert (
        operator.get(reverse("admin:guardian_app_file_history", args=["secrets.txt"])).status_code
        == HTTPStatus.NOT_FOUND
    )


def test_the_correction_admin_saves_through_the_domain(admin_client, written_audit):
    response = admin_client.post(
        reverse("admin:guardian_app_behaviorcorrection_add"),
        {
            "audit": written_audit.id,
            "corrected_status": "refused",
            "corrected_candidate_fact": "",
            "corrected_target_file": "",
            "correction_reason": "Not durable.",
            "apply_to_future": "on",
            "correction_pattern": "",
            "active": "on",
        },
    )
    assert response.status_code == HTTPStatus.FOUND, response.content.decode()[-2000:]
    correction = BehaviorCorrection.objects.get()
    assert correction.original_status == "written" and correction.correction_pattern == "green tea afternoon"
    assert correction.corrected_by == "admin"
