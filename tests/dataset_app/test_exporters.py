"""Exports: every format loads with Hugging Face datasets, OpenAI lines follow the chat fine-tuning rules,
the split is deterministic, and PII never leaves the database unless asked for."""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path

import hypothesis
import pytest
from datasets import Features, Value, load_dataset
from django.utils import timezone
from hypothesis import strategies as st

from dataset_app.exporters.examples import example_of
from dataset_app.exporters.split import split_of
from dataset_app.exports import create_export, run_export, sweep_stale_exports, write_export
from dataset_app.models import DatasetExport, DatasetSample
from tests.dataset_app.conftest import EMAIL, SECRET, check_openai_line, read_lines

pytestmark = pytest.mark.django_db


def export(fmt: str, **options) -> DatasetExport:
    row = create_export(export_format=fmt, name=options.pop("name", f"test-{fmt}"), **options)
    done = run_export(row.id)
    assert done is not None
    return done


def paths(row: DatasetExport) -> dict[str, Path]:
    return {f["split"]: Path(f["path"]) for f in row.files}


def load(row: DatasetExport, tmp_path: Path):
    """As the README says to load an export: the JSON formats as they are, CSV as text (pandas guesses a column's
    type file by file: a column empty in all of one file's rows is a missing number there, which the other file's
    text then fails to fit, and the quality score is a number in one file and an empty text in the other)."""
    files = {split: str(path) for split, path in paths(row).items() if path.stat().st_size}
    if row.export_format == "csv":
        header = next(csv.reader(Path(next(iter(files.values()))).open(encoding="utf-8")))
        as_text = Features({column: Value("string") for column in header})
        return load_dataset(
            "csv", data_files=files, cache_dir=str(tmp_path / "hf-cache"), features=as_text, keep_default_na=False
        )
    return load_dataset("json", data_files=files, cache_dir=str(tmp_path / "hf-cache"))


@pytest.mark.parametrize("fmt", ["openai", "alpaca", "sharegpt", "raw", "csv"])
def test_every_format_loads_with_hugging_face_datasets(dataset, fmt, tmp_path):
    row = export(fmt, train_split=0.5)

    loaded = load(row, tmp_path)

    assert row.status == "completed"
    assert row.total_samples == dataset["total"] - 1  # all but the rejected one
    assert sum(len(split) for split in loaded.values()) == row.total_samples
    assert {name for name in loaded} <= {"train", "validation"}
    columns = set(next(iter(loaded.values())).column_names)
    expected = {
        "openai": {"messages"},
        "alpaca": {"instruction", "input", "output"},
        "sharegpt": {"conversations"},
        "raw": {"id", "sampleType", "content", "annotationStatus", "qualityScore", "createdAt"},
        "csv": {"id", "sample_type", "instruction", "input", "output", "label"},
    }[fmt]
    assert expected <= columns


def test_openai_lines_follow_the_chat_fine_tuning_rules(dataset):
    row = export("openai", train_split=0.5)

    lines = read_lines(paths(row)["train"]) + read_lines(paths(row)["validation"])

    assert len(lines) == row.total_samples > 0
    for line in lines:
        assert check_openai_line(line) == [], line
        messages = json.loads(line)["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant"]
        answer = json.loads(messages[-1]["content"])
        assert set(answer) in ({"decision", "reason", "candidate_fact"}, {"decision", "reason"})


def test_the_checker_catches_broken_lines():
    assert check_openai_line(json.dumps({"messages": [{"role": "user", "content": "hi"}]})) == [
        "does not end with the assistant"
    ]
    assert "role 'bot'" in check_openai_line(
        json.dumps({"messages": [{"role": "bot", "content": "x"}, {"role": "assistant", "content": "y"}]})
    )
    assert "content is not a non-empty string" in check_openai_line(
        json.dumps({"messages": [{"role": "user", "content": ["x"]}, {"role": "assistant", "content": "y"}]})
    )


def test_the_assistant_turn_is_the_correct_output(dataset):
    negative = DatasetSample.objects.filter(sample_type="memory_gate_negative", collection_strategy="rollback").get()
    corrected = DatasetSample.objects.filter(
        sample_type="memory_gate_negative", collection_strategy="behavior_correction"
    ).get()

    assert json.loads(example_of(negative.content).output_json)["decision"] == "NO_WRITE"
    answer = json.loads(example_of(corrected.content).output_json)
    assert answer == {
        "decision": "UPDATE_MEMORY",
        "reason": "A project date, not a user fact.",
        "candidate_fact": "The launch is on Friday.",
    }


