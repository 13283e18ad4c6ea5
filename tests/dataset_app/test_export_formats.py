"""The export formats' registry (issue 20): every format is one module of ``dataset_app/exporters/formats``, and the
model's choices, its check constraint, the API's ``format`` and the CLI's ``--format`` are built from it."""

from __future__ import annotations

import io
import pkgutil
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from dataset_app.exporters import formats, registry
from dataset_app.exporters.examples import example_of
from dataset_app.exporters.files import HashingFile
from dataset_app.exporters.rows import Row
from dataset_app.exporters.writer import Writer
from dataset_app.exports import file_paths, validate_export_options
from dataset_app.models import DatasetExport, ExportFormat

# The order and labels migration 0001 recorded: the choices built from the registry must stay these.
RECORDED = [("alpaca", "Alpaca"), ("sharegpt", "ShareGPT"), ("openai", "OpenAI"), ("raw", "Raw"), ("csv", "CSV")]


def test_the_model_choices_are_the_registered_formats_as_migrated():
    assert registry.format_choices() == RECORDED
    assert ExportFormat.choices == RECORDED
    assert DatasetExport._meta.get_field("export_format").choices == RECORDED
    (constraint,) = [c for c in DatasetExport._meta.constraints if c.name == "dataset_exports_format_valid"]
    assert constraint.condition.children == [("export_format__in", [name for name, _ in RECORDED])]


def test_every_module_of_formats_is_the_format_of_its_name():
    modules = {module.name for module in pkgutil.iter_modules(formats.__path__)}

    assert modules == set(registry.format_names())
    for name, cls in registry.writers().items():
        assert cls.__module__ == f"{formats.__name__}.{name}"
        assert cls.name == name and cls.label and issubclass(cls, Writer)


def test_the_api_and_the_cli_offer_every_registered_format(api_client):
    schema = api_client.get("/api/openapi.json").json()

    assert schema["components"]["schemas"]["ExportIn"]["properties"]["format"]["enum"] == list(registry.format_names())
    for name in registry.format_names():
        validate_export_options(export_format=name, name=None, sample_types=None, train_split=None, min_quality=None)
    with pytest.raises(CommandError, match="invalid choice: 'parquet'"):
        call_command("dataset", "export", "--format", "parquet", stdout=io.StringIO(), stderr=io.StringIO())


def test_each_format_declares_what_it_reads_and_its_pii():
    writers = registry.writers()

    assert {name for name, cls in writers.items() if cls.full_rows} == {"raw", "csv"}
    assert {name: cls.pii_fields for name, cls in writers.items() if cls.pii_fields} == {"raw": ("annotation_notes",)}
    assert {name: (cls.suffix, cls.header is not None) for name, cls in writers.items()} == {
        "alpaca": (".jsonl", False),
        "sharegpt": (".jsonl", False),
        "openai": (".jsonl", False),
        "raw": (".jsonl", False),
        "csv": (".csv", True),
    }


@pytest.fixture
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry as it is, on a copy the test may add to."""
    monkeypatch.setattr(registry, "_WRITERS", dict(registry.writers()))


def test_a_new_format_is_one_registered_writer(own_registry, tmp_path):
    @registry.register
    class TSVWriter(Writer):
        name = "tsv"
        label = "TSV"
        order = 6
        suffix = ".tsv"
        media_type = "text/tab-separated-values"
        header = "instruction\tinput\toutput"

        def line(self, row: Row) -> bytes | None:
            ex = example_of(row.content)
            return None if ex is None else "\t".join((ex.instruction, ex.input, ex.output_json)).encode()

    assert registry.format_names()[-1] == "tsv"
    assert registry.writer_class("tsv") is TSVWriter
    assert (
        validate_export_options(export_format="tsv", name="x", sample_types=None, train_split=None, min_quality=None)[0]
        == "x"
    )
    assert file_paths(tmp_path, "x", "tsv")["validation"] == tmp_path / "x-val.tsv"

    content: dict[str, Any] = {
        "type": "memory_gate_positive",
        "conversation": [{"role": "user", "message": "I use vim."}, {"role": "agent", "message": "Noted."}],
        "correctDecision": "UPDATE_USER",
        "correctFact": "Uses vim.",
        "reason": "a tool",
    }
    writer = TSVWriter(HashingFile(tmp_path / "x.tsv"))
    assert writer.write(Row("01J", "memory_gate_positive", "{}", 0.5, "approved", "s")) is False
    row = Row("01K", "memory_gate_positive", "{}", 0.5, "approved", "s")
    row.content = content
    assert writer.write(row) is True
    writer.close()
    text = (tmp_path / "x.tsv").read_text()
    assert writer.out.count == 1
    assert text.startswith("instruction\tinput\toutput\nBased on the following conversation")
    assert "\tUser: I use vim.\nAgent: Noted.\t" in text


def test_two_writers_of_one_format_are_refused(own_registry):
    with pytest.raises(ValueError, match="Two writers of the export format 'openai'"):

        @registry.register
        class OtherOpenAI(Writer):
            name = "openai"
            label = "OpenAI"
            order = 3
