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
