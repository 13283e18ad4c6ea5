"""The rollback model (issues 8 and 17), in the unit suite on SQLite: see tests/guardian_app/rollback_model.py
for the operations, the reference model of line ownership and what is checked after every step.

At least 2,000 steps in the default run (``MODEL_STEPS``; the long mode is ``MODEL_STEPS=20000``), and on until
the run has met a conflict, a merge, a forced rollback over a later edit, an applied session rollback and an
edit inside a line. ``MODEL_SEED`` fixes the seed (a failure prints its own). The figures are printed and
written to ``test-output/reliability/rollback_model.json``; the same model runs on PostgreSQL in
tests/integration/test_rollback_model_postgres.py.
"""

from __future__ import annotations

import json
import os
import random

import pytest

from tests.guardian_app.rollback_model import FIGURES, MUST_MEET, run_model
from tests.services import ROOT

pytestmark = pytest.mark.django_db

MODEL_STEPS = int(os.environ.get("MODEL_STEPS", "2000"))
REPORT_DIR = ROOT / "test-output" / "reliability"


@pytest.mark.timeout(600 + MODEL_STEPS // 5)  # About 50 ms a step; the long mode runs for many minutes.
def test_the_rollback_model_holds_for_at_least_the_configured_steps(make_decision, settings, capsys):
    settings.WRITE_GUARDIAN_ENABLE_ROLLBACK = True
    seed = int(os.environ.get("MODEL_SEED") or random.randrange(2**31))
    with capsys.disabled():
        print(f"\nrollback model: seed {seed} (MODEL_SEED={seed} reruns it)")
    figures = run_model(MODEL_STEPS, seed=seed, make_decision=make_decision)
    figures["database"] = "sqlite"
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "rollback_model.json").write_text(json.dumps(figures, indent=2) + "\n")
    with capsys.disabled():
        print("rollback model:", json.dumps(figures))
    assert figures["steps"] >= MODEL_STEPS and figures["lost"] == 0
    assert all(FIGURES[kind] for kind in MUST_MEET), {kind: FIGURES[kind] for kind in MUST_MEET}
