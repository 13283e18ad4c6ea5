"""The write guardian end to end on PostgreSQL, Redis and a real Celery worker: turn -> gate -> guardian ->
rollback, with the offline guardian and with an OpenAI-compatible endpoint; a worker killed mid-write
writes the fact exactly once after the sweep."""

from __future__ import annotations

import time
from http import HTTPStatus
from pathlib import Path

import pytest

from guardian_app.models import FileVersion, WriteGuardianAudit
from guardian_app.tasks import run_guardian
from guardian_app.write.history import INTERRUPTED
from guardian_app.write.recovery import sweep_pending_decisions
from reflection_site.models import ApiKey
from sessions_app.models import MemoryGateDecision
from tests.conftest import ApiClient, turn_payload
from tests.fake_llm import FakeReply, guardian_responder, smart_responder
from tests.services import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(transactional_db) -> ApiClient:
    _, raw = ApiKey.generate("guardian-pipeline", ["ingest", "read", "operate"])
    return ApiClient(raw)


def _audit_of(turn_id: str) -> WriteGuardianAudit | None:
    """The turn's audit once its write is finished (a write in flight shows as its write-ahead record)."""
    audit = WriteGuardianAudit.objects.filter(turn_id=turn_id, retry_of__isnull=True).first()
    if audit is None or (audit.status == "failed" and audit.reason == INTERRUPTED):
        return None
    return audit


def _post(client: ApiClient, user: str, n: int) -> str:
    response = client.post("/api/v1/turns", turn_payload(user=user, agent=f"Noted ({n})."))
    assert response.status_code == HTTPStatus.CREATED, response.content
    return response.json()["id"]


def test_turn_gate_guardian_rollback_keeps_later_facts_and_hand_edits(client, make_worker, settings, workspace: Path):
    settings.LLM_BASE_URL = ""
    worker = make_worker().start()
    user_md = workspace / "USER.md"

    first_turn = _post(client, "I prefer summaries on Fridays.", 1)
    first = wait_until(lambda: _audit_of(first_turn), timeout=60, message="the first audit")
    assert first.status == "written", (first.reason, worker.log()[-3000:])
    assert first.llm_model == "heuristic-guardian-v1" and first.decision_id
    assert "- Prefers summaries on Fridays." in user_md.read_text()

    second_turn = _post(client, "I like green tea in the afternoon.", 2)
    second = wait_until(lambda: _audit_of(second_turn), timeout=60, message="the second audit")
    assert second.status == "written", second.reason
    user_md.write_text(user_md.read_text() + "\n## Health\n\n- Allergic to peanuts (typed by hand).\n")

    diff = client.get(f"/api/v1/guardian/audits/{first.id}/diff")
    assert diff["Content-Type"].startswith("text/x-diff") and b"+- Prefers summaries on Fridays." in diff.content

    response = client.post(f"/api/v1/guardian/audits/{first.id}/rollback", {"reason": "wrong", "requested_by": "it"})
    assert response.status_code == HTTPStatus.OK, response.content
    text = user_md.read_text()
    assert "summaries on Fridays" not in text
    assert second.candidate_fact in text and "Allergic to peanuts" in text

    # An overlapping hand edit: a clear conflict that changes nothing.
    user_md.write_text(text.replace(second.candidate_fact, second.candidate_fact.replace("tea", "coffee")))
    edited = user_md.read_text()
    conflict = client.post(f"/api/v1/guardian/audits/{second.id}/rollback", {"reason": "wrong"})
    assert conflict.status_code == HTTPStatus.CONFLICT
    assert conflict.json()["error"]["code"] == "rollback_conflict"
    assert len(conflict.json()["error"]["details"]["hand_edits"]) == 1
    assert user_md.read_text() == edited

    kinds = [v["kind"] for v in client.get("/api/v1/guardian/files/USER.md/history").json()["items"]]
    assert kinds == ["hand_edit", "rollback", "hand_edit", "write", "write"]


def test_the_llm_guardian_writes_through_the_worker(client, fake_llm, make_worker, workspace: Path):
    worker = make_worker().start()

    turn = _post(client, "Remember that the demo is on Thursday.", 1)
    audit = wait_until(lambda: _audit_of(turn), timeout=60, message="the audit")
    assert audit.status == "written", (audit.reason, worker.log()[-3000:])
    assert (audit.llm_model, audit.prompt_version, audit.agent_steps) == ("fake-model-1", "guardian-v1", 1)
    assert audit.target_file == "MEMORY.md"
    assert audit.candidate_fact in (workspace / "MEMORY.md").read_text()
    assert any("ROLE: write_guardian" in r["messages"][0]["content"] for r in fake_llm.chat_requests)


def test_a_worker_killed_mid_write_writes_the_fact_once(client, fake_llm, make_worker, workspace: Path):
    slow_once: list[int] = []

    def respond(body: dict) -> object:
        if "ROLE: write_guardian" in body["messages"][0]["content"] and not slow_once:
            slow_once.append(1)
            return FakeReply(content=guardian_responder(body), delay=30)
        return smart_responder(body)

    fake_llm.set_default(respond)
    first = make_worker().start()

    turn = _post(client, "I prefer summaries on Fridays.", 1)
    wait_until(lambda: slow_once, timeout=60, message="the guardian to call the LLM")
    first.kill()
    assert not WriteGuardianAudit.objects.filter(turn_id=turn).exists()
    decision_id = MemoryGateDecision.objects.get(turn_id=turn).id

    second = make_worker().start()
    # Redis does not redeliver the killed worker's message before its visibility timeout: the sweep does.
    assert sweep_pending_decisions(grace_s=0) == 1
    audit = wait_until(lambda: _audit_of(turn), timeout=60, message="the swept decision's audit")
    assert audit.status == "written", (audit.reason, second.log()[-3000:])

    run_guardian.delay(decision_id)  # A late redelivery of the original message.
    run_guardian.delay(decision_id)
    time.sleep(3)
    assert WriteGuardianAudit.objects.filter(decision_id=decision_id).count() == 1
    assert (workspace / "USER.md").read_text().count("Prefers summaries on Fridays.") == 1
    assert FileVersion.objects.filter(file_name="USER.md", kind="write").count() == 1


@pytest.mark.slow
def test_eight_processes_append_to_one_file_on_postgresql(transactional_db, workspace: Path, settings):
    """The advisory lock and the row lock on PostgreSQL: no write lost, each before-snapshot the previous version."""
    import json
    import os
    import subprocess
    import sys

    from tests.services import ROOT, database_url

    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "WORKSPACE_DIR": str(workspace),
        "LLM_BASE_URL": "",
        "DJANGO_SETTINGS_MODULE": "reflection_site.settings",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.guardian_app.procs", "append", f"pg{w}", "3"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(8)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        results += json.loads(out.strip().splitlines()[-1])["results"]
    assert [r["status"] for r in results] == ["written"] * 24
    text = (workspace / "USER.md").read_text()
    assert all(text.count(r["fact"]) == 1 for r in results)
    versions = list(FileVersion.objects.filter(file_name="USER.md").order_by("seq").select_related("audit"))
    assert [v.seq for v in versions] == list(range(1, 25))
    previous = None
    for version in versions:
        assert version.audit.before_snapshot_id == previous
        previous = version.snapshot_id
