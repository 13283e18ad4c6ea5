"""The console end to end, in a real browser against a live server and a real Celery worker.

Turns go in through the API; the worker runs the (offline) gate and the guardian, which write USER.md and
TOOLS.md. An operator then follows a turn to its gate decision and to the audit of the write it caused, reads
the coloured diff, rolls the write back through the confirmation page and finds the file restored; edits
another file by hand and sees the rollback of the write beneath the edit refused as a conflict that names
the hand edit, with nothing changed. An annotator finds no rollback button (and a 403 behind its URL), and
clears the review queue of the samples collected from those turns with the keyboard alone.
"""

from __future__ import annotations

import re
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User

from dataset_app.collect import collect_samples
from dataset_app.models import DatasetSample
from guardian_app.models import WriteGuardianAudit
from reflection_site.models import ApiKey
from sessions_app.models import ConversationTurn
from tests.conftest import ApiClient, turn_payload
from tests.e2e.conftest import login
from tests.services import wait_until

SESSION = "channel:e2e:ada"
LEARNING_TOKEN = "e2e-learning-token"
HAND_WRITTEN_USER_MD = "# User\n\n## Preferences\n- Likes green tea in the afternoon.\n"
TURNS = [
    ("I prefer summaries on Fridays.", "Noted, summaries on Fridays."),
    ("I use neovim for editing, with the lazy.nvim plugin manager.", "Got it."),
    ("What is the weather today?", "Sunny and mild."),
]


def console_group(name: str) -> Group:
    """A console group as the migrations define it (a live-server test's flush empties auth_group, and data
    migrations do not run again)."""
    grants = [
        *import_module("guardian_app.migrations.0004_operator_annotator_groups").GROUPS[name],
        *[
            ("dataset_app", c)
            for c in import_module("dataset_app.migrations.0003_operator_annotator_permissions").GROUPS[name]
        ],
    ]
    group, _ = Group.objects.get_or_create(name=name)
    for app_label, codename in grants:
        group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return group


def make_user(username: str, group: str) -> User:
    user = User.objects.create_user(username, password=f"{username}-pass-123", is_staff=True)
    user.groups.add(console_group(group))
    return user


@pytest.fixture
def pipeline(worker: Any, workspace: Path, settings: Any) -> dict[str, Any]:
    """Three turns through the real pipeline: USER.md (over a hand-written file) and TOOLS.md get one write each."""
    settings.LEARNING_FEEDBACK_TOKEN = LEARNING_TOKEN
    (workspace / "USER.md").write_text(HAND_WRITTEN_USER_MD)
    _, raw = ApiKey.generate("e2e-agent", ["ingest"])
    client = ApiClient(raw)
    turns = []
    for number, (user, agent) in enumerate(TURNS, start=1):
        response = client.post(
            "/api/v1/turns", turn_payload(session_id=SESSION, user=user, agent=agent, turn_number=number)
        )
        assert response.status_code == 201, response.content
        turns.append(response.json()["id"])
    wait_until(
        lambda: (
            ConversationTurn.objects.filter(id__in=turns, gate_status="done").count() == len(turns)
            and WriteGuardianAudit.objects.filter(turn_id__in=turns).count() == 2
        ),
        timeout=60,
        message="the worker to gate the turns and write the two facts",
    )
    audits = {a.target_file: a for a in WriteGuardianAudit.objects.filter(turn_id__in=turns)}
    assert {f: a.status for f, a in audits.items()} == {"USER.md": "written", "TOOLS.md": "written"}, [
        (a.target_file, a.status, a.reason) for a in audits.values()
    ]
    return {"turns": turns, "user_audit": audits["USER.md"], "tools_audit": audits["TOOLS.md"], "workspace": workspace}


