"""The seed keys that are read but not supported say so when set (README, "Seed keys not supported")."""

from __future__ import annotations

import pytest
from django.core import checks

from reflection_site.checks import UNSUPPORTED


def test_defaults_raise_no_warning():
    assert [m for m in checks.run_checks() if m.id == "reflection.W001"] == []


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_an_unsupported_key_set_away_from_its_default_warns(settings, name):
    value, _ = UNSUPPORTED[name]
    setattr(settings, name, (not value) if isinstance(value, bool) else value + 1)

    warnings = [m for m in checks.run_checks() if m.id == "reflection.W001"]

    assert len(warnings) == 1
    assert warnings[0].msg.startswith(f"{name}=") and "not supported" in warnings[0].msg


def test_the_readme_lists_every_unsupported_key():
    from tests.reflection_site.test_readme import ROOT

    section = (ROOT / "README.md").read_text().split("### Seed keys not supported", 1)[1].split("\n#", 1)[0]
    assert all(f"`{name}`" in section for name in UNSUPPORTED)
