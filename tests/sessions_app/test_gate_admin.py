"""The gate in the admin: decisions with chart, filters and context; failed turns and the re-run."""

from __future__ import annotations

import datetime as dt
import re
from http import HTTPStatus

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import timezone

from sessions_app.charts import daily_decisions_svg
from sessions_app.models import ConversationTurn, GateStatus, MemoryGateDecision
from sessions_app.stats import daily_stats

pytestmark = pytest.mark.django_db

DECISIONS = reverse("admin:sessions_app_memorygatedecision_changelist")
TURNS = reverse("admin:sessions_app_conversationturn_changelist")


def test_decision_list_shows_the_chart_latency_and_failed_turns(
    admin_client, make_decision, django_assert_max_num_queries
):
    make_decision("UPDATE_USER", latency=120, session_id="channel:t:a")
    make_decision("NO_WRITE", latency=30, session_id="channel:t:b", created_at=timezone.now() - dt.timedelta(days=3))
    failed = make_decision(session_id="channel:t:c").turn
    ConversationTurn.objects.filter(id=failed.id).update(gate_status=GateStatus.FAILED)

    with django_assert_max_num_queries(20):
        response = admin_client.get(DECISIONS)

    assert response.status_code == HTTPStatus.OK
    html = response.content.decode()
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="gate-chart"' in html
    assert f"<title>{timezone.localdate().isoformat()}: 2 UPDATE_USER</title>" in html
    assert "NO_WRITE</title>" in html
    assert '<td class="num">120 ms</td>' not in html  # Two UPDATE_USER decisions: 120 and 100 ms.
    assert '<td class="num">110 ms</td>' in html
    assert "1 turn(s) whose gate failed" in html
    assert "gate_status__exact=failed" in html
    # Nothing loaded from a CDN (a CSP nonce is random base64 and may spell "cdn": only addresses count).
    assert not re.search(r"""(?:src|href)=["'][^"']*cdn""", html, re.I)


def test_decision_list_filters_by_decision_and_searches_facts(admin_client, make_decision):
    make_decision("UPDATE_TOOLS", fact="Deploys with make deploy.", session_id="channel:t:a")
    make_decision("UPDATE_USER", fact="Likes green tea.", session_id="channel:t:b")

    by_decision = admin_client.get(DECISIONS, {"decision__exact": "UPDATE_TOOLS"}).content.decode()
    by_text = admin_client.get(DECISIONS, {"q": "green tea"}).content.decode()
    by_model = admin_client.get(DECISIONS, {"llm_model": "fake-model-1"})

    assert "Deploys with make deploy." in by_decision and "Likes green tea." not in by_decision
    assert "Likes green tea." in by_text and "Deploys with make deploy." not in by_text
    assert by_model.status_code == HTTPStatus.OK


def test_decision_page_shows_the_turn_context_and_escaped_raw_reply(admin_client, make_decision):
    decision = make_decision("UPDATE_USER")
    MemoryGateDecision.objects.filter(id=decision.id).update(raw_response='<script>alert("x")</script>')

    html = admin_client.get(
        reverse("admin:sessions_app_memorygatedecision_change", args=[decision.id])
    ).content.decode()

    assert reverse("admin:sessions_app_conversationturn_change", args=[decision.turn_id]) in html
    assert "Hello! How can I help?" in html
    assert "I prefer summaries on Fridays." in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert '<script>alert("x")</script>' not in html


def test_turn_page_lists_its_decisions_and_offers_the_rerun(admin_client, make_decision):
    decision = make_decision()

    html = admin_client.get(
        reverse("admin:sessions_app_conversationturn_change", args=[decision.turn_id])
    ).content.decode()

    assert decision.id in html
    assert reverse("admin:sessions_app_conversationturn_rerun_gate", args=[decision.turn_id]) in html


