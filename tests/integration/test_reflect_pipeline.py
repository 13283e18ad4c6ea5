"""Reflect end to end on PostgreSQL, Redis and a real Celery worker: a run started over the API updates entity
pages and opinions as audited writes, one of which is rolled back; a worker SIGKILLed halfway through a run
finishes it when it starts again, with every page written exactly once."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path

import pytest
from django.utils import timezone

from guardian_app.models import Opinion, ReflectRun, WriteGuardianAudit
from guardian_app.write.history import INTERRUPTED
from reflection_site.models import ApiKey, JobCheckpoint
from tests.conftest import ApiClient
from tests.fake_llm import FakeReply, smart_responder
from tests.services import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = {
    "bank/entities/Peter.md",
    "bank/entities/The-Castle.md",
    "bank/entities/warelay.md",
    "bank/opinions.md",
    "bank/world.md",  # the log's W facts (issue 24)
    "bank/experience.md",  # its B facts
}


@pytest.fixture
def client(transactional_db) -> ApiClient:
    _, raw = ApiKey.generate("reflect-pipeline", ["read", "operate"])
    return ApiClient(raw)


@pytest.fixture
def daily_log(workspace: Path) -> Path:
    day = timezone.localdate().isoformat()
    path = workspace / "memory" / f"{day}.md"
    path.parent.mkdir(parents=True)
    path.write_text(
        f"# {day}\n\n## Retain\n"
        "- W @Peter: Currently in Marrakech (Nov 27 - Dec 1) for Andy's birthday.\n"
        "- O(c=0.95) @Peter: Prefers short replies on WhatsApp (<1500 chars); long content goes into a file.\n"
        "- B @warelay: I fixed the Baileys WS crash by wrapping connection.update in try/catch.\n"
        "- W @The-Castle: The roof leaks in the north tower.\n",
        encoding="utf-8",
    )
    return path


def _finished(run_id: str) -> ReflectRun | None:
    run = ReflectRun.objects.filter(id=run_id).first()
    return run if run is not None and run.status in ("done", "failed") else None


def _page_audits() -> dict[str, list[WriteGuardianAudit]]:
    found: dict[str, list[WriteGuardianAudit]] = {}
    for audit in WriteGuardianAudit.objects.filter(source="reflect").exclude(target_file="MEMORY.md"):
        found.setdefault(audit.target_file, []).append(audit)
    return found


def test_a_reflect_run_on_a_worker_writes_audited_pages_and_one_rolls_back(
    client, make_worker, settings, workspace, daily_log
):
    settings.LLM_BASE_URL = ""
    worker = make_worker().start()

    response = client.post("/api/v1/reflect", {"since": "7d"})
    assert response.status_code == HTTPStatus.ACCEPTED, response.content
    run = wait_until(lambda: _finished(response.json()["id"]), timeout=90, message="the reflect run to finish")

    assert run.status == "done", (run.error, worker.log()[-4000:])
    assert (run.facts_count, run.entities_count, run.pages_written, run.opinions_created) == (4, 3, 6, 1)
    audits = _page_audits()
    assert set(audits) == PAGES and all(len(a) == 1 and a[0].status == "written" for a in audits.values())
    peter = audits["bank/entities/Peter.md"][0]
    assert "Currently in Marrakech" in (workspace / "bank/entities/Peter.md").read_text()
    opinions = client.get("/api/v1/opinions", {"entity": "Peter"}).json()["items"]
    assert [o["confidence"] for o in opinions] == [0.95]
    body = client.get(f"/api/v1/reflect/runs/{run.id}").json()
    assert peter.id in body["audit_ids"]

    rolled = client.post(f"/api/v1/guardian/audits/{peter.id}/rollback", {"reason": "not him", "requested_by": "it"})

    assert rolled.status_code == HTTPStatus.OK, rolled.content
    assert not (workspace / "bank/entities/Peter.md").exists()  # The write created the page.
    peter.refresh_from_db()
    assert peter.status == "rolled_back"
    history = client.get("/api/v1/guardian/audits", {"file": "bank/entities/Peter.md"}).json()["items"]
    assert [a["status"] for a in history] == ["rolled_back"]
    report = client.get("/api/v1/reports/daily").json()
    assert report["counts"]["rolled_back"] == 1 and report["pivotal"]


def test_a_worker_killed_halfway_through_a_run_finishes_it_when_it_starts_again(
    client, fake_llm, make_worker, workspace, daily_log
):
    def slow_summaries(body: dict) -> object:
        reply = smart_responder(body)
        if "ROLE: reflect" in body["messages"][0]["content"]:
            return FakeReply(content=reply, delay=2.0)
        return reply

    fake_llm.set_default(slow_summaries)
    worker = make_worker().start()
    run_id = client.post("/api/v1/reflect", {"since": "7d"}).json()["id"]
    wait_until(
        lambda: (
            WriteGuardianAudit.objects.filter(source="reflect", source_ref__startswith=run_id)
            .exclude(status="failed", reason=INTERRUPTED)
            .exists()
        ),
        timeout=90,
        message="the first page write",
    )

    worker.kill()

    run = ReflectRun.objects.get(id=run_id)
    checkpoint = JobCheckpoint.objects.get(key=run_id)
    assert run.status == "running" and not checkpoint.is_finished, worker.log()[-3000:]
    assert len(_page_audits()) < len(PAGES)

    worker.start()  # worker_ready: the interrupted run is resumed.
    run = wait_until(lambda: _finished(run_id), timeout=120, message="the resumed run to finish")

    assert run.status == "done", (run.error, worker.log()[-4000:])
    audits = _page_audits()
    assert set(audits) == PAGES
    assert all(len(a) == 1 and a[0].status == "written" for a in audits.values()), {
        k: [(x.status, x.reason) for x in v] for k, v in audits.items()
    }
    assert JobCheckpoint.objects.get(key=run_id).attempts == 2
    assert Opinion.objects.count() == 1
    peter = (workspace / "bank/entities/Peter.md").read_text()
    assert "Currently in Marrakech (Nov 27 - Dec 1) for Andy's birthday. (`memory/" in peter  # The LLM summary.
