"""Seed 004's qmdProjection keys: enabled (off by default), includeL1, categorySeparateFiles, dailyTrigger."""

from __future__ import annotations

import pytest

from guardian_app.reflect.projection import project
from guardian_app.tasks import run_daily_projection
from tests.guardian_app.test_projection import indexed  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("enabled", "daily", "runs"), [(False, True, False), (True, False, False), (True, True, True)])
def test_the_daily_task_runs_only_when_enabled_and_triggered(indexed, settings, enabled, daily, runs):  # noqa: F811
    settings.PROJECTION_ENABLED, settings.PROJECTION_DAILY_TRIGGER = enabled, daily

    outcome = run_daily_projection()

    written = sorted(p.name for p in settings.PROJECTION_DIR.rglob("*.md")) if settings.PROJECTION_DIR.exists() else []
    assert bool(written) == runs, outcome
    assert ("projection is off" in outcome) != runs


def test_projection_is_off_by_default(settings):
    from django.conf import settings as live
    from environ import Env

    assert Env().bool("PROJECTION_ENABLED", default=False) is False
    assert live.PROJECTION_ENABLED is False


def test_include_l1_decides_whether_a_memory_shows_its_section(indexed, settings):  # noqa: F811
    project()
    tools = settings.PROJECTION_DIR / "by-category" / "tools.md"
    assert "**Section**: Tools" in tools.read_text()

    settings.PROJECTION_INCLUDE_L1 = False
    project()

    assert "**Section**" not in tools.read_text() and "**Summary**" in tools.read_text()


def test_category_separate_files_off_writes_the_summary_only(indexed, settings):  # noqa: F811
    project()
    assert list((settings.PROJECTION_DIR / "by-category").glob("*.md"))

    settings.PROJECTION_CATEGORY_SEPARATE_FILES = False
    result = project()

    assert [p.parent.name for p in result.files] == ["summaries"]
    assert not list((settings.PROJECTION_DIR / "by-category").glob("*.md"))  # the earlier run's views removed
