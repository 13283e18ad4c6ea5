"""Issue 9: no N+1 queries. Every admin changelist and change page and every list endpoint runs a bounded
number of queries on a seeded data set (rows enough that one query per row would blow the bound)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.contrib import admin
from django.urls import reverse

from benchmarks.seed_scale import seed

pytestmark = pytest.mark.django_db

# Queries a page may run whatever the number of rows (measured: at most 15 for a changelist, the dataset
# samples' with its filters, and 12 for a change page, the audit's with its versions and corrections). One
# query per row would add 20 to 100 on the seeded data set.
ADMIN_MAX_QUERIES = 16
# Key, count-free page, related rows by select_related/prefetch (measured: 3, 5 with context windows).
LIST_MAX_QUERIES = 6
# file_history first reconciles the file on disk with its last version (lock, state, a hand edit recorded):
# measured 13, while MEMORY.md has 20+ versions on the seeded data set.
MAX_QUERIES = {"file_history": 15}


@pytest.fixture
def seeded(db: None) -> dict[str, int]:
    # 240 turns: 12 sessions, ~50 audits, 48 samples, 12 learning events; every list page has > 30 rows.
    counts = seed(turns=240, turns_per_session=20, sample_ratio=0.2, event_ratio=0.25, batch=500)
    from sessions_app.models import WorkspaceOwner

    WorkspaceOwner.objects.create(sender_id="telegram:owner")  # the owner a first sender (or the admin) sets
    return counts


MODELS = sorted(admin.site._registry, key=lambda m: m._meta.label)


@pytest.mark.parametrize("model", MODELS, ids=[m._meta.label for m in MODELS])
def test_admin_changelist_runs_a_bounded_number_of_queries(
    model: Any, seeded: dict[str, int], admin_client: Any, django_assert_max_num_queries: Any
) -> None:
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    with django_assert_max_num_queries(ADMIN_MAX_QUERIES):
        response = admin_client.get(url)
    assert response.status_code == HTTPStatus.OK


@pytest.mark.parametrize("model", MODELS, ids=[m._meta.label for m in MODELS])
def test_admin_change_page_runs_a_bounded_number_of_queries(
    model: Any, seeded: dict[str, int], admin_client: Any, django_assert_max_num_queries: Any
) -> None:
    obj = model._default_manager.order_by("-pk").first()
    assert obj is not None, f"the seed makes no {model._meta.label}"
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[obj.pk])
    with django_assert_max_num_queries(ADMIN_MAX_QUERIES):
        response = admin_client.get(url)
    assert response.status_code == HTTPStatus.OK


def _lists(seeded_ids: dict[str, str]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    session, turn = seeded_ids["session"], seeded_ids["turn"]
    return [
        ("list_sessions", {}, {"limit": 100}),
        ("list_sessions", {}, {"channel": "discord", "limit": 100}),
        ("list_session_turns", {"session_id": session}, {"limit": 100}),
        ("get_turn_context", {"turn_id": turn}, {}),
        ("list_gate_decisions", {}, {"limit": 100}),
        ("list_gate_decisions", {}, {"limit": 100, "with_context": "true"}),
        ("list_gate_decisions", {}, {"session": session, "limit": 100}),
        ("list_gate_decisions", {}, {"decision": "NO_WRITE", "since": "2020-01-01T00:00:00Z", "limit": 100}),
        ("list_audits", {}, {"limit": 100}),
        ("list_audits", {}, {"file": "MEMORY.md", "status": "written", "limit": 100, "with_diff": "true"}),
        ("file_history", {"file_name": "MEMORY.md"}, {"limit": 100}),
        ("list_samples", {}, {"limit": 100}),
        ("list_samples", {}, {"needs_review": "true", "limit": 100}),
        ("list_exports", {}, {"limit": 100}),
        ("list_evaluations", {}, {"limit": 100}),
        ("list_rules", {}, {"limit": 100}),
        ("list_memory_items", {}, {"limit": 100}),
        ("list_events", {}, {"limit": 100}),
        ("list_opinions", {}, {"limit": 100}),
        ("list_reflect_runs", {}, {"limit": 100}),
    ]


LIST_CASES = _lists({"session": "{session}", "turn": "{turn}"})


@pytest.mark.parametrize(("name", "kwargs", "params"), LIST_CASES, ids=[f"{n}-{'-'.join(p)}" for n, _, p in LIST_CASES])
def test_list_endpoint_runs_a_bounded_number_of_queries(
    name: str,
    kwargs: dict[str, Any],
    params: dict[str, Any],
    seeded: dict[str, int],
    api_client: Any,
    django_assert_max_num_queries: Any,
) -> None:
    from sessions_app.models import ConversationTurn

    turn = ConversationTurn.objects.order_by("-created_at").first()
    ids = {"session": turn.session_id, "turn": turn.id}
    url = reverse(f"api:{name}", kwargs={k: v.format(**ids) for k, v in kwargs.items()})
    params = {k: (v.format(**ids) if isinstance(v, str) else v) for k, v in params.items()}
    with django_assert_max_num_queries(MAX_QUERIES.get(name, LIST_MAX_QUERIES)):
        response = api_client.get(url, params)
    assert response.status_code == HTTPStatus.OK, response.content[:300]
    body = response.json()
    items = body["items"] if isinstance(body, dict) else body
    assert isinstance(items, list)


# --- Issue 9: the big tables' changelists ---------------------------------------------------------------
BIG_TABLES = [
    "sessions_app.ConversationSession",
    "sessions_app.ConversationTurn",
    "sessions_app.MemoryGateDecision",
    "guardian_app.WriteGuardianAudit",
    "guardian_app.FileVersion",
    "guardian_app.FileSnapshot",
    "guardian_app.LearningEvent",
    "guardian_app.MemoryItem",
    "guardian_app.Rule",
    "guardian_app.BehaviorCorrection",
    "guardian_app.SkillDraft",
    "dataset_app.DatasetSample",
    "dataset_app.DatasetExport",
]


@pytest.mark.parametrize("label", BIG_TABLES)
def test_a_big_tables_admin_estimates_its_count_and_shows_50_rows(label: str) -> None:
    from django.apps import apps

    from reflection_site.paginators import EstimatedCountPaginator

    model_admin = admin.site._registry[apps.get_model(label)]
    assert model_admin.paginator is EstimatedCountPaginator
    assert model_admin.show_full_result_count is False
    assert model_admin.list_per_page == 50


def test_the_decision_changelist_reads_no_column_of_every_row(seeded: dict[str, int], admin_client: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(reverse("admin:sessions_app_memorygatedecision_changelist"))

    assert response.status_code == HTTPStatus.OK
    decisions = [q["sql"] for q in queries.captured_queries if '"memory_gate_decisions"' in q["sql"]]
    # No filter lists its choices by a SELECT DISTINCT over the table, and the count joins nothing.
    assert not [sql for sql in decisions if "SELECT DISTINCT" in sql]
    counts = [sql for sql in decisions if "COUNT(*)" in sql]
    assert counts and all("JOIN" not in sql for sql in counts)
    assert len(response.context["cl"].result_list) == 50


def test_the_decision_changelist_filters_by_a_recent_model(seeded: dict[str, int], admin_client: Any) -> None:
    from sessions_app.models import MemoryGateDecision

    newest = MemoryGateDecision.objects.order_by("-created_at").first()
    MemoryGateDecision.objects.filter(pk=newest.pk).update(llm_model="other-model")
    url = reverse("admin:sessions_app_memorygatedecision_changelist")

    page = admin_client.get(url).content.decode()
    only = admin_client.get(url, {"llm_model": "other-model"})

    assert "?llm_model=other-model" in page and "?llm_model=gpt-4o-mini" in page
    assert [d.pk for d in only.context["cl"].result_list] == [newest.pk]
    assert only.context["cl"].result_list[0].turn_number == newest.turn.turn_number


# The tables of 100k rows and more at 1M turns (sessions' channel filter reads the sessions_channel index;
# memory items, rules and corrections are thousands of rows).
MILLION_ROW_TABLES = [
    "sessions_app.ConversationTurn",
    "sessions_app.MemoryGateDecision",
    "guardian_app.WriteGuardianAudit",
    "guardian_app.FileVersion",
    "guardian_app.FileSnapshot",
    "guardian_app.LearningEvent",
    "dataset_app.DatasetSample",
]


@pytest.mark.parametrize("label", MILLION_ROW_TABLES)
def test_no_big_tables_changelist_lists_filter_choices_by_select_distinct(
    label: str, seeded: dict[str, int], admin_client: Any
) -> None:
    from django.apps import apps
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    model = apps.get_model(label)
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"))

    assert response.status_code == HTTPStatus.OK
    table = f'"{model._meta.db_table}"'
    assert not [q["sql"] for q in queries.captured_queries if "SELECT DISTINCT" in q["sql"] and table in q["sql"]]
