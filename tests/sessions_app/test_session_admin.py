# ruff: noqa: F811  (the guardian tests' fixtures, imported below, are parameters of the tests)
"""Issue 23: the session's admin page is a rollback console: its turns paginated inline (newest first, each
with its gate decision and the writes it caused). "Roll back this session" is guardian_app's
(tests/guardian_app/test_session_rollback_admin.py)."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from guardian_app.models import WriteGuardianAudit
from tests.guardian_app.conftest import make_decision, offline_guardian, write  # noqa: F401, F811  (fixtures)
from tests.guardian_app.test_guardian_admin import annotator, operator  # noqa: F401  (fixtures: a group's member)

pytestmark = pytest.mark.django_db
SESSION = "channel:test:alice"
Status = WriteGuardianAudit.Status


def _change_url(session_id: str = SESSION) -> str:
    return reverse("admin:sessions_app_conversationsession_change", args=[quote(session_id)])


def test_the_session_page_pages_its_turns_newest_first_with_decisions_and_writes(operator, write, make_decision):
    audits = [write(f"Fact number {n} about the user.") for n in range(3)]
    for _ in range(22):  # 25 turns in all: two pages.
        make_decision("NO_WRITE", None, session_id=SESSION)
    with CaptureQueriesContext(connection) as first_page:
        page = operator.get(_change_url())
    assert page.status_code == HTTPStatus.OK
    text = page.content.decode()
    assert "Turns, newest first (25; page 1 of 2)" in text
    assert text.count('class="turn-row"') == 20
    assert 'href="?turns_page=2#session-turns"' in text
    assert audits[0].id not in text  # The oldest turns are on page 2.

    older = operator.get(_change_url() + "?turns_page=2").content.decode()
    assert older.count('class="turn-row"') == 5
    numbers = [int(cell.split("<")[0]) for cell in older.split('<td class="col-narrow">')[1:]]
    assert numbers == sorted(numbers, reverse=True)
    for audit in audits:  # Each written turn: its decision and its write, linked.
        assert reverse("admin:guardian_app_writeguardianaudit_change", args=[audit.id]) in older
        assert reverse("admin:sessions_app_memorygatedecision_change", args=[audit.decision_id]) in older
        assert f"{audit.id}</a> written USER.md" in older
    assert "UPDATE_USER</a>" in older and 'title="Fact number 0 about the user."' in older

    # The page's queries do not grow with the page's turns (one query each for turns, decisions, audits).
    for _ in range(20):
        make_decision("NO_WRITE", None, session_id=SESSION)
    with CaptureQueriesContext(connection) as bigger:
        operator.get(_change_url())
    assert len(bigger.captured_queries) == len(first_page.captured_queries)


def test_the_samples_list_tells_samples_apart_by_their_redacted_content(admin_client, django_assert_max_num_queries):
    """Issue 23: the samples list had no content column. It shows the fact (or the turn's user message), from
    the redacted content when the sample holds PII, the whole excerpt as the title; never the raw value."""
    from tests.dataset_app.factories import SampleFactory

    SampleFactory(content={"type": "memory_gate_positive", "correctFact": "Prefers morning check-ins."})
    SampleFactory(
        sample_type="memory_gate_negative",
        content={"type": "memory_gate_negative", "correctFact": None, "incorrectFact": "Lives on Elm Street."},
    )
    SampleFactory(
        sample_type="annotated_turn",
        content={"type": "annotated_turn", "memoryGate": {"input": {"userMessage": "Call me at +1 415 555 0134."}}},
        contains_pii=True,
        pii_redacted_content={
            "type": "annotated_turn",
            "memoryGate": {"input": {"userMessage": "Call me at [PHONE]."}},
        },
    )
    long_fact = "Prefers that weekly summaries arrive on Friday afternoons as a short bulleted list. " * 3
    SampleFactory(content={"type": "memory_gate_positive", "correctFact": long_fact})
    for _ in range(20):
        SampleFactory()
    url = reverse("admin:dataset_app_datasetsample_changelist")
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(url)
    text = page.content.decode()
    assert page.status_code == HTTPStatus.OK
    cells = text.split('<td class="field-content_col">')[1:]
    assert len(cells) == 24
    assert any("Prefers morning check-ins." in c for c in cells)
    assert any("Lives on Elm Street." in c for c in cells), sorted({c.split("</td>")[0] for c in cells})
    assert any("Call me at [PHONE]." in c for c in cells) and "415 555" not in text
    [long_cell] = [c for c in cells if "Prefers that weekly" in c]
    assert f'title="{long_fact.strip()}"' in long_cell and "…</span>" in long_cell
    # The column reads no content per row: the queries do not grow with the rows.
    for _ in range(20):
        SampleFactory()
    with django_assert_max_num_queries(len(queries.captured_queries)):
        admin_client.get(url)