def test_alpaca_follows_the_seeds_example(dataset):
    positive = DatasetSample.objects.filter(
        sample_type="memory_gate_positive", content__correctFact="Prefers morning check-ins."
    ).get()

    ex = example_of(positive.content)

    assert ex.instruction.startswith("Based on the following conversation, decide if this should be written to memory")
    assert ex.input == "User: I prefer morning check-ins.\nAgent: Noted, I'll schedule check-ins in the morning."
    assert ex.output_text.startswith("Decision: UPDATE_USER\nFact: Prefers morning check-ins.\nReason: ")


def as_chat(record: dict) -> list[dict[str, str]]:
    """A ShareGPT record read the way axolotl's and TRL's ShareGPT loaders read it: ``from`` mapped to a chat
    role, then the rules a chat template enforces (an optional system first, then user and assistant strictly
    alternating, ending with the assistant)."""
    roles = {"system": "system", "human": "user", "gpt": "assistant"}
    chat = [{"role": roles[m["from"]], "content": m["value"]} for m in record["conversations"]]
    body = chat[1:] if chat and chat[0]["role"] == "system" else chat
    assert body, "no messages after the system one"
    for i, message in enumerate(body):
        assert message["role"] == ("user" if i % 2 == 0 else "assistant"), chat
        assert isinstance(message["content"], str)
    assert body[-1]["role"] == "assistant"
    return chat


def test_sharegpt_is_the_conversation_with_the_decision_on_the_last_gpt_turn(dataset):
    row = export("sharegpt", train_split=1.0)
    records = [json.loads(line) for line in read_lines(paths(row)["train"])]

    assert records
    for record in records:
        chat = as_chat(record)
        last = record["conversations"][-1]
        assert isinstance(last["memory_gate_decision"], str) and isinstance(last["candidate_fact"], str)
        assert chat[0]["role"] == "system"
    gate = [r for r in records if r["conversations"][-1]["memory_gate_decision"]]
    assert gate
    positive = next(r for r in gate if r["conversations"][-1]["candidate_fact"] == "Prefers morning check-ins.")
    assert [m["value"] for m in positive["conversations"][-2:]] == [
        "I prefer morning check-ins.",
        "Noted, I'll schedule check-ins in the morning.",
    ]
    assert positive["conversations"][-1]["memory_gate_decision"] == "UPDATE_USER"


def test_sharegpt_turns_alternate_whatever_the_window_holds():
    from dataset_app.exporters.formats.sharegpt import sharegpt_turns

    content = {
        "type": "memory_gate_positive",
        "conversation": [
            {"role": "agent", "message": "Hello, how can I help?"},
            {"role": "user", "message": "I use vim."},
            {"role": "user", "message": "And tmux."},
            {"role": "agent", "message": "Got it."},
            {"role": "user", "message": "I prefer dark mode."},
            {"role": "agent", "message": ""},
        ],
        "correctDecision": "UPDATE_USER",
        "correctFact": "Prefers dark mode.",
        "reason": "a stable preference",
    }
    turns = sharegpt_turns(content, example_of(content))

    assert turns == [
        ("human", "I use vim.\n\nAnd tmux."),
        ("gpt", "Got it."),
        ("human", "I prefer dark mode."),
        ("gpt", ""),
    ]


def test_files_sizes_and_checksums_are_recorded(dataset):
    row = export("alpaca")

    for f in row.files:
        data = Path(f["path"]).read_bytes()
        assert f["size_bytes"] == len(data)
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
        assert f["samples"] == data.count(b"\n")
    assert row.file_size_bytes == sum(f["size_bytes"] for f in row.files)
    assert row.checksum == row.files[0]["sha256"]
    assert row.file_path.endswith("test-alpaca-train.jsonl")
    assert Path(row.file_path).parent == Path(row.files[1]["path"]).parent
    assert row.files[1]["path"].endswith("test-alpaca-val.jsonl")
    assert row.train_samples + row.validation_samples == row.total_samples
    assert row.avg_quality_score is not None
    assert row.rejected_samples == 1
    assert not list(Path(row.file_path).parent.glob("*.part"))


