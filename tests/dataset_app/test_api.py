"""The dataset API under /api/v1/dataset/: thin tests over the domain modules."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest
from django.urls import reverse

from dataset_app.models import DatasetExport, DatasetSample, EvaluationRun
from tests.dataset_app.conftest import EMAIL
from tests.dataset_app.factories import SampleFactory, written_decision

pytestmark = pytest.mark.django_db


def test_collect_then_list_samples(api_client):
    written_decision(days=10)

    dry = api_client.post(reverse("api:collect_samples"), {"dry_run": True})
    assert dry.status_code == HTTPStatus.OK
    assert dry.json()["created"] == 2 and DatasetSample.objects.count() == 0

    done = api_client.post(reverse("api:collect_samples"), {"type": "positive", "auto_approve": True}).json()
    assert done["by_type"] == {"memory_gate_positive": 1}
    assert done["by_status"] == {"auto_approved": 1}

    listing = api_client.get(reverse("api:list_samples")).json()
    assert [s["sample_type"] for s in listing["items"]] == ["memory_gate_positive"]
    assert listing["next_cursor"] is None


def test_collect_needs_the_operate_scope(client_for):
    response = client_for("read").post(reverse("api:collect_samples"), {})
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert response.json()["error"]["code"] == "forbidden"


def test_collect_refuses_an_unknown_type(api_client):
    response = api_client.post(reverse("api:collect_samples"), {"type": "everything"})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["error"]["code"] == "validation_error"


def test_list_filters_and_cursor(api_client):
    for quality in (0.2, 0.5, 0.9):
        SampleFactory(quality_score=quality, annotation_status="needs_review")
    SampleFactory(
        quality_score=0.95, annotation_status="approved", sample_type="annotated_turn", source_key="annotated_turn:t"
    )

    def ids(**query):
        return [s["id"] for s in api_client.get(reverse("api:list_samples"), query).json()["items"]]

    assert len(ids(needs_review=True)) == 3
    assert len(ids(status="approved")) == 1
    assert len(ids(type="annotated_turn")) == 1
    assert len(ids(type="positive", quality_above=0.4)) == 2
    first = api_client.get(reverse("api:list_samples"), {"limit": 2}).json()
    second = api_client.get(reverse("api:list_samples"), {"limit": 2, "cursor": first["next_cursor"]}).json()
    assert len({s["id"] for s in first["items"] + second["items"]}) == 4
    assert (
        api_client.get(reverse("api:list_samples"), {"status": "bogus"}).status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    )


def test_a_sample_is_served_redacted(api_client, dataset):
    sample = DatasetSample.objects.filter(contains_pii=True).first()

    body = api_client.get(reverse("api:get_sample", args=[sample.id])).json()

    assert body["contains_pii"] is True
    assert EMAIL not in json.dumps(body)
    assert "[EMAIL]" in json.dumps(body["content"])


def test_unknown_sample_is_404(api_client):
    response = api_client.get(reverse("api:get_sample", args=["nope"]))
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json()["error"]["code"] == "not_found"


def test_approve_and_reject_need_the_annotate_scope(api_client, client_for):
    sample = SampleFactory()
    url = reverse("api:approve_sample", args=[sample.id])

    assert client_for("read", "operate").post(url, {"annotated_by": "x"}).status_code == HTTPStatus.FORBIDDEN
    approved = client_for("annotate").post(url, {"annotated_by": "alice", "notes": "good"})
    assert approved.status_code == HTTPStatus.OK
    assert approved.json()["annotation_status"] == "approved"
    assert approved.json()["annotated_by"] == "alice"

    rejected = api_client.post(reverse("api:reject_sample", args=[sample.id]), {"annotated_by": "bob"})
    assert rejected.json()["annotation_status"] == "rejected"
    assert rejected.json()["annotation_notes"] == "good"


@pytest.mark.parametrize("annotator", ["", "   ", "\x1e", " \x1c\x1f\t"])
def test_annotation_needs_an_annotator_refused_by_the_schema_itself(api_client, annotator):
    # U+001C-U+001F are not Unicode White_Space (a schema's \s) but Python strips them: the schema says so now.
    sample = SampleFactory()
    response = api_client.post(reverse("api:approve_sample", args=[sample.id]), {"annotated_by": annotator})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["error"]["code"] == "validation_error"
    sample.refresh_from_db()
    assert sample.annotation_status == "pending" and sample.annotated_by is None


def test_an_annotator_name_is_stored_stripped(api_client):
    sample = SampleFactory()
    response = api_client.post(reverse("api:reject_sample", args=[sample.id]), {"annotated_by": "\x1e ada \x1f"})
    assert response.status_code == HTTPStatus.OK, response.content
    assert response.json()["annotated_by"] == "ada"


def test_stats_by_type_status_and_day(api_client):
    SampleFactory.create_batch(2)
    SampleFactory(sample_type="annotated_turn", source_key="annotated_turn:1", annotation_status="approved")

    by_type = api_client.get(reverse("api:dataset_stats"), {"by": "type"}).json()
    assert by_type["total"] == 3
    assert {r["key"]: r["count"] for r in by_type["rows"]}["memory_gate_positive"] == 2
    assert len(by_type["rows"]) == 4
    by_status = api_client.get(reverse("api:dataset_stats"), {"by": "status"}).json()
    assert {r["key"]: r["count"] for r in by_status["rows"]}["approved"] == 1
    daily = api_client.get(reverse("api:dataset_stats"), {"by": "daily"}).json()
    assert daily["total"] == 3 and len(daily["rows"]) == 1
    assert api_client.get(reverse("api:dataset_stats"), {"by": "week"}).status_code == HTTPStatus.UNPROCESSABLE_ENTITY


def test_quality_distribution(api_client):
    for quality in (0.05, 0.55, 0.56, 1.0, None):
        SampleFactory(quality_score=quality)

    body = api_client.get(reverse("api:dataset_quality")).json()

    assert body["count"] == 4 and body["unscored"] == 1
    assert [b["count"] for b in body["buckets"]] == [1, 0, 0, 0, 0, 2, 0, 0, 0, 1]
    assert body["buckets"][0] == {"from": 0.0, "to": 0.1, "count": 1}
    assert body["median"] == pytest.approx(0.555)
    assert body["below_min_quality"] == 3


def test_export_runs_on_a_worker_and_is_downloaded(api_client, dataset, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api_client.post(reverse("api:create_export"), {"format": "openai", "name": "api-export"})
    assert response.status_code == HTTPStatus.ACCEPTED
    export_id = response.json()["id"]
    assert response.json()["status"] == "pending"
    assert len(callbacks) == 1

    not_ready = api_client.get(reverse("api:download_export", args=[export_id]))
    assert not_ready.status_code == HTTPStatus.CONFLICT

    from dataset_app.tasks import run_export

    run_export(export_id)  # what the worker does
    body = api_client.get(reverse("api:get_export", args=[export_id])).json()
    assert body["status"] == "completed" and body["progress"] == 100
    assert [f["split"] for f in body["files"]] == ["train", "validation"]
    assert all(len(f["sha256"]) == 64 for f in body["files"])

    train = api_client.get(reverse("api:download_export", args=[export_id]), {"split": "train"})
    assert train.status_code == HTTPStatus.OK
    train_bytes = b"".join(train.streaming_content)
    assert train_bytes.count(b"\n") == body["train_samples"]
    every = api_client.get(reverse("api:download_export", args=[export_id]), {"split": "all"})
    assert b"".join(every.streaming_content).count(b"\n") == body["total_samples"]


def test_export_download_needs_the_operate_scope(client_for, dataset):
    from dataset_app.exports import create_export, run_export

    export = run_export(create_export(export_format="csv", name="scoped").id)
    reader = client_for("read")
    assert reader.get(reverse("api:get_export", args=[export.id])).status_code == HTTPStatus.OK
    assert reader.get(reverse("api:download_export", args=[export.id])).status_code == HTTPStatus.FORBIDDEN
    both = client_for("operate").get(reverse("api:download_export", args=[export.id]), {"split": "all"})
    text = b"".join(both.streaming_content).decode()
    assert text.count("id,sample_type,stage") == 1  # one CSV header


def test_a_missing_export_file_is_410(api_client, dataset):
    from pathlib import Path

    from dataset_app.exports import create_export, run_export

    export = run_export(create_export(export_format="openai", name="gone").id)
    Path(export.files[0]["path"]).unlink()
    assert api_client.get(reverse("api:download_export", args=[export.id])).status_code == HTTPStatus.GONE


def test_bad_export_options_are_422(api_client):
    for body in ({"format": "parquet"}, {"format": "openai", "name": "a/b"}, {"format": "openai", "train_split": 0}):
        response = api_client.post(reverse("api:create_export"), body)
        assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY, body
    assert DatasetExport.objects.count() == 0


def test_evaluations_are_listed_and_started(api_client, django_capture_on_commit_callbacks):
    EvaluationRun.objects.create(stage="gate", status="completed", accuracy=0.8, sample_count=5)

    listing = api_client.get(reverse("api:list_evaluations")).json()
    assert [r["accuracy"] for r in listing["items"]] == [0.8]

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        started = api_client.post(reverse("api:start_evaluation"), {"stage": "gate", "split": "all", "offline": True})
    assert started.status_code == HTTPStatus.ACCEPTED
    assert started.json()["status"] == "pending"
    assert len(callbacks) == 1
    assert api_client.get(reverse("api:list_evaluations"), {"stage": "guardian"}).json()["items"] == []


@pytest.mark.parametrize(
    ("url", "body", "task"),
    [
        ("api:create_export", {"format": "openai", "name": "broker-down"}, "dataset_app.tasks.run_export"),
        (
            "api:start_evaluation",
            {"stage": "gate", "split": "all", "offline": True},
            "dataset_app.tasks.run_evaluation",
        ),
    ],
)
def test_a_dead_broker_leaves_the_job_pending_for_the_sweep(
    api_client, django_capture_on_commit_callbacks, sent_tasks, caplog, url, body, task
):
    """Django logs a failed robust on_commit callback by its ``__qualname__``: a ``functools.partial`` has none,
    so the hand-off used to turn a dead broker into a 500 (issue 20)."""
    from kombu.exceptions import OperationalError

    sent_tasks.error = OperationalError("[Errno 111] Connection refused")
    with caplog.at_level("ERROR", logger="django.db.backends.base"), django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(reverse(url), body)

    assert response.status_code == HTTPStatus.ACCEPTED, response.content
    assert response.json()["status"] == "pending"
    assert "Connection refused" in caplog.text


def test_the_api_shows_annotation_notes_redacted_as_the_review_page_does(api_client):
    """A reviewer's note may quote the turn: the API answers what the review page and the CLI show (issue 20)."""
    sample = SampleFactory(annotation_notes="Mail sent to anna.berg@example.com was the bug.")
    body = api_client.get(reverse("api:get_sample", args=[sample.id])).json()
    assert "anna.berg@example.com" not in body["annotation_notes"]
    assert body["annotation_notes"] == sample.visible_notes()
