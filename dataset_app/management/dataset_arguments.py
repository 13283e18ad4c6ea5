"""The `dataset` command's subcommands and options (the seed's ``/reflection dataset``), kept apart from what each
one does."""

from __future__ import annotations

import datetime as dt
from argparse import ArgumentParser, _SubParsersAction

from django.utils import timezone

from dataset_app.collect import TYPE_ALIASES
from dataset_app.exporters.registry import format_names
from dataset_app.models import AnnotationStatus, EvaluationRun
from reflection_site import cli

# --since/--until: 30d, an ISO date or time (in TIME_ZONE without a zone), epoch milliseconds.
_when = cli.time_argument(tz=timezone.get_current_timezone, now=timezone.now)


def _fraction(value: str) -> float:
    number = float(value)
    if not 0 <= number <= 1:
        raise ValueError
    return number


_fraction.__name__ = "number between 0 and 1"


def add_arguments(parser: ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    _add_collect(sub)
    _add_annotation(sub)
    _add_export(sub)
    _add_reports(sub)
    _add_periodic_jobs(sub)


def _add_collect(sub: _SubParsersAction) -> None:
    collect = sub.add_parser("collect", help="Collect samples from recent decisions, audits and turns.")
    collect.add_argument("--since", type=_when, help=f"Sources created at or after ({cli.TIME_HELP}).")
    collect.add_argument("--until", type=_when, help="Sources created before (the same forms).")
    collect.add_argument("--session", "-s", help="Only this session.")
    collect.add_argument(
        "--type", "-t", default="all", choices=list(TYPE_ALIASES), help="all | positive | negative | …"
    )
    collect.add_argument("--auto-approve", action="store_true", help="Apply the auto-approve criteria.")
    collect.add_argument("--dry-run", action="store_true", help="Count what would be collected; store nothing.")
    collect.add_argument("--json", action="store_true")


def _add_annotation(sub: _SubParsersAction) -> None:
    listing = sub.add_parser("list", help="List samples.")
    listing.add_argument("--status", choices=AnnotationStatus.values)
    listing.add_argument("--type", choices=list(TYPE_ALIASES))
    listing.add_argument("--quality-above", type=float)
    listing.add_argument("--limit", "-l", type=int, default=20)
    listing.add_argument("--needs-review", action="store_true")
    listing.add_argument("--session", "-s")
    listing.add_argument("--json", action="store_true")

    review = sub.add_parser("review", help="Review samples one at a time: a approve, r reject, s skip, q quit.")
    review.add_argument("--status", default=AnnotationStatus.NEEDS_REVIEW, choices=AnnotationStatus.values)
    review.add_argument("--type", choices=list(TYPE_ALIASES))
    review.add_argument("--limit", "-l", type=int, default=0, help="Stop after this many (0: the whole queue).")
    review.add_argument("--annotator", default=None, help="Recorded as annotated_by (default: your user name).")
    review.add_argument("--raw", action="store_true", help="Show the text unredacted.")

    for name, verb in (("approve", "Approve"), ("reject", "Reject")):
        one = sub.add_parser(name, help=f"{verb} one sample.")
        one.add_argument("sample_id")
        one.add_argument("--notes", default=None)
        one.add_argument("--annotator", default=None)


def _add_export(sub: _SubParsersAction) -> None:
    export = sub.add_parser("export", help="Export the dataset (train and validation files).")
    export.add_argument("--format", "-f", default="openai", choices=format_names())
    export.add_argument(
        "--output", "-o", help="Output path; -o ./sft.jsonl writes ./sft-train.jsonl and ./sft-val.jsonl."
    )
    export.add_argument("--type", "-t", action="append", choices=list(TYPE_ALIASES), help="Repeat; default all.")
    export.add_argument("--train-split", type=_fraction, default=None, help="Training share (default 0.8).")
    export.add_argument("--include-pii", action="store_true", help="Export the raw text (default: redacted).")
    export.add_argument("--only-approved", action="store_true")
    export.add_argument("--min-quality", type=_fraction, default=None)
    export.add_argument("--session", "-s")
    export.add_argument("--json", action="store_true")


def _add_reports(sub: _SubParsersAction) -> None:
    stats = sub.add_parser("stats", help="Sample counts.")
    group = stats.add_mutually_exclusive_group()
    group.add_argument("--daily", action="store_true")
    group.add_argument("--by-type", action="store_true")
    group.add_argument("--by-status", action="store_true")
    group.add_argument("--quality-distribution", action="store_true")
    stats.add_argument("--days", type=int, default=30, help="With --daily: how many days back.")
    stats.add_argument("--json", action="store_true")

    quality = sub.add_parser("quality", help="Quality report: distribution, factors, by type.")
    quality.add_argument("--json", action="store_true")

    evaluate = sub.add_parser("evaluate", help="Evaluate the gate (or guardian) on the approved samples.")
    evaluate.add_argument("--stage", default="gate", choices=EvaluationRun.Stage.values)
    evaluate.add_argument("--model", default=None, help="An OpenAI-compatible model name (default: current gate).")
    evaluate.add_argument("--split", default="validation", choices=EvaluationRun.Split.values)
    evaluate.add_argument("--offline", action="store_true", help="Use the offline heuristic gate.")
    evaluate.add_argument("--json", action="store_true")


def _add_periodic_jobs(sub: _SubParsersAction) -> None:
    conversations = sub.add_parser("export-conversations", help="Write conversations-YYYY-MM-DD.jsonl now.")
    conversations.add_argument("--date", type=dt.date.fromisoformat, help="The day (default: yesterday).")
    sub.add_parser("prune-exports", help="Delete conversation exports older than JSONL_EXPORT_RETENTION_DAYS.")
    retention = sub.add_parser("retention", help="Delete sessions inactive for RETENTION_DAYS.")
    retention.add_argument("--days", type=int, default=None)
    retention.add_argument("--dry-run", action="store_true")
    sub.add_parser("sweep-exports", help="Re-enqueue exports a dead worker left behind.")
