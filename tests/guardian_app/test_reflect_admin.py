"""Reflect in the admin: the day's report on the index page, reflect runs with "Run reflect now", their page
writes as audits with a diff, a file history and a rollback, and opinions with their evidence."""

from __future__ import annotations

import re
from http import HTTPStatus

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from guardian_app.models import Opinion, ReflectRun, WriteGuardianAudit
from guardian_app.reflect.reflect import reflect

pytestmark = pytest.mark.django_db


def login(client, group: str | None, name: str = "olivia"):
    user = User.objects.create_user(name, password="pw", is_staff=True)
    if group:
        user.groups.add(Group.objects.get(name=group))
    client.force_login(user)
    return client


@pytest.fixture
def reflected(reflect_log, workspace):
    reflect_log(
        "- W @Peter: Currently in Marrakech for Andy's birthday.",
        "- O(c=0.9) @Peter: Prefers short replies on WhatsApp.",
    )
    return reflect(since="7d")


def test_the_admin_index_shows_the_day_report(client, write):
    write("Prefers green tea in the afternoon.")
    login(client, "operator")

    page = client.get(reverse("admin:index")).content.decode()

    assert 'id="daily-report"' in page and "Memory changes today" in page
    assert "New in USER.md: Prefers green tea in the afternoon." in page
    assert "Created · merged</th><td>1 · 0" in page


def test_a_user_without_audit_access_sees_no_report(client):
    login(client, None, "nobody")
    page = client.get(reverse("admin:index"))
    assert page.status_code == HTTPStatus.OK and b'id="daily-report"' not in page.content


def test_an_operator_runs_reflect_from_the_admin(client, sent_tasks, django_capture_on_commit_callbacks):
    sent = sent_tasks.to("guardian_app.tasks.run_reflect", single=True)
    login(client, "operator")
    changelist = reverse("admin:guardian_app_reflectrun_changelist")
    assert b"Run reflect now" in client.get(changelist).content

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("admin:guardian_app_reflectrun_run"), {"since": "2d"}, follow=True)

    run = ReflectRun.objects.get()
    assert sent == [run.id] and run.requested_by == "olivia" and run.status == "queued"
    assert b"queued" in response.content
    bad = client.post(reverse("admin:guardian_app_reflectrun_run"), {"since": "whenever"}, follow=True)
    assert b"is not a time" in bad.content and ReflectRun.objects.count() == 1


def test_an_annotator_cannot_run_reflect(client):
    login(client, "annotator", "ann")
    assert b"Run reflect now" not in client.get(reverse("admin:guardian_app_reflectrun_changelist")).content
    response = client.post(reverse("admin:guardian_app_reflectrun_run"), {"since": "2d"})
    assert response.status_code == HTTPStatus.FORBIDDEN and not ReflectRun.objects.exists()


def test_a_run_links_its_page_writes_which_show_a_diff_and_roll_back(client, reflected, workspace):
    login(client, "operator")
    audit = WriteGuardianAudit.objects.get(target_file="bank/entities/Peter.md")

    run_page = client.get(reverse("admin:guardian_app_reflectrun_change", args=[reflected.id])).content.decode()
    assert reverse("admin:guardian_app_writeguardianaudit_change", args=[audit.id]) in run_page
    assert "bank/entities/Peter.md" in run_page

    audit_page = client.get(reverse("admin:guardian_app_writeguardianaudit_change", args=[audit.id]))
    assert audit_page.status_code == HTTPStatus.OK
    assert "Currently in Marrakech" in audit_page.content.decode()
    history = client.get(reverse("admin:guardian_app_file_history", args=["bank/entities/Peter.md"]))
    assert history.status_code == HTTPStatus.OK and b"History of bank/entities/Peter.md" in history.content
    assert client.get("/admin/guardian_app/writeguardianaudit/history/bank/../USER.md/").status_code in (
        HTTPStatus.NOT_FOUND,
        HTTPStatus.MOVED_PERMANENTLY,
    )

    rollback = reverse("admin:guardian_app_writeguardianaudit_rollback", args=[audit.id])
    page = client.get(rollback)
    assert page.status_code == HTTPStatus.OK
    # The confirmation applies to the dry run the page showed (its file hash).
    seen = re.search(r'name="seen_hash" value="([0-9a-f]+)"', page.content.decode()).group(1)
    client.post(rollback, {"reason": "not now", "seen_hash": seen})
    audit.refresh_from_db()
    assert audit.status == "rolled_back" and not (workspace / "bank/entities/Peter.md").exists()


def test_opinions_are_listed_with_their_evidence(client, reflected):
    login(client, "operator")
    opinion = Opinion.objects.get()

    listing = client.get(reverse("admin:guardian_app_opinion_changelist")).content.decode()
    detail = client.get(reverse("admin:guardian_app_opinion_change", args=[opinion.id])).content.decode()

    assert "Prefers short replies on WhatsApp." in listing and "0.90" in listing
    assert "memory/" in detail and "supports" in detail


def test_the_runs_list_stays_cheap(client, reflected, django_assert_max_num_queries):
    for _ in range(5):
        reflect(since="7d")
    login(client, "operator")
    with django_assert_max_num_queries(12):
        assert client.get(reverse("admin:guardian_app_reflectrun_changelist")).status_code == HTTPStatus.OK
