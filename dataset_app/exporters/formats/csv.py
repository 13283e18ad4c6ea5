"""``csv``: one row per sample with the instruction, input and output as columns, and one header."""

from __future__ import annotations

from dataset_app.exporters.examples import example_of
from dataset_app.exporters.registry import register
from dataset_app.exporters.rows import Row
from dataset_app.exporters.writer import Writer

CSV_COLUMNS = [
    "id",
    "sample_type",
    "stage",
    "instruction",
    "input",
    "output",
    "label",
    "candidate_fact",
    "quality_score",
    "annotation_status",
    "session_id",
    "created_at",
]


def _csv_text(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


@register
class CSVWriter(Writer):
    """RFC 4180: text always quoted (quotes doubled, newlines kept inside quotes), numbers bare, one header.

    Written by hand rather than with ``csv.writer``, which scans every character of every field to decide
    on quoting and was a third of the export's time; always quoting text needs no scan.

    An absent value is an empty cell. CSV carries no types: pandas (and so Hugging Face ``datasets``) reads a column
    that is empty in all of one file's rows as a missing number and fails on another file's text, whatever the
    quoting (and a quality score that is a number in one file and empty in all rows of the other fails the same
    way); the README says to read the files as text (every column a string feature, ``keep_default_na=False``).
    A sentinel instead of the empty cell would change the data, so none is written.
    """

    name = "csv"
    label = "CSV"
    order = 5
    suffix = ".csv"
    media_type = "text/csv"
    header = ",".join(CSV_COLUMNS)
    full_rows = True

    def line(self, row: Row) -> bytes | None:
        ex = example_of(row.content)
        if ex is None:
            return None
        extra = row.extra
        created = extra.get("created_at")
        fields = (
            _csv_text(row.id),
            _csv_text(row.sample_type),
            _csv_text(ex.stage),
            _csv_text(ex.instruction),
            _csv_text(ex.input),
            _csv_text(ex.output_text),
            _csv_text(extra.get("label") or ""),
            _csv_text(ex.fact or ""),
            "" if row.quality_score is None else repr(float(row.quality_score)),
            _csv_text(row.annotation_status),
            _csv_text(row.session_id),
            _csv_text(created.isoformat() if created is not None else ""),
        )
        return ",".join(fields).encode()