def test_an_operator_audits_a_write_rolls_it_back_and_meets_a_conflict(page, shot, live_server, pipeline):
    make_user("olga", "operator")
    url, workspace = live_server.url, pipeline["workspace"]
    user_audit, tools_audit = pipeline["user_audit"], pipeline["tools_audit"]

    login(page, url, "olga", "olga-pass-123")
    shot("operator logged in")

    # A turn and its gate decision.
    page.goto(f"{url}/admin/sessions_app/conversationturn/?q={SESSION}")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == len(TURNS)
    shot("the session's turns")
    page.locator("#result_list").get_by_role("link", name=pipeline["turns"][0]).click()
    assert "I prefer summaries on Fridays." in page.inner_text("#content")
    decisions = page.locator(".inline-group").filter(has_text="gate decisions")
    assert "UPDATE_USER" in decisions.inner_text()
    assert "Prefers summaries on Fridays." in decisions.inner_text()
    shot("turn with its gate decision")
    decisions.get_by_role("link", name=user_audit.decision_id).click()
    assert "UPDATE_USER" in page.inner_text("#content")
    shot("the gate decision")

    # The audit of the write it caused, with its diff in colour.
    page.locator("#content").get_by_role("link", name=user_audit.id).click()
    page.wait_for_url(re.compile(rf".*/writeguardianaudit/{user_audit.id}/change/$"))
    added = page.locator(".gdiff span.add").filter(has_text="Prefers summaries on Fridays.")
    assert added.count() == 1
    assert added.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(230, 255, 236)"  # green
    assert added.evaluate("e => getComputedStyle(e).color") == "rgb(26, 127, 55)"
    assert page.locator(".gdiff span.hunk").count() >= 1
    assert page.inner_text(".field-target_file .readonly").strip() == "USER.md"
    assert page.locator("#rollback-button").is_visible()
    shot("audit with its coloured diff")

    # Roll it back through the confirmation page: the hand-written file comes back.
    page.click("#rollback-button")
    assert "it will be restored to its state before it" in page.inner_text("#rollback-preview")
    shot("rollback confirmation")
    page.fill("#id_reason", "The user changed their mind about Friday summaries.")
    page.click("#rollback-form input[type=submit]")
    page.wait_for_url(re.compile(rf".*/writeguardianaudit/{user_audit.id}/change/$"))
    assert f"Rolled back {user_audit.id} (restored the file)." in page.inner_text(".messagelist")
    assert (workspace / "USER.md").read_text() == HAND_WRITTEN_USER_MD
    assert "rolled back" in page.inner_text(".field-status_col")
    assert page.locator("#rollback-button").count() == 0
    shot("rolled back, file restored")
    page.click("#history-button")
    timeline = page.locator("#file-timeline")
    assert timeline.locator("li.version.rollback").count() == 1
    assert timeline.locator("li.version").first.get_attribute("class") == "version rollback"
    shot("USER.md timeline with the rollback")

    # A hand edit over the TOOLS.md write: its rollback is a conflict that changes nothing.
    tools_md = workspace / "TOOLS.md"
    written = tools_md.read_text()
    assert "neovim" in written
    hand_edited = written.replace("neovim for editing", "helix for editing (switched in May)")
    tools_md.write_text(hand_edited)
    page.goto(f"{url}/admin/guardian_app/writeguardianaudit/{tools_audit.id}/change/")
    page.click("#rollback-button")
    page.fill("#id_reason", "Wrong tool.")
    page.click("#rollback-form input[type=submit]")
    conflict = page.locator("#rollback-conflict")
    assert "Conflict: nothing was changed" in conflict.inner_text()
    assert "hand_edit" in conflict.inner_text()  # The later change it names.
    assert "helix for editing" in conflict.inner_text()  # What the file has there now.
    assert page.locator("#id_force").is_visible()  # Force is offered only now.
    shot("conflict explained, nothing changed")
    assert tools_md.read_text() == hand_edited
    tools_audit.refresh_from_db()
    assert tools_audit.status == "written"
    assert not hasattr(tools_audit, "rollback") or tools_audit.rollback is None


def test_an_annotator_cannot_roll_back_and_clears_the_review_queue_with_the_keyboard(
    page, shot, live_server, pipeline, settings
):
    make_user("annie", "annotator")
    url, user_audit = live_server.url, pipeline["user_audit"]

    # Feedback on each turn: a sample with user feedback goes to review (manualReviewCriteria.userFeedbackReceived).
    feedback = ApiClient(None)
    for turn_id, vote in zip(pipeline["turns"], ["up", "down", "up"], strict=True):
        response = feedback.post(
            f"/api/v1/traces/{turn_id}/feedback",
            {"user_id": "ada", "feedback": vote, "reason": "checked by hand" if vote == "down" else None},
            HTTP_X_LEARNING_TOKEN=LEARNING_TOKEN,
        )
        assert response.status_code == 200, response.content
    settings.DATASET_NOT_ROLLED_BACK_WITHIN_DAYS = 0  # The writes count as settled at once.
    collect_samples()
    queue = list(DatasetSample.objects.filter(annotation_status="needs_review").order_by("id"))
    assert len(queue) >= 2, list(DatasetSample.objects.values_list("sample_type", "annotation_status"))

    login(page, url, "annie", "annie-pass-123")
    page.goto(f"{url}/admin/guardian_app/writeguardianaudit/{user_audit.id}/change/")
    assert "Prefers summaries on Fridays." in page.inner_text("#content")
    assert page.locator("#rollback-button").count() == 0
    assert page.locator("#retry-button").count() == 0
    assert page.locator("#correct-button").is_visible()  # An annotator may correct the guardian, not undo it.
    shot("annotator sees the audit without a rollback button")
    response = page.goto(f"{url}/admin/guardian_app/writeguardianaudit/{user_audit.id}/rollback/")
    assert response.status == 403
    shot("the rollback url answers 403")
    assert WriteGuardianAudit.objects.get(id=user_audit.id).status == "written"

    page.goto(f"{url}/admin/dataset_app/datasetsample/")
    page.click(f"text=Review queue ({len(queue)})")
    page.wait_for_url(re.compile(r".*/review/[0-9A-Z]{26}/$"))
    meta = page.locator(".ds-diff .ds-meta").first  # The diff's ---/+++ lines sit tight, as in a terminal.
    assert meta.evaluate("e => getComputedStyle(e).display") == "inline"
    shot("first sample of the queue")
    for n in range(len(queue)):
        key = "r" if n == 0 else "a"
        current = page.url
        page.keyboard.press(key)
        page.wait_for_url(lambda u, current=current: u != current)
    page.wait_for_url(re.compile(r".*/review/$"))
    assert "The review queue is clear." in page.inner_text("#content")
    shot("queue clear")
    statuses = sorted(
        DatasetSample.objects.filter(id__in=[s.id for s in queue]).values_list("annotation_status", flat=True)
    )
    assert statuses == sorted(["rejected"] + ["approved"] * (len(queue) - 1))
    assert set(DatasetSample.objects.filter(id__in=[s.id for s in queue]).values_list("annotated_by", flat=True)) == {
        "annie"
    }
