"""The WSGI module gunicorn imports: the URL conf loaded and the start-up objects frozen out of the collector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, json, sys
before = gc.get_freeze_count()
import reflection_site.wsgi
print(json.dumps({"before": before, "frozen": gc.get_freeze_count(), "api": "sessions_app.api" in sys.modules}))
"""


def test_importing_the_wsgi_module_loads_the_urls_and_freezes_what_start_up_made(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(WORKSPACE_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="reflection_site.settings")
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["before"] == 0
    assert probe["frozen"] > 50_000  # Django, the apps, the API: all of it out of the full collections.
    assert probe["api"]  # The URL conf, and with it every view, is imported before the first request.
