"""The dataset in the admin: the keyboard review queue, redaction and permissions, charts, import-export."""

from __future__ import annotations

import re
from http import HTTPStatus

import pytest
import tablib
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from dataset_app.admin.resources import DatasetSampleResource
from dataset_app.models import DatasetExport, DatasetSample, EvaluationRun
from tests.dataset_app.factories import SampleFactory

pytestmark = pytest.mark.django_db

EMAIL = "erin@example.com"


def queue_sample(quality: float | None, *, email: bool = False, **kw) -> DatasetSample:
    message = f"My email is {EMAIL}, I prefer tea." if email else "I prefer tea."
    content = {
        "type": "memory_gate_positive",
        "conversation": [
            {"role": "agent", "message": "Morning! What would you like?"},
            {"role": "user", "message": message},
            {"role": "agent", "message": "Tea it is."},
        ],
        "correctDecision": "UPDATE_USER",
        "correctFact": "Prefers tea.",
        "reason": "A preference.",
        "targetFile": "USER.md",
        "evidence": {"wasWritten": True, "userFeedback": None},
    }
    redacted = None
    if email:
        redacted = {
            **content,
            "conversation": [
                *content["conversation"][:1],
                {"role": "user", "message": "My email is [EMAIL], I prefer tea."},
                content["conversation"][2],
            ],
        }
    return SampleFactory(
        quality_score=quality,
        annotation_status="needs_review",
        content=content,
        contains_pii=email,
        pii_redacted_content=redacted,
        **kw,
    )


def user_with(*codenames: str, username: str = "ann") -> Client:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


ANNOTATOR = ("view_datasetsample", "change_datasetsample", "annotate_datasetsample")


def review_url(sample: DatasetSample | None = None) -> str:
    if sample is None:
        return reverse("admin:dataset_app_datasetsample_review")
    return reverse("admin:dataset_app_datasetsample_review_sample", args=[sample.id])


def test_the_queue_starts_with_the_best_sample(admin_client):
    queue_sample(0.6)
    best = queue_sample(0.9)
    queue_sample(None)
    SampleFactory(quality_score=0.99, annotation_status="pending")  # not in the queue

    response = admin_client.get(review_url())

    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == review_url(best)


def test_the_review_page_shows_a_conversation_as_chat_bubbles(admin_client):
    sample = queue_sample(0.9)

    page = admin_client.get(review_url(sample)).content.decode()

    assert page.count('class="ds-bubble ds-user ds-current"') == 1
    assert page.count("ds-bubble ds-agent") == 2
    assert "I prefer tea." in page
    assert "Prefers tea." in page and "UPDATE_USER" in page
    assert "1 of 1" in page
    assert "dataset_app/review.js" in page
    for key in ("<kbd>a</kbd>", "<kbd>r</kbd>", "<kbd>n</kbd>"):
        assert key in page
    assert '"conversation"' not in page  # not raw JSON


def test_approving_saves_and_opens_the_next_sample(client):
    reviewer = user_with(*ANNOTATOR)
    first, second = queue_sample(0.9), queue_sample(0.5)

    response = reviewer.post(review_url(first), {"action": "approve", "notes": "fine"})

    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == review_url(second)
    first.refresh_from_db()
    assert (first.annotation_status, first.annotated_by, first.annotation_notes) == ("approved", "ann", "fine")
    assert first.annotated_at is not None


def test_reject_and_needs_review_save_and_move_on_until_the_queue_is_clear():
    reviewer = user_with(*ANNOTATOR)
    a, b, c = queue_sample(0.9), queue_sample(0.8), queue_sample(0.7)

    assert reviewer.post(review_url(a), {"action": "reject"})["Location"] == review_url(b)
    assert reviewer.post(review_url(b), {"action": "needs_review"})["Location"] == review_url(c)
    # b is still in the queue: after the last one the queue comes round to it
    assert reviewer.post(review_url(c), {"action": "approve"})["Location"] == review_url(b)
    assert reviewer.post(review_url(b), {"action": "approve"})["Location"] == review_url()

    done = reviewer.get(review_url())
    assert done.status_code == HTTPStatus.OK
    assert "The review queue is clear." in done.content.decode()
    assert list(DatasetSample.objects.order_by("-quality_score").values_list("annotation_status", flat=True)) == [
        "rejected",
        "approved",
        "approved",
    ]