def test_failed_turns_are_run_again_by_the_action(
    admin_client, make_turn, enqueued, django_capture_on_commit_callbacks
):
    turn = make_turn(user="My name is Ada.")
    ConversationTurn.objects.filter(id=turn.id).update(
        gate_status=GateStatus.FAILED, gate_last_error="LLMTransientError: down"
    )

    listing = admin_client.get(TURNS, {"gate_status__exact": "failed"}).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(TURNS, {"action": "run_gate_again", "_selected_action": [turn.id]}, follow=True)

    assert "LLMTransientError: down" in listing
    assert "Run the memory gate again on selected turns" in listing
    assert "The gate will run again on 1 turn(s)." in response.content.decode()
    turn.refresh_from_db()
    assert (turn.gate_status, turn.gate_run) == (GateStatus.PENDING, 2)
    assert enqueued == [turn.id]


def test_the_rerun_page_confirms_then_runs(admin_client, make_turn, enqueued, django_capture_on_commit_callbacks):
    turn = make_turn(user="My name is Ada.")
    url = reverse("admin:sessions_app_conversationturn_rerun_gate", args=[turn.id])

    page = admin_client.get(url)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url)

    assert page.status_code == HTTPStatus.OK and "Run the memory gate again?" in page.content.decode()
    assert response.status_code == HTTPStatus.FOUND
    assert enqueued == [turn.id]


def test_staff_without_the_permission_cannot_rerun(client, make_turn, enqueued):
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_conversationturn"))
    client.force_login(viewer)
    turn = make_turn(user="My name is Ada.")

    listing = client.get(TURNS).content.decode()
    response = client.post(reverse("admin:sessions_app_conversationturn_rerun_gate", args=[turn.id]))

    assert "run_gate_again" not in listing
    assert response.status_code == HTTPStatus.FORBIDDEN
    turn.refresh_from_db()
    assert turn.gate_run == 1


def test_the_chart_escapes_its_labels_and_draws_empty_days():
    rows = [
        {"date": '<b onload="x">', "total_decisions": 1, "no_write_count": 1},
        {"date": dt.date(2026, 3, 2), "total_decisions": 0},
    ]

    svg = str(daily_decisions_svg(rows))

    assert "&lt;b onload=&quot;x&quot;&gt;" in svg and "<b " not in svg
    assert svg.startswith("<svg") and svg.endswith("</svg>")


def test_the_chart_of_no_decisions_is_still_a_chart(db):
    svg = str(daily_decisions_svg(daily_stats(days=30)))

    assert svg.count("<rect") == 6  # Only the legend's swatches.


def test_decisions_export_from_the_admin_in_csv_json_and_xlsx(admin_client, make_decision):
    import csv
    import io
    import json

    from sessions_app.admin import MemoryGateDecisionResource

    make_decision("UPDATE_USER", fact="Prefers tea in the afternoon.", session_id="channel:t:a")
    make_decision("NO_WRITE", session_id="channel:t:b")
    export_url = DECISIONS + "export/"

    page = admin_client.get(DECISIONS)
    assert export_url in page.content.decode()  # the list offers Export
    form = admin_client.get(export_url)
    assert form.status_code == HTTPStatus.OK
    fields = MemoryGateDecisionResource().get_export_fields()
    chosen = {f"memorygatedecisionresource_{f.column_name}": "on" for f in fields}

    response = admin_client.post(export_url + "?decision__exact=UPDATE_USER", {"format": "0", **chosen})

    assert response.status_code == HTTPStatus.OK, response.content[:400]
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert [(r["decision"], r["target_file"], r["candidate_fact"]) for r in rows] == [
        ("UPDATE_USER", "USER.md", "Prefers tea in the afternoon.")
    ]
    as_json = json.loads(admin_client.post(export_url, {"format": "1", **chosen}).content)
    assert sorted(r["decision"] for r in as_json) == ["NO_WRITE", "UPDATE_USER"]
    xlsx = admin_client.post(export_url, {"format": "2", **chosen})
    assert xlsx.content[:2] == b"PK"  # a zip: the XLSX workbook
