"""The rollback model (issue 17) on PostgreSQL: the same state machine and reference model of line ownership as
the unit suite's (tests/guardian_app/rollback_model.py), with PostgreSQL's row locks, savepoints and ordering.

``MODEL_STEPS`` sets the steps here too (default 500: the integration suite runs beside the other services'
tests); ``MODEL_SEED`` fixes the seed. Figures: ``test-output/reliability/rollback_model_postgres.json``.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from django.db import connection

from tests.guardian_app.conftest import make_decision  # noqa: F401 - the fixture.
from tests.guardian_app.rollback_model import FIGURES, MUST_MEET, run_model
from tests.services import ROOT

pytestmark = pytest.mark.django_db

MODEL_STEPS = int(os.environ.get("MODEL_STEPS", "500"))


@pytest.mark.timeout(900 + MODEL_STEPS // 4)
def test_the_rollback_model_holds_on_postgresql(make_decision, settings, capsys):  # noqa: F811 - the fixture.
    assert connection.vendor == "postgresql"
    settings.WRITE_GUARDIAN_ENABLE_ROLLBACK = True
    settings.LLM_BASE_URL = ""  # The offline guardian: the model tests rollback, not the LLM.
    seed = int(os.environ.get("MODEL_SEED") or random.randrange(2**31))
    with capsys.disabled():
        print(f"\nrollback model on PostgreSQL: seed {seed} (MODEL_SEED={seed} reruns it)")
    figures = run_model(MODEL_STEPS, seed=seed, make_decision=make_decision)
    figures["database"] = "postgresql"
    out = ROOT / "test-output" / "reliability"
    out.mkdir(parents=True, exist_ok=True)
    (out / "rollback_model_postgres.json").write_text(json.dumps(figures, indent=2) + "\n")
    with capsys.disabled():
        print("rollback model on PostgreSQL:", json.dumps(figures))
    assert figures["steps"] >= MODEL_STEPS and figures["lost"] == 0
    assert all(FIGURES[kind] for kind in MUST_MEET), {kind: FIGURES[kind] for kind in MUST_MEET}
