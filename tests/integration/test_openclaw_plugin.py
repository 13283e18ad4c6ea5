"""The OpenClaw plugin's own unit tests (integrations/openclaw/test, node's built-in test runner), run on the
Node 24 that requirements-dev.txt installs, so that CI runs them with the rest."""

from __future__ import annotations

import re
import subprocess

from tests import openclaw_harness


def test_the_plugin_unit_tests_pass_under_node_24():
    assert openclaw_harness.node_version()[:2] >= openclaw_harness.MIN_NODE
    result = subprocess.run(
        [str(openclaw_harness.node()), "--test", "test/*.test.js"],
        cwd=openclaw_harness.PLUGIN_DIR,
        env=openclaw_harness.node_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    passed = re.search(r"^ℹ pass (\d+)$", result.stdout, re.MULTILINE)
    assert passed and int(passed.group(1)) >= 15, result.stdout[-2000:]
    assert re.search(r"^ℹ fail 0$", result.stdout, re.MULTILINE)
