"""Issue 9: the dataset samples' and learning events' changelist dashboards are computed at most once every
``DASHBOARD_TTL`` seconds (Django's cache), right when computed, and say how old they are."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from dataset_app.admin import DASHBOARD as SAMPLES
from guardian_app.admin.learning import DASHBOARD as EVENTS
from guardian_app.models import LearningEvent
from reflection_site import admin as site_admin
from tests.dataset_app.factories import SampleFactory

pytestmark = pytest.mark.django_db

SAMPLES_URL = "admin:dataset_app_datasetsample_changelist"
EVENTS_URL = "admin:guardian_app_learningevent_changelist"


@pytest.fixture
def cached(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dashboards cached as in production, in a cache of this test's own."""
    from django.core.cache import cache

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "dash"}}
    cache.clear()  # A local-memory cache of one LOCATION outlives the test that filled it.
    monkeypatch.setattr(site_admin, "DASHBOARD_TTL", 300)


def make_samples() -> list[Any]:
    specs = [
        ("memory_gate_positive", "pending", 0.15),
        ("memory_gate_positive", "approved", 0.55),
        ("memory_gate_negative", "needs_review", 0.95),
        ("write_guardian_decision", "rejected", 0.45),
        ("write_guardian_decision", "pending", 0.65),
    ]
    return [
        SampleFactory(sample_type=kind, annotation_status=status, quality_score=q, source_key=f"{kind}:dash{i}")
        for i, (kind, status, q) in enumerate(specs)
    ]


def sample_figures(response: Any) -> dict[str, Any]:
    summary = response.context["quality_summary"]
    return {
        "count": summary["count"],
        "mean": summary["mean"],
        "buckets": [b["count"] for b in summary["buckets"]],
        "as_of": response.context["dashboard_as_of"],
    }


def test_the_samples_dashboard_figures_are_those_of_the_rows(admin_client: Any, cached: None) -> None:
    samples = make_samples()

    response = admin_client.get(reverse(SAMPLES_URL))

    scores = [s.quality_score for s in samples]
    buckets = Counter(min(int(q * 10), 9) for q in scores)
    figures = sample_figures(response)
    assert figures["count"] == len(samples)
    assert figures["mean"] == pytest.approx(sum(scores) / len(scores), abs=1e-4)
    assert figures["buckets"] == [buckets.get(i, 0) for i in range(10)]
    page = response.content.decode()
    as_of = timezone.localtime(figures["as_of"]).strftime("%H:%M")
    assert f'id="dashboard-as-of">as of {as_of}<' in page


def test_the_samples_dashboard_is_reused_until_forgotten(admin_client: Any, cached: None) -> None:
    make_samples()
    first = sample_figures(admin_client.get(reverse(SAMPLES_URL)))
    SampleFactory(quality_score=0.05, source_key="memory_gate_positive:late")

    again = sample_figures(admin_client.get(reverse(SAMPLES_URL)))
    site_admin.forget_dashboard(SAMPLES)
    fresh = sample_figures(admin_client.get(reverse(SAMPLES_URL)))

    assert again == first  # the cached figures, with their time
    assert fresh["count"] == first["count"] + 1 and fresh["buckets"][0] == first["buckets"][0] + 1
    assert fresh["as_of"] > first["as_of"]


def test_the_cached_samples_dashboard_runs_no_aggregate(admin_client: Any, cached: None) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    make_samples()
    admin_client.get(reverse(SAMPLES_URL))

    with CaptureQueriesContext(connection) as queries:
        admin_client.get(reverse(SAMPLES_URL))

    grouped = [q["sql"] for q in queries.captured_queries if "GROUP BY" in q["sql"] or "AVG(" in q["sql"]]
    assert grouped == []


def event(kind: str, *, shadow: bool = False, days_ago: float = 1) -> LearningEvent:
    return LearningEvent.objects.create(
        event_type=kind, shadow=shadow, reason="ok", created_at=timezone.now() - timezone.timedelta(days=days_ago)
    )


