"""An annotator clears the dataset review queue in the admin with the keyboard alone (a, r, n, j, k)."""

from __future__ import annotations

import re
from importlib import import_module

from django.contrib.auth.models import Group, Permission, User

from dataset_app.models import DatasetSample
from tests.dataset_app.factories import SampleFactory
from tests.e2e.conftest import login

EMAIL = "grace.hopper@example.com"


def annotator_group() -> Group:
    """The annotator group as the migrations define it (an earlier live-server test's flush may have
    emptied the table, and data migrations do not run again)."""
    grants = import_module("dataset_app.migrations.0003_operator_annotator_permissions").GROUPS["annotator"]
    group, _ = Group.objects.get_or_create(name="annotator")
    group.permissions.add(*Permission.objects.filter(content_type__app_label="dataset_app", codename__in=grants))
    return group


def sample(quality: float, user: str, *, email: bool = False) -> DatasetSample:
    message = f"{user} Write to {EMAIL}." if email else user
    content = {
        "type": "memory_gate_positive",
        "conversation": [
            {"role": "agent", "message": "Hi! What can I do for you?"},
            {"role": "user", "message": message},
            {"role": "agent", "message": "Noted."},
        ],
        "correctDecision": "UPDATE_USER",
        "correctFact": user,
        "reason": "A stable preference.",
        "targetFile": "USER.md",
        "evidence": {"wasWritten": True, "userFeedback": None},
    }
    redacted = None
    if email:
        redacted = {
            **content,
            "conversation": [
                content["conversation"][0],
                {"role": "user", "message": f"{user} Write to [EMAIL]."},
                content["conversation"][2],
            ],
        }
    return SampleFactory(
        quality_score=quality,
        annotation_status="needs_review",
        content=content,
        contains_pii=email,
        pii_redacted_content=redacted,
    )


def test_an_annotator_clears_the_review_queue_with_the_keyboard(page, shot, live_server, transactional_db):
    annotator = User.objects.create_user("annie", password="annie-pass-123", is_staff=True)
    annotator.groups.add(annotator_group())
    first = sample(0.95, "I prefer tea in the morning.", email=True)
    second = sample(0.80, "I like jazz.")
    third = sample(0.60, "I am learning Rust.")

    login(page, live_server.url, "annie", "annie-pass-123")
    page.goto(f"{live_server.url}/admin/dataset_app/datasetsample/")
    assert page.locator("svg.reflection-chart").count() == 3
    shot("samples with their charts")
    page.click("text=Review queue (3)")
    page.wait_for_url(re.compile(rf".*/review/{first.id}/$"))
    assert page.locator(".ds-bubble.ds-user.ds-current").inner_text().strip().endswith("Write to [EMAIL].")
    assert EMAIL not in page.content()
    assert "1 of 3" in page.inner_text("#ds-review")
    shot("first sample, redacted, as chat bubbles")

    page.keyboard.press("j")
    page.wait_for_url(re.compile(rf".*/review/{second.id}/$"))
    page.keyboard.press("k")
    page.wait_for_url(re.compile(rf".*/review/{first.id}/$"))

    page.keyboard.press("a")  # approve, then the next one opens
    page.wait_for_url(re.compile(rf".*/review/{second.id}/$"))
    assert "Approved" in page.inner_text(".messagelist")
    page.fill("#ds-notes", "duplicate of an approved sample")
    page.keyboard.press("Escape")  # leave the notes box: the keys work again
    page.keyboard.press("r")
    page.wait_for_url(re.compile(rf".*/review/{third.id}/$"))
    shot("third sample")
    with page.expect_navigation():
        page.keyboard.press("n")  # still needs review: it stays in the queue, which comes round to it
    page.wait_for_url(re.compile(rf".*/review/{third.id}/$"))
    assert "Needs review" in page.inner_text(".messagelist")
    page.keyboard.press("a")
    page.wait_for_url(re.compile(r".*/review/$"))
    assert "The review queue is clear." in page.inner_text("#content")
    shot("queue clear")

    statuses = dict(DatasetSample.objects.values_list("id", "annotation_status"))
    assert statuses == {first.id: "approved", second.id: "rejected", third.id: "approved"}
    second.refresh_from_db()
    assert (second.annotated_by, second.annotation_notes) == ("annie", "duplicate of an approved sample")