def test_j_and_k_links_move_without_saving(admin_client):
    a, b, c = queue_sample(0.9), queue_sample(0.8), queue_sample(0.7)

    page = admin_client.get(review_url(b)).content.decode()

    assert re.search(rf'id="ds-next" href="{re.escape(review_url(c))}"', page)
    assert re.search(rf'id="ds-prev" href="{re.escape(review_url(a))}"', page)
    assert "2 of 3" in page
    assert DatasetSample.objects.filter(annotation_status="needs_review").count() == 3


def test_redacted_text_by_default_and_raw_only_with_the_permission():
    sample = queue_sample(0.9, email=True)
    annotator = user_with(*ANNOTATOR)

    plain = annotator.get(review_url(sample)).content.decode()
    asked = annotator.get(review_url(sample) + "?raw=1").content.decode()
    assert EMAIL not in plain and "[EMAIL]" in plain
    assert EMAIL not in asked
    assert "show raw text" not in plain

    trusted = user_with(*ANNOTATOR, "view_raw_datasetsample", username="lead")
    assert EMAIL not in trusted.get(review_url(sample)).content.decode()
    raw = trusted.get(review_url(sample) + "?raw=1").content.decode()
    assert EMAIL in raw and "Raw text" in raw


def test_a_sample_whose_pii_could_not_be_redacted_shows_no_text():
    sample = queue_sample(0.9, email=True)
    DatasetSample.objects.filter(id=sample.id).update(pii_redacted_content=None)

    page = user_with(*ANNOTATOR).get(review_url(sample)).content.decode()

    assert EMAIL not in page
    assert "could not be redacted" in page


def test_viewers_without_the_annotate_permission_cannot_annotate():
    sample = queue_sample(0.9)
    viewer = user_with("view_datasetsample")

    page = viewer.get(review_url(sample))
    assert page.status_code == HTTPStatus.OK
    assert 'id="ds-form"' not in page.content.decode()
    assert viewer.post(review_url(sample), {"action": "approve"}).status_code == HTTPStatus.FORBIDDEN
    sample.refresh_from_db()
    assert sample.annotation_status == "needs_review"


def test_an_unknown_action_changes_nothing(admin_client):
    sample = queue_sample(0.9)

    admin_client.post(review_url(sample), {"action": "delete"})

    sample.refresh_from_db()
    assert sample.annotation_status == "needs_review"


def test_the_changelist_has_svg_charts_and_the_queue_link(admin_client, django_assert_max_num_queries):
    queue_sample(0.9)
    SampleFactory(quality_score=0.3, sample_type="write_guardian_decision", source_key="write_guardian_decision:x")

    with django_assert_max_num_queries(25):
        page = admin_client.get(reverse("admin:dataset_app_datasetsample_changelist")).content.decode()

    assert page.count('class="reflection-chart"') == 3
    assert "Quality score" in page and "Samples by type" in page and "Samples by status" in page
    assert "Review queue (1)" in page
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing from a CDN


def test_bulk_actions_annotate(admin_client):
    a, b = queue_sample(0.9), queue_sample(0.8)

    admin_client.post(
        reverse("admin:dataset_app_datasetsample_changelist"),
        {"action": "approve", "_selected_action": [a.id, b.id]},
    )

    assert set(DatasetSample.objects.values_list("annotation_status", flat=True)) == {"approved"}


def test_the_change_form_shows_the_sample_and_saves_through_the_annotation_module(admin_client):
    sample = queue_sample(0.9, email=True)
    url = reverse("admin:dataset_app_datasetsample_change", args=[sample.id])

    page = admin_client.get(url).content.decode()
    assert "ds-bubble" in page and EMAIL not in page

    admin_client.post(url, {"annotation_status": "rejected", "annotation_notes": "dup"})
    sample.refresh_from_db()
    assert (sample.annotation_status, sample.annotated_by, sample.annotation_notes) == ("rejected", "admin", "dup")


def test_the_export_dataset_action_starts_an_export_of_the_selection(admin_client, django_capture_on_commit_callbacks):
    a, b = queue_sample(0.9), queue_sample(0.8)

    with django_capture_on_commit_callbacks() as callbacks:
        admin_client.post(
            reverse("admin:dataset_app_datasetsample_changelist"),
            {"action": "export_dataset", "_selected_action": [a.id, b.id]},
        )

    export = DatasetExport.objects.get()
    assert sorted(export.filters["sample_ids"]) == sorted([a.id, b.id])
    assert len(callbacks) == 1


# --- import-export -------------------------------------------------------------------------------


def test_the_resource_exports_redacted_text():
    queue_sample(0.9, email=True)

    data = DatasetSampleResource().export()

    assert "text" in data.headers
    csv_text = data.csv
    assert EMAIL not in csv_text and "[EMAIL]" in csv_text
    assert DatasetSampleResource().export().xlsx  # XLSX needs openpyxl