def test_the_split_is_deterministic_and_monotonic(dataset):
    first = export("raw", name="a", train_split=0.5)
    again = export("raw", name="b", train_split=0.5)
    wider = export("raw", name="c", train_split=0.8)

    def ids(row, split):
        return {json.loads(line)["id"] for line in read_lines(paths(row)[split])}

    assert [f["sha256"] for f in first.files] == [f["sha256"] for f in again.files]
    assert ids(first, "train") == ids(again, "train")
    assert ids(first, "train") <= ids(wider, "train")
    assert ids(wider, "validation") <= ids(first, "validation")
    for sample_id in ids(first, "train"):
        assert split_of(sample_id, 0.5) == "train"


def test_split_of_matches_the_requested_share():
    ids = [f"01J{i:023d}" for i in range(20_000)]
    share = sum(split_of(i, 0.8) == "train" for i in ids) / len(ids)
    assert 0.78 < share < 0.82


def test_default_exports_hold_no_pii_or_secret(dataset):
    for fmt in ("openai", "alpaca", "sharegpt", "raw", "csv"):
        row = export(fmt, name=f"pii-{fmt}")
        text = "".join(p.read_text(encoding="utf-8") for p in paths(row).values())
        assert EMAIL not in text, fmt
        assert SECRET not in text, fmt
        assert "sk-proj-" not in text, fmt
        assert "[EMAIL]" in text, fmt


def test_include_pii_exports_the_raw_text_and_says_so_in_the_log(dataset, caplog):
    with caplog.at_level("WARNING", logger="dataset_app.exports"):
        row = export("raw", include_pii=True)
    text = "".join(p.read_text(encoding="utf-8") for p in paths(row).values())
    assert EMAIL in text and SECRET in text
    assert f"export {row.id} (test-raw)" in caplog.text and "includes PII" in caplog.text


def test_a_sample_whose_pii_could_not_be_redacted_is_left_out(dataset):
    DatasetSample.objects.filter(contains_pii=True).update(pii_redacted_content=None)
    pii_count = DatasetSample.objects.filter(contains_pii=True).count()

    row = export("raw")

    text = "".join(p.read_text(encoding="utf-8") for p in paths(row).values())
    assert EMAIL not in text
    assert row.skipped_pii_samples == pii_count > 0


def test_samples_collected_without_privacy_checks_are_redacted_on_the_way_out(dataset):
    DatasetSample.objects.update(privacy_checked=False, contains_pii=False, pii_redacted_content=None)

    row = export("alpaca")

    text = "".join(p.read_text(encoding="utf-8") for p in paths(row).values())
    assert EMAIL not in text and SECRET not in text


def test_filters_only_approved_min_quality_and_types(dataset):
    DatasetSample.objects.filter(sample_type="memory_gate_positive").update(annotation_status="approved")
    positives = DatasetSample.objects.filter(sample_type="memory_gate_positive").count()

    approved = export("alpaca", name="approved", only_approved=True)
    assert approved.total_samples == approved.approved_samples == positives

    typed = export("alpaca", name="typed", sample_types=["write_guardian_decision"])
    assert typed.total_samples == DatasetSample.objects.filter(sample_type="write_guardian_decision").count()

    strict = export("alpaca", name="strict", min_quality=1.0)
    assert (
        strict.total_samples
        == DatasetSample.objects.filter(quality_score__gte=1.0).exclude(annotation_status="rejected").count()
    )


def test_csv_has_one_header_and_a_row_per_sample(dataset):
    row = export("csv", train_split=1.0)
    with open(paths(row)["train"], newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == row.total_samples
    assert rows[0]["instruction"]


def test_running_an_export_twice_does_nothing_the_second_time(dataset):
    row = create_export(export_format="openai", name="once")
    assert run_export(row.id) is not None
    assert run_export(row.id) is None


def test_a_failed_export_leaves_no_partial_files_and_records_the_error(dataset, monkeypatch):
    from dataset_app.exporters.formats.openai import OpenAIWriter

    row = create_export(export_format="openai", name="broken")
    monkeypatch.setattr(OpenAIWriter, "record", lambda self, r: 1 / 0)

    with pytest.raises(ZeroDivisionError):
        run_export(row.id)

    row.refresh_from_db()
    assert row.status == "failed"
    assert "ZeroDivisionError" in row.error
    assert not list(Path(row.file_path).parent.glob("broken*"))


def test_bad_options_are_refused():
    from dataset_app.errors import InvalidExportOptions

    for options in (
        {"export_format": "parquet"},
        {"export_format": "openai", "name": "../etc/passwd"},
        {"export_format": "openai", "train_split": 0},
        {"export_format": "openai", "train_split": 1.5},
        {"export_format": "openai", "min_quality": 2},
        {"export_format": "openai", "sample_types": ["nope"]},
    ):
        with pytest.raises(InvalidExportOptions):
            create_export(**options)
    assert DatasetExport.objects.count() == 0


def test_the_sweep_requeues_an_export_a_dead_worker_left_running(dataset, sent_tasks):
    import datetime as dt

    from django.utils import timezone

    sent = sent_tasks.to("dataset_app.tasks.run_export", single=True)
    row = create_export(export_format="openai", name="stuck")
    DatasetExport.objects.filter(id=row.id).update(
        status="running", heartbeat_at=timezone.now() - dt.timedelta(hours=1)
    )
    fresh = create_export(export_format="openai", name="fresh")

    assert sweep_stale_exports(grace_s=600) == 1
    assert sent == [row.id]
    assert sweep_stale_exports(grace_s=600) == 0  # its heartbeat was renewed

    row.refresh_from_db()
    assert row.status == "pending"
    assert run_export(row.id).status == "completed"
    assert DatasetExport.objects.get(id=fresh.id).status == "pending"


def test_write_export_reports_progress(dataset):
    row = create_export(export_format="openai", name="progress")
    calls = []
    write_export(row, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (dataset["total"] - 1, dataset["total"] - 1)


def test_a_small_export_never_leaves_a_split_empty(tmp_path):
    from dataset_app.exporters.split import split_point
    from tests.dataset_app.factories import SampleFactory

    samples = SampleFactory.create_batch(3)
    points = {s.id: split_point(s.id) for s in samples}
    nearest = max(points, key=points.get)
    share = min(0.999, max(points.values()) + 0.0005)  # every sample would land in train

    row = export("openai", name="small", train_split=share)

    assert (row.train_samples, row.validation_samples) == (2, 1)
    assert len(read_lines(paths(row)["validation"])) == 1
    loaded = load(row, tmp_path)
    assert (len(loaded["train"]), len(loaded["validation"])) == (2, 1)
    raw = export("raw", name="small-raw", train_split=share)
    assert json.loads(read_lines(paths(raw)["validation"])[0])["id"] == nearest

    everything = export("openai", name="all-train", train_split=1.0)
    assert (everything.train_samples, everything.validation_samples) == (3, 0)


EXAMPLES = int(os.environ.get("EXPORT_SCHEMA_EXAMPLES", "8"))  # a format; raise it for a longer search


@pytest.mark.parametrize("fmt", ["openai", "alpaca", "sharegpt", "raw", "csv"])
@hypothesis.settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture, hypothesis.HealthCheck.too_slow],
    derandomize=False,
)
@hypothesis.given(data=st.data())
def test_every_format_loads_whatever_the_split_and_the_samples(dataset, tmp_path_factory, fmt, data):
    """Every format has one schema in every row of every file, so Hugging Face ``datasets`` (which takes the
    schema of the first rows it reads and casts the rest to it) loads any split of any mix of samples: annotated
    or not, scored or not, of any type. A single lucky split is not enough (issue 23: raw failed one run in
    three, by the ULIDs of that run)."""
    ids = list(DatasetSample.objects.exclude(annotation_status="rejected").order_by("id").values_list("id", flat=True))
    chosen = data.draw(st.lists(st.sampled_from(ids), min_size=2, unique=True), label="samples")
    for sample_id in chosen:
        annotated = data.draw(st.booleans(), label=f"annotated {sample_id}")
        scored = data.draw(st.booleans(), label=f"scored {sample_id}")
        DatasetSample.objects.filter(id=sample_id).update(
            annotated_by="ann" if annotated else None,
            annotated_at=timezone.now() if annotated else None,
            annotation_notes="looks right" if annotated else None,
            **({} if scored else {"quality_score": None, "quality_factors": None}),
        )
    train_split = data.draw(st.floats(min_value=0.05, max_value=0.95), label="train_split")
    row = export(fmt, name=f"h-{fmt}", train_split=train_split, sample_ids=chosen)

    loaded = load(row, tmp_path_factory.mktemp("hf"))

    assert sum(len(split) for split in loaded.values()) == row.total_samples
    if fmt == "raw":
        for split in loaded.values():
            for record in split:
                assert json.loads(record["content"])["type"] == record["sampleType"]
