"""``python manage.py dataset …``: thin tests of each subcommand over the domain modules."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from dataset_app.models import DatasetExport, DatasetSample, EvaluationRun
from tests.dataset_app.conftest import EMAIL, check_openai_line
from tests.dataset_app.factories import SampleFactory, written_decision

pytestmark = pytest.mark.django_db


def run(*args: str, stdin: str | None = None) -> str:
    out = io.StringIO()
    kwargs = {"stdout": out, "stderr": io.StringIO()}
    if stdin is not None:
        kwargs["stdin"] = io.StringIO(stdin)
    call_command("dataset", *args, **kwargs)
    return out.getvalue()


def test_collect_dry_run_then_collect():
    written_decision(days=10)

    assert "Would collect 2 sample(s)" in run("collect", "--dry-run")
    assert DatasetSample.objects.count() == 0
    output = run("collect", "--since", "2000-01-01", "--auto-approve")
    assert "Collected 2 sample(s)" in output
    assert "memory_gate_positive: 1" in output
    assert json.loads(run("collect", "--json"))["created"] == 0


def test_collect_reads_times_as_every_command_does():
    """Issue 20: the command's own time parser gave way to ``reflection_site.cli``'s. Decided: ``30d`` and the
    other relative times are read too, eight digits are a date (the copy read any digits as epoch milliseconds)
    and fewer than ten other digits are refused; ISO dates and times and epoch milliseconds read as before."""
    written_decision(days=10)

    assert "Would collect 0 sample(s)" in run("collect", "--dry-run", "--since", "5d")
    assert "Would collect 2 sample(s)" in run("collect", "--dry-run", "--since", "30d")
    assert "Would collect 2 sample(s)" in run("collect", "--dry-run", "--since", "20000101")
    assert "Would collect 2 sample(s)" in run("collect", "--dry-run", "--since", "946684800000")  # 2000, in ms
    with pytest.raises(CommandError, match="is not a time: use 30d"):
        run("collect", "--since", "123456")


def test_collect_type_option():
    written_decision(days=10)
    run("collect", "-t", "negative")
    assert DatasetSample.objects.count() == 0
    run("collect", "-t", "positive")
    assert list(DatasetSample.objects.values_list("sample_type", flat=True)) == ["memory_gate_positive"]


def test_list_shows_samples_and_filters():
    SampleFactory(annotation_status="needs_review", quality_score=0.61)
    SampleFactory(annotation_status="approved", quality_score=0.9)

    assert "0.610" in run("list", "--needs-review")
    assert "0.900" not in run("list", "--needs-review")
    rows = json.loads(run("list", "--status", "approved", "--json"))
    assert [r["annotation_status"] for r in rows] == ["approved"]
    assert len(json.loads(run("list", "--quality-above", "0.5", "-l", "1", "--json"))) == 1


def test_approve_and_reject_one_sample():
    sample = SampleFactory()
    assert f"Approved {sample.id}" in run("approve", sample.id, "--notes", "high quality", "--annotator", "ann")
    sample.refresh_from_db()
    assert (sample.annotation_status, sample.annotation_notes, sample.annotated_by) == (
        "approved",
        "high quality",
        "ann",
    )
    run("reject", sample.id)
    sample.refresh_from_db()
    assert sample.annotation_status == "rejected"
    assert sample.annotated_by.startswith("cli")
    with pytest.raises(CommandError):
        run("approve", "no-such-id")


def test_terminal_review_takes_a_r_s_q():
    a = SampleFactory(annotation_status="needs_review", quality_score=0.9)
    b = SampleFactory(annotation_status="needs_review", quality_score=0.8)
    c = SampleFactory(annotation_status="needs_review", quality_score=0.7)
    d = SampleFactory(annotation_status="needs_review", quality_score=0.6)

    output = run("review", "--annotator", "tty", stdin="a\nx\nr\ns\nq\n")

    assert "1/4" in output and "USER  │ I prefer morning check-ins." in output
    assert "Press a, r, s or q." in output
    assert "Reviewed: 1 approved, 1 rejected, 1 skipped." in output
    statuses = {s.id: s.annotation_status for s in DatasetSample.objects.all()}
    assert statuses == {a.id: "approved", b.id: "rejected", c.id: "needs_review", d.id: "needs_review"}
    assert DatasetSample.objects.get(id=a.id).annotated_by == "tty"


def test_terminal_review_shows_redacted_text_unless_raw():
    SampleFactory(
        annotation_status="needs_review",
        contains_pii=True,
        content={"type": "memory_gate_positive", "conversation": [{"role": "user", "message": f"mail {EMAIL}"}]},
        pii_redacted_content={
            "type": "memory_gate_positive",
            "conversation": [{"role": "user", "message": "mail [EMAIL]"}],
        },
    )
    assert EMAIL not in run("review", stdin="q\n")
    assert EMAIL in run("review", "--raw", stdin="q\n")


def test_terminal_review_withholds_a_sample_whose_pii_could_not_be_redacted():
    """Issue 20: the CLI shows what the review page shows (DatasetSample.visible_content): a sample whose
    redaction left PII behind is withheld (it printed the text redacted again), unless --raw."""
    from dataset_app.review import content_for

    sample = SampleFactory(
        annotation_status="needs_review",
        contains_pii=True,
        content={"type": "memory_gate_positive", "conversation": [{"role": "user", "message": f"mail {EMAIL} now"}]},
        pii_redacted_content=None,
    )

    output = run("review", stdin="q\n")

    assert content_for(sample, raw=False) == (None, True)
    assert "withheld" in output
    assert "now" not in output.split(sample.id, 1)[1]
    assert EMAIL in run("review", "--raw", stdin="q\n")


def test_review_of_an_empty_queue():
    assert "Nothing to review" in run("review", stdin="")


def test_export_writes_train_and_validation_files(dataset, tmp_path):
    output = run("export", "--format", "openai", "-o", str(tmp_path / "sft-data.jsonl"), "--train-split", "0.9")

    train, val = tmp_path / "sft-data-train.jsonl", tmp_path / "sft-data-val.jsonl"
    assert train.is_file() and val.is_file()
    assert "Exported" in output and "sha256" in output
    lines = train.read_text().splitlines() + val.read_text().splitlines()
    assert len(lines) == DatasetExport.objects.get().total_samples
    assert all(check_openai_line(line) == [] for line in lines)
    assert EMAIL not in train.read_text() + val.read_text()


def test_export_options(dataset, tmp_path, settings):
    settings.DATASET_EXPORT_DIR = str(tmp_path / "exports")
    DatasetSample.objects.filter(sample_type="memory_gate_positive").update(annotation_status="approved")

    run("export", "--format", "alpaca", "--only-approved", "--min-quality", "0.5", "-t", "positive")

    export = DatasetExport.objects.get()
    assert export.filters["only_approved"] is True and export.filters["min_quality"] == 0.5
    assert export.sample_types == ["memory_gate_positive"]
    assert Path(export.file_path).parent == tmp_path / "exports"
    run("export", "--format", "raw", "--include-pii", "-o", str(tmp_path / "withpii"))
    assert EMAIL in (tmp_path / "withpii-train.jsonl").read_text() + (tmp_path / "withpii-val.jsonl").read_text()


def test_export_rejects_a_bad_split():
    with pytest.raises(CommandError):
        run("export", "--train-split", "1.5")


def test_stats_and_quality_reports(dataset):
    by_both = run("stats")
    assert "By type" in by_both and "By status" in by_both and "memory_gate_positive" in by_both
    assert "By daily" in run("stats", "--daily")
    assert json.loads(run("stats", "--by-status", "--json"))["by"] == "status"
    quality = run("quality")
    assert "Quality of" in quality and "mean" in quality and "0.9–1.0" in quality
    assert run("stats", "--quality-distribution") == quality


def test_evaluate_the_offline_gate(dataset):
    DatasetSample.objects.update(annotation_status="approved")

    output = run("evaluate", "--offline", "--split", "all")

    run_row = EvaluationRun.objects.get()
    assert run_row.status == "completed" and run_row.sample_count > 0
    assert run_row.llm_model == "heuristic-gate-v1"
    assert "accuracy" in output and "confusion" in output
    assert json.loads(run("evaluate", "--offline", "--split", "all", "--json"))["stage"] == "gate"


def test_periodic_jobs_run_by_hand(dataset, settings):
    assert "Exported" in run("export-conversations", "--date", "2020-01-01")
    assert "Deleted 1 old" in run("prune-exports")  # the 2020 file is past the 30 days
    assert "Would delete" in run("retention", "--dry-run")
    assert "Requeued 0" in run("sweep-exports")


def test_evaluate_prints_whole_labels_in_the_confusion_matrix(dataset):
    DatasetSample.objects.update(annotation_status="approved")

    output = run("evaluate", "--offline", "--split", "all")

    header = output.split("columns: predicted)\n", 1)[1].splitlines()[0]
    assert "UPDATE_USER" in header.split() and "UPDATE_USE " not in header + " "


def test_evaluate_explains_an_empty_split(settings):
    from dataset_app.exporters.split import split_of

    settings.DATASET_TRAIN_SPLIT = 0.8
    for _ in range(40):  # samples until one falls in train: then the validation split may hold none of them
        sample = SampleFactory(annotation_status="approved")
        if split_of(sample.id, 0.8) == "validation":
            sample.delete()
    approved = DatasetSample.objects.count()
    assert approved > 0

    output = run("evaluate", "--offline", "--split", "validation")

    assert "No approved gate sample falls in the validation split" in output
    assert f"but {approved} approved sample(s)" in output and "--split all" in output
    assert "No approved guardian samples yet" in run("evaluate", "--offline", "--stage", "guardian")
