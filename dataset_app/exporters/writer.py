"""``Writer``, the base of every export format: what a format declares about itself, and the buffered writing
they share. A format is a subclass in ``exporters/formats/`` decorated with ``registry.register``."""

from __future__ import annotations

from typing import Any, ClassVar

import orjson

from dataset_app.exporters.files import HashingFile
from dataset_app.exporters.rows import Row

FLUSH_EVERY = 512  # records buffered before a write


class Writer:
    """Writes records of one format to one file, buffering a few hundred at a time.

    A format declares:

    * ``name``: its value in ``DatasetExport.ExportFormat``, the API's ``format`` and the CLI's ``--format``;
      ``label``, its label there; ``order``, its place in those lists (migration 0001 recorded alpaca, sharegpt,
      openai, raw, csv: a new format comes after them);
    * ``suffix`` and ``media_type`` of its files, and ``header``, a first line every file starts with (a download
      of both splits keeps the first one only);
    * ``full_rows``: whether it reads every column of a sample (``Row.extra``) and not only its content;
    * its PII behaviour: the content it is given is redacted unless the export has ``include_pii`` (a sample
      whose PII could not be redacted never reaches it); ``pii_fields`` are the columns of ``Row.extra`` it
      writes that may hold PII too, redacted the same way before it sees them.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    order: ClassVar[int]
    suffix: ClassVar[str] = ".jsonl"
    media_type: ClassVar[str] = "application/jsonl"
    header: ClassVar[str | None] = None
    full_rows: ClassVar[bool] = False
    pii_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, out: HashingFile):
        self.out = out
        self.buffer: list[bytes] = []
        if self.header is not None:
            self.buffer.append(self.header.encode())

    def record(self, row: Row) -> Any:
        """The row's record as a JSON value; None for a sample this format cannot express."""
        raise NotImplementedError

    def line(self, row: Row) -> bytes | None:
        record = self.record(row)
        return None if record is None else orjson.dumps(record)

    def write(self, row: Row) -> bool:
        """Buffer the row's line; False (nothing written) for a sample this format cannot express."""
        line = self.line(row)
        if line is None:
            return False
        self.add(line)
        return True

    def add(self, line: bytes) -> None:
        self.buffer.append(line)
        self.out.count += 1
        if len(self.buffer) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.buffer.append(b"")
            self.out.write(b"\n".join(self.buffer))
            self.buffer.clear()

    def close(self) -> None:
        self.flush()
        self.out.close()
