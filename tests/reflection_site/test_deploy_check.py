"""``manage.py check --deploy --fail-level WARNING`` passes with the production settings the README gives.

The settings are read from the README's block that starts with the line ``PRODUCTION_SETTINGS_MARKER``, so the
documentation and this test cannot drift apart; until that block is in the README, the copy below stands in
for it. The check runs in a subprocess with only those variables set (and a scratch workspace), as a fresh
production host would run it. Without them the same check fails, which shows the variables are what matter.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_SETTINGS_MARKER = "# Production settings (tests/reflection_site/test_deploy_check.py checks them)"
# The block as it appears in the README (the values a host replaces are placeholders of the right shape).
DOCUMENTED = """
DEBUG=false
SECRET_KEY=<50 or more random characters: python -c "import secrets; print(secrets.token_urlsafe(50))">
ALLOWED_HOSTS=reflection.example.com
CSRF_TRUSTED_ORIGINS=https://reflection.example.com
BEHIND_TLS_PROXY=true
SECURE_SSL_REDIRECT=true
SECURE_HSTS_SECONDS=31536000
SECURE_HSTS_INCLUDE_SUBDOMAINS=true
SECURE_HSTS_PRELOAD=true
SESSION_COOKIE_SECURE=true
CSRF_COOKIE_SECURE=true
DATABASE_URL=postgres://reflection@db.example.com:5432/reflection
REDIS_URL=redis://redis.example.com:6379/0
"""


def production_settings() -> dict[str, str]:
    """NAME=value lines of the README's production block (or of the stand-in copy), placeholders filled."""
    readme = (ROOT / "README.md").read_text()
    text = DOCUMENTED
    if PRODUCTION_SETTINGS_MARKER in readme:
        block = readme.split(PRODUCTION_SETTINGS_MARKER, 1)[1]
        text = block.split("```", 1)[0]
    values = {}
    for line in text.splitlines():
        match = re.match(r"^\s*([A-Z][A-Z0-9_]*)=(.*?)\s*(#.*)?$", line)
        if match:
            name, value = match.group(1), match.group(2)
            if value.startswith("<"):
                value = secrets.token_urlsafe(50)  # A placeholder: the host puts a real one there.
            values[name] = value
    return values


def run_check(env: dict[str, str], workspace: Path) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workspace), "WORKSPACE_DIR": str(workspace)}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_production_settings_name_the_hardening_variables() -> None:
    settings = production_settings()
    for name in ("DEBUG", "ALLOWED_HOSTS", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SESSION_COOKIE_SECURE"):
        assert name in settings, f"the production settings lack {name}"
    assert settings["DEBUG"].lower() in ("false", "0", "no")


@pytest.mark.slow
def test_check_deploy_passes_with_the_documented_production_settings(tmp_path: Path) -> None:
    result = run_check(production_settings(), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.slow
def test_check_deploy_passes_with_the_generated_secret_key(tmp_path: Path) -> None:
    """A host that sets no SECRET_KEY gets one generated into the data dir; it must pass the check too."""
    env = {k: v for k, v in production_settings().items() if k != "SECRET_KEY"}
    result = run_check(env, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    key_file = tmp_path / ".openclaw-reflection" / "secret_key"
    assert key_file.stat().st_mode & 0o777 == 0o600


@pytest.mark.slow
def test_check_deploy_fails_without_them(tmp_path: Path) -> None:
    result = run_check({}, tmp_path)
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr
