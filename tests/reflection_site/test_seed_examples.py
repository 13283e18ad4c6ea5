"""Seed 000's CLI examples, replayed as written: every ``/reflection <group> …`` line of the seed's
``Examples:`` blocks (gate, guardian, dataset) runs as ``python manage.py <group> …`` with real ids put in
place of ``<decision-id>``, ``<audit-id>`` and ``<sample-id>``, and must exit 0.

The examples are read from the seed file itself, so an example added to the seed is replayed too. They run
through Django's ``ManagementUtility``, the entry point ``manage.py`` calls, so argument parsing and exit
codes are those of the command line.
"""

from __future__ import annotations

import io
import shlex
import sys
from pathlib import Path

import pytest
from django.core.management import ManagementUtility
from django.db import connections
from django.utils import timezone

from dataset_app.models import DatasetSample
from guardian_app.write.guardian import write_fact
from sessions_app.models import ConversationSession, ConversationTurn, GateStatus, MemoryGateDecision

pytestmark = pytest.mark.django_db

SEEDS = Path("/work/shared/seeds")
SEED_DIR = SEEDS if SEEDS.is_dir() else Path(__file__).resolve().parents[2] / "seeds"
GROUPS = ("gate", "guardian", "dataset")
# Examples that cannot run as written, with the reason (none today: every example runs).
IMPOSSIBLE: dict[str, str] = {}


def seed_examples() -> list[list[str]]:
    """The argument lists of every ``/reflection …`` line in the seed's ``Examples:`` blocks, in order."""
    files = sorted(SEED_DIR.glob("000_*.txt"))
    if not files:
        return []
    examples: list[list[str]] = []
    inside = False
    for line in files[0].read_text(encoding="utf-8").splitlines():
        if line.strip() == "Examples:":
            inside = True
            continue
        if inside and line.strip().startswith("/reflection "):
            examples.append(shlex.split(line.strip(), comments=True)[1:])
        elif inside and line.strip():
            inside = False
    return examples


def test_the_seed_has_examples_for_each_group():
    examples = seed_examples()
    assert examples, f"no Examples: block found in {SEED_DIR}/000_*.txt"
    assert {args[0] for args in examples} == set(GROUPS)
    assert ["guardian", "rollback", "<audit-id>"] in examples


def run(argv: list[str], stdin: str = "") -> int:
    """``python manage.py <argv>`` in this process: its exit code (0 when the command returns)."""
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        ManagementUtility(["manage.py", *argv]).execute()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin = old_stdin
    return 0


def test_every_seed_example_runs_as_written(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    # run_from_argv closes the database connections when a command ends (a process exits next); here the
    # test's transaction lives on, so they stay open (on PostgreSQL closing them ends the test's transaction).
    monkeypatch.setattr(connections, "close_all", lambda: None)
    session = ConversationSession.objects.create(id="channel:test:alice", channel_id="test")
    turn = ConversationTurn.objects.create(
        session=session,
        turn_number=1,
        user_message_content="Please remember that I prefer tea in the afternoon.",
        agent_message_content="Noted: tea in the afternoon.",
        gate_status=GateStatus.DONE,
    )
    decision = MemoryGateDecision.objects.create(
        turn=turn,
        session=session,
        decision="UPDATE_USER",
        reason="a stable preference",
        candidate_fact="Prefers tea in the afternoon.",
        llm_model="test",
        created_at=timezone.now(),
    )
    audit = write_fact(decision)
    assert audit.status == "written"
    ids = {"<decision-id>": decision.id, "<audit-id>": audit.id}

    ran = []
    for args in seed_examples():
        line = " ".join(args)
        if line in IMPOSSIBLE:
            continue
        if "<sample-id>" in args:  # the samples exist once the seed's own `dataset collect` example ran
            ids["<sample-id>"] = DatasetSample.objects.order_by("created_at", "id").values_list("id", flat=True)[0]
        argv = [ids.get(arg, arg) for arg in args]
        # `dataset review` is interactive: it reads a key per sample; "q" quits.
        code = run(argv, stdin="q\n")
        out = capsys.readouterr()
        assert code == 0, f"`python manage.py {' '.join(argv)}` exited {code}: {out.err[-2000:]}"
        ran.append(line)

    assert len(ran) >= 17
    audit.refresh_from_db()
    assert audit.status == "rolled_back"  # `guardian rollback <audit-id>` did roll it back
    assert (tmp_path / "sft-data.jsonl").exists() or any(tmp_path.glob("sft-data*.jsonl"))
    assert DatasetSample.objects.exists()
