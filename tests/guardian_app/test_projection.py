"""The daily projection (seed 004 P1-002): category views and a daily summary under PROJECTION_DIR."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.core.management import call_command
from django.utils import timezone

from guardian_app.models import MemoryChunk
from guardian_app.recall.index import index_workspace
from guardian_app.reflect.projection import category_of, project, render_summary

pytestmark = pytest.mark.django_db


@pytest.fixture
def indexed(write_md, settings):
    today = timezone.localdate()
    yesterday = today - dt.timedelta(days=1)
    write_md(
        f"memory/{today.isoformat()}.md",
        "# Today\n\n## Retain\n- W @Peter: In Marrakech until Monday.\n- O(c=0.9) @Peter: Prefers short replies.\n",
    )
    write_md(f"memory/{yesterday.isoformat()}.md", "# Yesterday\n\n## Retain\n- B @warelay: Fixed the WS crash.\n")
    write_md("USER.md", "# User\n\n- Prefers tea in the afternoon.\n")
    write_md("TOOLS.md", "# Tools\n\n- Deploy with `make deploy ENV=staging`.\n")
    index_workspace()
    MemoryChunk.objects.filter(content__contains="Deploy with").update(hits=7)
    MemoryChunk.objects.filter(content__contains="Prefers tea").update(hits=2)
    return today


@pytest.mark.parametrize(
    ("path", "kind", "category"),
    [
        ("memory/2025-11-27.md", "world", "world"),
        ("memory/2025-11-27.md", None, "daily-log"),
        ("USER.md", None, "user"),
        ("TOOLS.md", None, "tools"),
        ("bank/entities/Peter.md", None, "entities"),
        ("bank/opinions.md", "opinion", "opinion"),
        ("bank/world.md", None, "bank"),
    ],
)
def test_categories(path, kind, category):
    assert category_of(path, kind) == category


def test_the_projection_writes_category_views_and_the_daily_summary(indexed, settings, workspace):
    result = project()

    root = settings.PROJECTION_DIR
    names = sorted(p.relative_to(root).as_posix() for p in result.files)
    assert names == [
        "by-category/experience.md",
        "by-category/opinion.md",
        "by-category/tools.md",
        "by-category/user.md",
        "by-category/world.md",
        f"summaries/{indexed.isoformat()}.md",
    ]
    assert all(root in p.parents for p in result.files)
    assert not any(workspace.glob("by-category")) and sorted(p.name for p in workspace.glob("*.md")) == [
        "TOOLS.md",
        "USER.md",
    ]
    tools = (root / "by-category/tools.md").read_text()
    assert tools.startswith("# TOOLS.md (tools and commands)\n") and "> Memories: 1" in tools
    assert "**Summary**: Deploy with `make deploy ENV=staging`." in tools and "- Used: 7 time(s)" in tools
    assert "- Source: `TOOLS.md#L3`" in tools

    summary = (root / f"summaries/{indexed.isoformat()}.md").read_text()
    assert summary.startswith(f"# Memory daily summary - {indexed.isoformat()}\n")
    assert (
        "- Memories: 5\n- New today: 4\n- New yesterday: 1\n" in summary
    )  # USER.md and TOOLS.md: first indexed today.
    assert "## By category" in summary and "- world: 1" in summary and "## By file" in summary
    assert "- [world] In Marrakech until Monday." in summary
    most_used = summary.split("## Most used (top 5)")[1]
    assert most_used.index("Deploy with") < most_used.index("Prefers tea") and "(7 times" in most_used


def test_reflect_pages_are_not_projected_again(indexed, write_md):
    write_md("bank/entities/Peter.md", "# Peter\n\n- In Marrakech until Monday.\n")

    result = project()

    assert sum(result.totals.values()) == 5 and "entities" not in result.totals


def test_a_category_that_is_gone_loses_its_file(indexed, settings, write_md):
    project()
    write_md("TOOLS.md", "")
    index_workspace()

    result = project()

    assert settings.PROJECTION_DIR / "by-category/tools.md" in result.removed
    assert not (settings.PROJECTION_DIR / "by-category/tools.md").exists()


def test_an_empty_index_projects_an_empty_summary(settings):
    result = project(day=dt.date(2025, 11, 27))

    text = (settings.PROJECTION_DIR / "summaries/2025-11-27.md").read_text()
    assert result.totals == {} and "- Memories: 0" in text and "## New today\n\n(none)" in text


def test_the_summary_is_deterministic():
    now = dt.datetime(2025, 11, 27, 12, tzinfo=dt.UTC)
    assert render_summary([], day=now.date(), now=now) == render_summary([], day=now.date(), now=now)


def test_the_project_command_and_the_daily_task(indexed, settings, capsys):
    from guardian_app.tasks import run_daily_projection

    call_command("memory", "project", "--json")
    data = json.loads(capsys.readouterr().out)
    assert data["day"] == indexed.isoformat() and data["totals"]["world"] == 1
    call_command("memory", "project", "--date", "2025-01-02")
    assert (settings.PROJECTION_DIR / "summaries/2025-01-02.md").exists()
    settings.PROJECTION_ENABLED = True  # off by default (seed 004); the command runs whenever asked
    assert "Projected 5 memories" in run_daily_projection()
