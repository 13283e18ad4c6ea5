"""The dataset end to end on PostgreSQL, Redis and a real worker: turns through the API, the gate and the
guardian on the worker, then `dataset collect` and an openai export written by the worker, downloaded,
loaded by Hugging Face `datasets`, with no e-mail address or secret in it; plus the review view."""

from __future__ import annotations

import datetime as dt
import json
from http import HTTPStatus

import pytest
from datasets import load_dataset
from django.db import connection
from django.utils import timezone

from dataset_app.models import DatasetExport, DatasetSample
from guardian_app.models import WriteGuardianAudit
from reflection_site.models import ApiKey
from sessions_app.models import ConversationTurn, GateStatus
from tests.conftest import ApiClient, turn_payload
from tests.dataset_app.conftest import check_openai_line
from tests.services import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "frank.ocean@example.com"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TURNS = [
    "I prefer summaries on Fridays.",
    "My name is Frank and I live in Porto.",
    f"My email is {EMAIL}, please remember it.",
    f"Remember that my GitHub token is {SECRET}",
    "Thanks, that's all for today!",
    "Use make deploy to ship the staging build.",
    "I am vegetarian, so no meat suggestions please.",
    "What's the weather like?",
]


@pytest.fixture
def client(transactional_db) -> ApiClient:
    _, raw = ApiKey.generate("dataset-pipeline", ["ingest", "read", "operate", "annotate"])
    return ApiClient(raw)


def test_a_day_of_turns_becomes_a_loadable_redacted_openai_dataset(client, make_worker, settings, tmp_path):
    settings.LLM_BASE_URL = ""
    worker = make_worker().start()
    ids = [
        client.post("/api/v1/turns", turn_payload(session_id=f"channel:it:u{i % 3}", user=text)).json()["id"]
        for i, text in enumerate(TURNS)
    ]
    wait_until(
        lambda: ConversationTurn.objects.filter(id__in=ids, gate_status=GateStatus.DONE).count() == len(ids),
        timeout=90,
        message="the worker to decide every turn",
    )
    proposed = ConversationTurn.objects.filter(id__in=ids, decisions__decision__startswith="UPDATE_").distinct().count()
    wait_until(
        lambda: WriteGuardianAudit.objects.filter(turn_id__in=ids).count() >= proposed,
        timeout=90,
        message="the guardian to audit every proposed write",
    )
    # A day later the writes have stood the (shortened) window; feedback arrived on one turn.
    settings.DATASET_NOT_ROLLED_BACK_WITHIN_DAYS = 1
    WriteGuardianAudit.objects.update(created_at=timezone.now() - dt.timedelta(days=2))
    ConversationTurn.objects.filter(id=ids[0]).update(
        feedback_json={
            "events": [{"user_id": "u0", "feedback": "up", "reason": None, "at": "2026-01-01T00:00:00Z"}],
            "last": "up",
        }
    )

    collected = client.post("/api/v1/dataset/collect", {}).json()
    assert collected["created"] >= 4, (collected, worker.log()[-3000:])
    assert client.post("/api/v1/dataset/collect", {}).json()["created"] == 0  # never twice

    accepted = client.post("/api/v1/dataset/exports", {"format": "openai", "name": "day-one", "train_split": 0.5})
    assert accepted.status_code == HTTPStatus.ACCEPTED
    export_id = accepted.json()["id"]
    export = wait_until(
        lambda: DatasetExport.objects.filter(id=export_id, status="completed").first(),
        timeout=90,
        message="the worker to write the export",
    )
    assert export.total_samples == DatasetSample.objects.exclude(annotation_status="rejected").count()

    files = {}
    for split in ("train", "validation"):
        response = client.get(f"/api/v1/dataset/exports/{export_id}/download", {"split": split})
        assert response.status_code == HTTPStatus.OK
        path = tmp_path / f"{split}.jsonl"
        path.write_bytes(b"".join(response.streaming_content))
        files[split] = str(path)
    text = "".join(open(p, encoding="utf-8").read() for p in files.values())
    assert EMAIL not in text and SECRET not in text
    for line in text.splitlines():
        assert check_openai_line(line) == [], line
    loaded = load_dataset(
        "json", data_files={k: v for k, v in files.items() if open(v).read()}, cache_dir=str(tmp_path / "hf")
    )
    assert sum(len(split) for split in loaded.values()) == export.total_samples
    assert json.loads(loaded[next(iter(loaded))][0]["messages"][2]["content"])["decision"]


def test_the_pending_review_view_on_postgresql(client):
    from tests.dataset_app.factories import SampleFactory

    best = SampleFactory(annotation_status="needs_review", quality_score=0.9)
    unscored = SampleFactory(annotation_status="needs_review", quality_score=None)
    middle = SampleFactory(annotation_status="needs_review", quality_score=0.5)
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, memory_gate_decision FROM pending_review_samples")
        assert [row[0] for row in cursor.fetchall()] == [best.id, middle.id, unscored.id]
    listed = client.get("/api/v1/dataset/samples", {"needs_review": True}).json()["items"]
    assert {row["id"] for row in listed} == {best.id, middle.id, unscored.id}