def test_import_dry_run_changes_nothing_and_import_sets_annotations():
    a, b = queue_sample(0.9), queue_sample(0.8)
    batch = tablib.Dataset(headers=["id", "annotation_status", "annotation_notes", "sample_type", "label"])
    batch.append([a.id, "approved", "ok", "annotated_turn", "HACKED"])
    batch.append([b.id, "rejected", "", "memory_gate_positive", "UPDATE_USER"])

    preview = DatasetSampleResource(annotator="bob").import_data(batch, dry_run=True)
    assert not preview.has_errors()
    assert [row.import_type for row in preview.rows] == ["update", "update"]
    assert set(DatasetSample.objects.values_list("annotation_status", flat=True)) == {"needs_review"}

    DatasetSampleResource(annotator="bob").import_data(batch, dry_run=False)
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.annotation_status, a.annotation_notes, a.annotated_by) == ("approved", "ok", "bob")
    assert a.annotated_at is not None
    assert (a.sample_type, a.label) == ("memory_gate_positive", "UPDATE_USER")  # only annotations import
    assert b.annotation_status == "rejected"


def test_import_refuses_unknown_samples_and_statuses():
    sample = queue_sample(0.9)
    batch = tablib.Dataset(headers=["id", "annotation_status"])
    batch.append(["01NOSUCHSAMPLE0000000000000", "approved"])
    batch.append([sample.id, "maybe"])

    result = DatasetSampleResource().import_data(batch, dry_run=True)

    assert result.has_errors() or result.has_validation_errors()
    assert DatasetSample.objects.count() == 1


def test_the_import_page_offers_csv_json_and_xlsx(admin_client):
    page = admin_client.get(reverse("admin:dataset_app_datasetsample_import")).content.decode()
    for fmt in ("csv", "json", "xlsx"):
        assert fmt in page.lower()


# --- exports and evaluations ---------------------------------------------------------------------


def test_an_operator_starts_an_export_from_the_admin(admin_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client.post(
            reverse("admin:dataset_app_datasetexport_add"),
            {
                "export_format": "alpaca",
                "export_name": "from-admin",
                "types": ["memory_gate_positive"],
                "train_split": "0.9",
            },
        )

    assert response.status_code == HTTPStatus.FOUND, response.content.decode()[:2000]
    export = DatasetExport.objects.get()
    assert (export.export_name, export.export_format, export.sample_types) == (
        "from-admin",
        "alpaca",
        ["memory_gate_positive"],
    )
    assert export.filters["train_split"] == 0.9
    assert len(callbacks) == 1


def test_a_bad_export_name_is_a_form_error(admin_client):
    response = admin_client.post(
        reverse("admin:dataset_app_datasetexport_add"), {"export_format": "alpaca", "export_name": "../x"}
    )
    assert response.status_code == HTTPStatus.OK
    assert "export name" in response.content.decode()
    assert DatasetExport.objects.count() == 0


def test_export_files_download_needs_the_permission(admin_client, dataset):
    from dataset_app.exports import create_export, run_export

    export = run_export(create_export(export_format="openai", name="dl").id)
    url = reverse("admin:dataset_app_datasetexport_download", args=[export.id, "train"])

    assert admin_client.get(url).status_code == HTTPStatus.OK
    assert user_with("view_datasetexport").get(url).status_code == HTTPStatus.FORBIDDEN
    page = admin_client.get(reverse("admin:dataset_app_datasetexport_change", args=[export.id])).content.decode()
    assert export.files[0]["sha256"] in page


def test_evaluation_runs_show_a_chart_and_a_confusion_matrix(admin_client):
    run = EvaluationRun.objects.create(
        stage="gate",
        llm_model="heuristic-gate-v1",
        status="completed",
        sample_count=4,
        correct_count=3,
        accuracy=0.75,
        metrics={"NO_WRITE": {"precision": 1.0, "recall": 0.5, "f1": 0.667, "support": 2}},
        confusion={"labels": ["NO_WRITE", "UPDATE_USER"], "matrix": [[1, 1], [0, 2]]},
    )

    listing = admin_client.get(reverse("admin:dataset_app_evaluationrun_changelist")).content.decode()
    detail = admin_client.get(reverse("admin:dataset_app_evaluationrun_change", args=[run.id])).content.decode()

    assert "<svg" in listing and "Accuracy over time" in listing and "75.0%" in listing
    assert "<circle" in listing
    assert "reflection-table" in detail and "UPDATE_USER" in detail
