"""The learning guardrails in the admin: events with filters and the chart, actions on memory items and rules."""

from __future__ import annotations

import datetime as dt
from http import HTTPStatus

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from guardian_app.admin.learning import learning_chart_svg
from guardian_app.learning.feedback import apply_feedback
from guardian_app.models import LearningEvent, MemoryItem, Rule

pytestmark = pytest.mark.django_db

GOOD_FACT = "The production database is PostgreSQL 15 on host db-2; backups run nightly at 02:00 UTC."


@pytest.fixture
def learned(learning, make_turn):
    apply_feedback(make_turn(fact=GOOD_FACT), user_id="u1", feedback="up")
    apply_feedback(make_turn(user="ok", agent="ok"), user_id="u1", feedback="up")
    apply_feedback(make_turn(), user_id="u2", feedback="down", reason="Never use emoji in replies")
    return MemoryItem.objects.get(), Rule.objects.get()


def staff(group: str) -> Client:
    user = User.objects.create_user(f"{group}-user", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=group))
    client = Client()
    client.force_login(user)
    return client


def test_the_event_list_opens_with_the_chart_and_the_metrics(admin_client, learned, django_assert_max_num_queries):
    with django_assert_max_num_queries(20):
        response = admin_client.get(reverse("admin:guardian_app_learningevent_changelist"))
    assert response.status_code == HTTPStatus.OK
    html = response.content.decode()
    assert 'class="learning-chart"' in html and "<rect" in html
    assert 'id="learning-metrics"' in html and "Guardrails on" in html
    assert '<tr><td>accepted</td><td class="num">2</td><td class="num">0</td></tr>' in html
    assert '<tr><td>rejected</td><td class="num">1</td><td class="num">0</td></tr>' in html


def test_the_event_list_filters_by_type_and_source(admin_client, learned):
    url = reverse("admin:guardian_app_learningevent_changelist")
    html = admin_client.get(url, {"event_type__exact": "rule_accept"}).content.decode()
    rows = html.split('id="result_list"')[1].split("</table>")[0]
    assert "rule accepted" in rows and "memory rejected" not in rows
    assert admin_client.get(url, {"source__exact": "api_feedback"}).status_code == HTTPStatus.OK
    assert "1 learning event" in admin_client.get(url, {"q": learned[1].id}).content.decode()


def test_an_event_shows_its_payload_escaped(admin_client, learning, make_turn):
    apply_feedback(make_turn(), user_id="<script>x</script>", feedback="down", reason="<script>alert(1)</script>")
    event = LearningEvent.objects.get()
    html = admin_client.get(reverse("admin:guardian_app_learningevent_change", args=[event.id])).content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_admin_actions_suppress_archive_and_reactivate_memory_items(admin_client, learned):
    item, _ = learned
    url = reverse("admin:guardian_app_memoryitem_changelist")
    for action, status in (("suppress", "suppressed"), ("reactivate", "active"), ("archive", "expired")):
        response = admin_client.post(url, {"action": action, "_selected_action": [item.id]})
        assert response.status_code == HTTPStatus.FOUND
        assert MemoryItem.objects.get().status == status
    events = LearningEvent.objects.filter(source="operator").order_by("created_at", "id")
    assert [e.event_type for e in events] == ["mem_suppress", "mem_reactivate", "mem_expire"]
    assert events[0].payload_json["by"] == "admin:admin"


def test_admin_actions_on_rules(admin_client, learned):
    _, rule = learned
    url = reverse("admin:guardian_app_rule_changelist")
    admin_client.post(url, {"action": "archive", "_selected_action": [rule.id]})
    assert Rule.objects.get().status == "archived"
    admin_client.post(url, {"action": "reactivate", "_selected_action": [rule.id]})
    assert Rule.objects.get().status == "active"
    assert admin_client.get(reverse("admin:guardian_app_rule_change", args=[rule.id])).status_code == HTTPStatus.OK


def test_operators_may_act_and_annotators_only_look(learned):
    item, _ = learned
    url = reverse("admin:guardian_app_memoryitem_changelist")
    operator, annotator = staff("operator"), staff("annotator")
    assert "Suppress selected" in operator.get(url).content.decode()
    assert annotator.get(url).status_code == HTTPStatus.OK
    assert "Suppress selected" not in annotator.get(url).content.decode()
    annotator.post(url, {"action": "suppress", "_selected_action": [item.id]})
    assert MemoryItem.objects.get().status == "active"
    operator.post(url, {"action": "suppress", "_selected_action": [item.id]})
    assert MemoryItem.objects.get().status == "suppressed"


def test_nobody_adds_or_deletes_learned_items_by_hand(admin_client, learned):
    item, _ = learned
    assert admin_client.get(reverse("admin:guardian_app_memoryitem_add")).status_code == HTTPStatus.FORBIDDEN
    assert (
        admin_client.get(reverse("admin:guardian_app_memoryitem_delete", args=[item.id])).status_code
        == HTTPStatus.FORBIDDEN
    )


def test_the_chart_has_a_bar_per_day_with_events_and_escapes_nothing_unsafe():
    today = dt.date(2026, 6, 30)
    daily = [
        {"day": today, "accepted": 3, "rejected": 1, "conflict": 0, "expired": 0, "rate_limited": 2, "errors": 0},
        {"day": today - dt.timedelta(days=40), "accepted": 99},  # outside the 30 days: not drawn
    ]
    svg = learning_chart_svg(daily, today=today)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "2026-06-30: 3 accepted" in svg and "2026-06-30: 2 rate-limited" in svg
    assert "99" not in svg.split("<title>", 2)[2]
