"""The README is the settings reference: every environment variable settings.py reads is in its table."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_read_from_the_environment_is_documented():
    settings_source = (ROOT / "reflection_site" / "settings.py").read_text()
    names = set(re.findall(r'env(?:\.\w+)?\(\s*"([A-Z][A-Z0-9_]+)"', settings_source))
    readme = (ROOT / "README.md").read_text()
    assert len(names) > 50
    assert sorted(n for n in names if f"`{n}`" not in readme) == []


def test_the_readme_opens_with_the_two_commands():
    first_block = (ROOT / "README.md").read_text().split("```")[1]
    assert "make run" in first_block
    assert "make test" in first_block


def readme_schedules() -> dict[str, tuple[str, str]]:
    """The README's schedule table: name -> (task, crontab or the setting that holds it)."""
    section = (ROOT / "README.md").read_text().split("### Schedules", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \| `([\w.]+)` \| `([^`]+)`", section, flags=re.M)
    return {name: (task, when) for name, task, when in rows}


def test_every_beat_schedule_is_in_the_readme_as_the_code_creates_it(settings):
    from reflection_site.celery import SETTINGS_OWNED, default_schedules

    documented = readme_schedules()
    expected = {name: (task, SETTINGS_OWNED.get(name, cron)) for name, (task, cron) in default_schedules().items()}
    assert documented == expected