def test_the_learning_dashboard_counts_the_last_30_days_and_is_cached(admin_client: Any, cached: None) -> None:
    event("mem_accept")
    event("rule_accept", days_ago=3)
    event("mem_reject", days_ago=2)
    event("mem_accept", shadow=True)
    event("mem_accept", days_ago=40)  # outside the chart's 30 days

    first = admin_client.get(reverse(EVENTS_URL))
    event("mem_reject")
    again = admin_client.get(reverse(EVENTS_URL))
    site_admin.forget_dashboard(EVENTS)
    fresh = admin_client.get(reverse(EVENTS_URL))

    series = {key: (applied, shadow) for key, _, applied, shadow in first.context["learning_series"]}
    assert series["accepted"] == (2, 1) and series["rejected"] == (1, 0)
    assert again.context["learning_series"] == first.context["learning_series"]
    assert {k: (a, s) for k, _, a, s in fresh.context["learning_series"]}["rejected"] == (2, 0)
    as_of = timezone.localtime(first.context["dashboard_as_of"]).strftime("%H:%M")
    assert f"(as of {as_of})" in first.content.decode()


def test_a_failing_cache_leaves_the_dashboard_computed(
    admin_client: Any, cached: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_samples()

    def down(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("cache down")

    from django.core.cache.backends.locmem import LocMemCache

    monkeypatch.setattr(LocMemCache, "get", down)
    monkeypatch.setattr(LocMemCache, "set", down)
    response = admin_client.get(reverse(SAMPLES_URL))

    assert response.status_code == 200
    assert sample_figures(response)["count"] == 5


def test_each_database_has_its_own_dashboard(cached: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import connection

    monkeypatch.setitem(site_admin.DASHBOARDS, "x", lambda: {"n": 1})
    first = site_admin.dashboard_figures("x")
    monkeypatch.setitem(connection.settings_dict, "NAME", "another_database")
    monkeypatch.setitem(site_admin.DASHBOARDS, "x", lambda: {"n": 2})
    other = site_admin.dashboard_figures("x")

    assert (first["n"], other["n"]) == (1, 2)


def test_the_beat_refresh_computes_every_dashboard_so_that_a_request_computes_none(
    admin_client: Any, cached: None
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from reflection_site.tasks import run_dashboard_refresh

    make_samples()
    first = sample_figures(admin_client.get(reverse(SAMPLES_URL)))
    SampleFactory(quality_score=0.05, source_key="memory_gate_positive:late")

    assert run_dashboard_refresh() == len(site_admin.DASHBOARDS) >= 2  # The task the beat entry names.
    with CaptureQueriesContext(connection) as queries:
        refreshed = sample_figures(admin_client.get(reverse(SAMPLES_URL)))
        admin_client.get(reverse(EVENTS_URL))

    assert refreshed["count"] == first["count"] + 1 and refreshed["as_of"] > first["as_of"]
    assert [q["sql"] for q in queries.captured_queries if "GROUP BY" in q["sql"] or "AVG(" in q["sql"]] == []


def test_the_refresh_is_scheduled_inside_the_cache_lifetime(db: None, cached: None) -> None:
    from django_celery_beat.models import PeriodicTask

    entry = PeriodicTask.objects.get(name="admin-dashboards-refresh")
    assert entry.task == "reflection_site.tasks.run_dashboard_refresh" and entry.enabled
    minutes = int(entry.crontab.minute.removeprefix("*/"))
    assert minutes * 60 < site_admin.DASHBOARD_TTL


def test_without_a_cache_lifetime_the_refresh_does_nothing(admin_client: Any) -> None:
    assert site_admin.DASHBOARD_TTL == 0  # The suite's default: dashboards computed on every request.
    assert site_admin.refresh_dashboards() == 0
