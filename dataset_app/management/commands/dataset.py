"""``python manage.py dataset …``: the seed's ``/reflection dataset`` command."""

from __future__ import annotations

import datetime as dt
import getpass
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import F
from django.utils import timezone
from tqdm import tqdm

from dataset_app import queries
from dataset_app.annotation import annotate_sample
from dataset_app.collect import TYPE_ALIASES, collect_samples, sample_types_for
from dataset_app.errors import DatasetError
from dataset_app.exporters import WRITERS, claim_export, create_export, write_export
from dataset_app.models import AnnotationStatus, DatasetSample, EvaluationRun, SampleType
from reflection_site.privacy import redact

BAR_WIDTH = 40
WITHHELD = "  (text withheld: it holds personal data that could not be redacted; --raw shows it)"


def _time(value: str) -> dt.datetime:
    """A date (2026-03-01), an ISO 8601 time, or epoch milliseconds; naive times are in TIME_ZONE."""
    try:
        if value.isdigit():
            return dt.datetime.fromtimestamp(int(value) / 1000, tz=dt.UTC)
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise CommandError(f"not a date or time: {value!r}") from exc
    return parsed if parsed.tzinfo else timezone.make_aware(parsed)


def _fraction(value: str) -> float:
    number = float(value)
    if not 0 <= number <= 1:
        raise ValueError
    return number


_fraction.__name__ = "number between 0 and 1"


class Command(BaseCommand):
    help = (
        "The labelled dataset (the seed's /reflection dataset). `collect` turns gate decisions, guardian audits "
        "and annotated turns not yet collected into samples (scored, PII-checked; --dry-run only counts); `list` "
        "and `stats` and `quality` report; `review` takes the review queue one sample at a time "
        "(a approve, r reject, s skip, q quit); `approve`/`reject` annotate one sample; `export` writes "
        "<name>-train and <name>-val files in a fine-tuning format with a deterministic split; `evaluate` runs "
        "the current gate (or --model) over the approved samples of a split and stores the figures."
    )
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)

        collect = sub.add_parser("collect", help="Collect samples from recent decisions, audits and turns.")
        collect.add_argument("--since", type=_time, help="Sources created at or after (date, ISO time or epoch ms).")
        collect.add_argument("--until", type=_time, help="Sources created before.")
        collect.add_argument("--session", "-s", help="Only this session.")
        collect.add_argument(
            "--type", "-t", default="all", choices=list(TYPE_ALIASES), help="all | positive | negative | …"
        )
        collect.add_argument("--auto-approve", action="store_true", help="Apply the auto-approve criteria.")
        collect.add_argument("--dry-run", action="store_true", help="Count what would be collected; store nothing.")
        collect.add_argument("--json", action="store_true")

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

        export = sub.add_parser("export", help="Export the dataset (train and validation files).")
        export.add_argument("--format", "-f", default="openai", choices=list(WRITERS))
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

        conversations = sub.add_parser("export-conversations", help="Write conversations-YYYY-MM-DD.jsonl now.")
        conversations.add_argument("--date", type=dt.date.fromisoformat, help="The day (default: yesterday).")
        sub.add_parser("prune-exports", help="Delete conversation exports older than JSONL_EXPORT_RETENTION_DAYS.")
        retention = sub.add_parser("retention", help="Delete sessions inactive for RETENTION_DAYS.")
        retention.add_argument("--days", type=int, default=None)
        retention.add_argument("--dry-run", action="store_true")
        sub.add_parser("sweep-exports", help="Re-enqueue exports a dead worker left behind.")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdin: TextIO = options.get("stdin") or sys.stdin
        action = options["action"].replace("-", "_")
        try:
            getattr(self, f"handle_{action}")(options)
        except (DatasetError, ValueError) as exc:
            raise CommandError(str(getattr(exc, "message", exc))) from exc

    # --- helpers ----------------------------------------------------------------------------------
    def _bar(self, description: str) -> tuple[tqdm, Callable[[int, int], None]]:
        # disable=None: a bar on a terminal, nothing when the output is piped or captured.
        bar = tqdm(
            desc=description,
            total=0,
            unit="item",
            file=getattr(self.stderr, "_out", sys.stderr),
            leave=False,
            disable=None,
        )

        def update(done: int, total: int) -> None:
            if bar.total != total:
                bar.total = total
            bar.n = done
            bar.refresh()

        return bar, update

    def _json(self, data: Any) -> None:
        self.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str))

    @staticmethod
    def _annotator(options: dict[str, Any]) -> str:
        if options.get("annotator"):
            return options["annotator"]
        try:
            return f"cli:{getpass.getuser()}"
        except Exception:  # No login name (a container): still say where it came from.
            return "cli"

    def _sample(self, sample_id: str) -> DatasetSample:
        sample = DatasetSample.objects.filter(id=sample_id).first()
        if sample is None:
            raise CommandError(f"No sample {sample_id}.")
        return sample

    # --- collect ----------------------------------------------------------------------------------
    def handle_collect(self, options: dict[str, Any]) -> None:
        bar, progress = self._bar("collect")
        try:
            result = collect_samples(
                since=options["since"],
                until=options["until"],
                session_id=options["session"],
                sample_type=options["type"],
                auto_approve=options["auto_approve"],
                dry_run=options["dry_run"],
                progress=progress,
            )
        finally:
            bar.close()
        if options["json"]:
            self._json(result.as_dict())
            return
        verb = "Would collect" if result.dry_run else "Collected"
        by_type = ", ".join(f"{k}: {v}" for k, v in sorted(result.created.items())) or "none"
        by_status = ", ".join(f"{k}: {v}" for k, v in sorted(result.statuses.items())) or "none"
        self.stdout.write(
            self.style.SUCCESS(f"{verb} {result.total_created} sample(s) from {result.considered} source(s).")
        )
        self.stdout.write(f"  by type:   {by_type}")
        self.stdout.write(f"  by status: {by_status}")
        if result.skipped:
            skipped = ", ".join(f"{k}: {v}" for k, v in sorted(result.skipped.items()))
            self.stdout.write(f"  not collected: {skipped}")
        if result.amended:
            self.stdout.write(f"  guardian samples amended by a later correction or rollback: {result.amended}")
        if result.superseded:
            self.stdout.write(f"  contradicted samples rejected or sent back to review: {result.superseded}")

    # --- list -------------------------------------------------------------------------------------
    def handle_list(self, options: dict[str, Any]) -> None:
        samples = queries.list_samples(
            status=options["status"],
            sample_type=options["type"],
            quality_above=options["quality_above"],
            needs_review=options["needs_review"],
            session_id=options["session"],
        )
        if options["needs_review"]:
            samples = samples.order_by(F("quality_score").desc(nulls_last=True), "id")
        else:
            samples = samples.order_by("-created_at", "-id")
        rows = list(samples[: max(1, options["limit"])])
        if options["json"]:
            self._json(
                [
                    {
                        "id": s.id,
                        "sample_type": s.sample_type,
                        "label": s.label,
                        "quality_score": s.quality_score,
                        "annotation_status": s.annotation_status,
                        "contains_pii": s.contains_pii,
                        "session_id": s.session_id,
                        "created_at": s.created_at.isoformat(),
                    }
                    for s in rows
                ]
            )
            return
        if not rows:
            self.stdout.write("No samples. Collect some with: python manage.py dataset collect")
            return
        self.stdout.write(f"{'ID':<26}  {'TYPE':<23}  {'LABEL':<15}  {'QUALITY':>7}  {'STATUS':<13}  PII  CREATED")
        for s in rows:
            score = f"{s.quality_score:.3f}" if s.quality_score is not None else "-"
            pii = "yes" if s.contains_pii else "no"
            self.stdout.write(
                f"{s.id:<26}  {s.sample_type:<23}  {s.label:<15}  {score:>7}  {s.annotation_status:<13}  {pii:<3}  "
                f"{timezone.localtime(s.created_at):%Y-%m-%d %H:%M}"
            )

    # --- review -----------------------------------------------------------------------------------
    def _read_key(self) -> str:
        """One key: without Enter on a terminal, else a line's first character ('q' at end of input)."""
        if self.stdin is sys.stdin and sys.stdin.isatty():
            import termios
            import tty

            fd = sys.stdin.fileno()
            old = termios.tcgetattr(fd)
            try:
                tty.setcbreak(fd)
                key = sys.stdin.read(1)
            finally:
                termios.tcsetattr(fd, termios.TCSADRAIN, old)
            self.stdout.write(key)
            return key.lower()
        line = self.stdin.readline()
        if not line:
            return "q"
        return (line.strip()[:1] or " ").lower()

    def _show(self, sample: DatasetSample, *, raw: bool, position: str) -> None:
        # What the review page shows: a sample whose PII could not be redacted is withheld unless --raw.
        content = sample.content if raw else sample.visible_content()
        self.stdout.write("")
        self.stdout.write(self.style.MIGRATE_HEADING(f"── {position}  {sample.sample_type}  {sample.id}"))
        score = f"{sample.quality_score:.3f}" if sample.quality_score is not None else "-"
        factors = ", ".join(f"{k} {v:.2f}" for k, v in (sample.quality_factors or {}).items())
        self.stdout.write(f"quality {score} ({factors})  status {sample.annotation_status}  PII {sample.contains_pii}")
        if sample.annotation_notes:
            self.stdout.write(f"notes: {sample.annotation_notes if raw else redact(sample.annotation_notes)}")
        if content is None:
            self.stdout.write(WITHHELD)
            return
        for line in describe(content):
            self.stdout.write(line)

    def handle_review(self, options: dict[str, Any]) -> None:
        samples = DatasetSample.objects.filter(annotation_status=options["status"])
        if options["type"]:
            samples = samples.filter(sample_type__in=sample_types_for(options["type"]))
        ids = list(samples.order_by(F("quality_score").desc(nulls_last=True), "id").values_list("id", flat=True))
        if options["limit"]:
            ids = ids[: options["limit"]]
        if not ids:
            self.stdout.write(f"Nothing to review: no {options['status']} samples.")
            return
        annotator = self._annotator(options)
        counts = {"approved": 0, "rejected": 0, "skipped": 0}
        for index, sample_id in enumerate(ids, start=1):
            sample = DatasetSample.objects.filter(id=sample_id).first()
            if sample is None or sample.annotation_status != options["status"]:
                continue  # Reviewed elsewhere meanwhile.
            self._show(sample, raw=options["raw"], position=f"{index}/{len(ids)}")
            while True:
                self.stdout.write("[a]pprove  [r]eject  [s]kip  [q]uit > ", ending="")
                self.stdout.flush()
                key = self._read_key()
                if key in ("a", "r", "s", "q"):
                    break
                self.stdout.write("Press a, r, s or q.")
            if key == "q":
                break
            if key == "s":
                counts["skipped"] += 1
                continue
            status = AnnotationStatus.APPROVED if key == "a" else AnnotationStatus.REJECTED
            annotate_sample(sample, status=status, annotated_by=annotator)
            counts["approved" if key == "a" else "rejected"] += 1
            self.stdout.write(self.style.SUCCESS(f"{status}"))
        self.stdout.write(
            f"Reviewed: {counts['approved']} approved, {counts['rejected']} rejected, {counts['skipped']} skipped."
        )

    # --- approve / reject -------------------------------------------------------------------------
    def handle_approve(self, options: dict[str, Any]) -> None:
        sample = self._sample(options["sample_id"])
        annotate_sample(
            sample, status=AnnotationStatus.APPROVED, annotated_by=self._annotator(options), notes=options["notes"]
        )
        self.stdout.write(self.style.SUCCESS(f"Approved {sample.id}"))

    def handle_reject(self, options: dict[str, Any]) -> None:
        sample = self._sample(options["sample_id"])
        annotate_sample(
            sample, status=AnnotationStatus.REJECTED, annotated_by=self._annotator(options), notes=options["notes"]
        )
        self.stdout.write(self.style.SUCCESS(f"Rejected {sample.id}"))

    # --- export -----------------------------------------------------------------------------------
    def handle_export(self, options: dict[str, Any]) -> None:
        directory, name = None, None
        if options["output"]:
            output = Path(options["output"]).expanduser()
            if output.is_dir() or options["output"].endswith(("/", "\\")):
                directory = output
            else:
                directory = output.parent
                name = output.name
                for suffix in (".jsonl", ".json", ".csv"):
                    if name.endswith(suffix):
                        name = name[: -len(suffix)]
                        break
        export = create_export(
            export_format=options["format"],
            name=name,
            sample_types=sample_types_for(options["type"]) if options["type"] else [],
            only_approved=options["only_approved"],
            min_quality=options["min_quality"],
            include_pii=options["include_pii"],
            train_split=options["train_split"],
            session_id=options["session"],
            exported_by=self._annotator({}),
            directory=directory.resolve() if directory is not None else None,
        )
        export = claim_export(export.id)  # Run here, in this process; no worker will take it.
        bar, progress = self._bar("export")
        try:
            export = write_export(export, progress=progress)
        except Exception as exc:
            raise CommandError(f"Export failed: {exc}") from exc
        finally:
            bar.close()
        if options["json"]:
            self._json({"id": export.id, "files": export.files, "total_samples": export.total_samples})
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"Exported {export.total_samples} sample(s) as {export.export_format} "
                f"({export.train_samples} train, {export.validation_samples} validation)."
            )
        )
        for f in export.files:
            self.stdout.write(
                f"  {f['split']:<10} {f['samples']:>8} samples  {f['size_bytes']:>10} bytes  sha256 {f['sha256']}"
            )
            self.stdout.write(f"             {f['path']}")
        if export.skipped_pii_samples:
            self.stdout.write(f"  left out (PII not redactable): {export.skipped_pii_samples}")
        if export.rejected_samples:
            self.stdout.write(f"  left out (rejected): {export.rejected_samples}")
        if options["include_pii"]:
            self.stdout.write(self.style.WARNING("  These files hold unredacted text (--include-pii)."))

    # --- stats and quality ------------------------------------------------------------------------
    def _counts_table(self, data: dict[str, Any]) -> None:
        width = max([len(r["key"]) for r in data["rows"]] + [8])
        peak = max([r["count"] for r in data["rows"]] + [1])
        self.stdout.write(self.style.MIGRATE_HEADING(f"By {data['by']} (total {data['total']})"))
        for row in data["rows"]:
            bar = "█" * round(BAR_WIDTH * row["count"] / peak)
            self.stdout.write(f"  {row['key']:<{width}}  {row['count']:>7}  {bar}")

    def handle_stats(self, options: dict[str, Any]) -> None:
        if options["quality_distribution"]:
            self.handle_quality(options)
            return
        if options["daily"]:
            kinds = ["daily"]
        elif options["by_type"]:
            kinds = ["type"]
        elif options["by_status"]:
            kinds = ["status"]
        else:
            kinds = ["type", "status"]
        results = [queries.counts_by(kind, days=options["days"]) for kind in kinds]
        if options["json"]:
            self._json(results if len(results) > 1 else results[0])
            return
        for data in results:
            self._counts_table(data)

    def handle_quality(self, options: dict[str, Any]) -> None:
        data = queries.quality_distribution()
        if options.get("json"):
            self._json(data)
            return
        self.stdout.write(self.style.MIGRATE_HEADING(f"Quality of {data['count']} scored sample(s)"))
        if not data["count"]:
            self.stdout.write("  No scored samples yet.")
            return
        self.stdout.write(
            f"  mean {data['mean']:.3f}  median {data['median']:.3f}  min {data['min']:.3f}  max {data['max']:.3f}  "
            f"below minQualityScore {data['min_quality']}: {data['below_min_quality']}  unscored: {data['unscored']}"
        )
        peak = max(b["count"] for b in data["buckets"]) or 1
        for b in data["buckets"]:
            bar = "█" * round(BAR_WIDTH * b["count"] / peak)
            self.stdout.write(f"  {b['from']:.1f}–{b['to']:.1f}  {b['count']:>7}  {bar}")
        self.stdout.write(
            "  factor means: " + ", ".join(f"{k} {v:.3f}" for k, v in data["factors"].items() if v is not None)
        )
        self.stdout.write("  mean by type: " + ", ".join(f"{k} {v:.3f}" for k, v in data["by_type"].items()))

    # --- evaluate ---------------------------------------------------------------------------------
    def handle_evaluate(self, options: dict[str, Any]) -> None:
        from dataset_app.evaluate import evaluate

        bar, progress = self._bar("evaluate")
        try:
            run = evaluate(
                stage=options["stage"],
                model=options["model"],
                split=options["split"],
                offline=True if options["offline"] else None,
                created_by=self._annotator({}),
                progress=progress,
            )
        finally:
            bar.close()
        if options["json"]:
            import reflection_site.api  # noqa: F401 - first: its routers import the app schemas (an import cycle)
            from dataset_app.schemas import EvaluationOut

            self._json(EvaluationOut.from_orm(run).dict())
            return
        accuracy = f"{run.accuracy:.3f}" if run.accuracy is not None else "n/a"
        self.stdout.write(
            self.style.SUCCESS(
                f"Evaluation {run.id}: {run.stage} {run.model_label} (prompt {run.prompt_version or '-'}) on "
                f"{run.sample_count} {run.split} sample(s): accuracy {accuracy}, {run.error_count} error(s)."
            )
        )
        if not run.sample_count:
            self.stdout.write(self._empty_split_hint(run))
            return
        self.stdout.write(f"  {'LABEL':<16} {'PRECISION':>9} {'RECALL':>7} {'F1':>6} {'SUPPORT':>8}")
        for label, m in run.metrics.items():
            fmt = lambda v: f"{v:.3f}" if v is not None else "-"  # noqa: E731
            self.stdout.write(
                f"  {label:<16} {fmt(m['precision']):>9} {fmt(m['recall']):>7} {fmt(m['f1']):>6} {m['support']:>8}"
            )
        labels = run.confusion.get("labels", [])
        matrix = run.confusion.get("matrix", [])
        used = [i for i, _ in enumerate(labels) if any(matrix[i]) or any(row[i] for row in matrix)]
        width = max([len(labels[j]) for j in used] + [5]) + 2  # whole labels: UPDATE_USER, UPDATE_IDENTITY
        self.stdout.write("  confusion (rows: expected, columns: predicted)")
        self.stdout.write("  " + " " * width + "".join(f"{labels[j]:>{width}}" for j in used))
        for i in used:
            self.stdout.write(f"  {labels[i]:<{width}}" + "".join(f"{matrix[i][j]:>{width}}" for j in used))

    @staticmethod
    def _empty_split_hint(run: Any) -> str:
        """Why a run found no sample: none approved for the stage, or all of them on the other side of the split."""
        from dataset_app.evaluate import evaluation_samples

        everywhere = sum(1 for _ in evaluation_samples(stage=run.stage, split="all", train_split=run.train_split))
        if not everywhere:
            return f"  No approved {run.stage} samples yet. Approve some (dataset review) and try again."
        return (
            f"  No approved {run.stage} sample falls in the {run.split} split, but {everywhere} approved sample(s) "
            f"fall in the other one. Each sample goes to train or validation by a hash of its id "
            f"(DATASET_TRAIN_SPLIT={run.train_split:g}, the same split as exports), so a handful of samples may all "
            f"land on one side. Use --split all to evaluate on every approved sample."
        )

    # --- periodic jobs by hand --------------------------------------------------------------------
    def handle_export_conversations(self, options: dict[str, Any]) -> None:
        from dataset_app.retention import export_conversations

        result = export_conversations(options["date"])
        self.stdout.write(self.style.SUCCESS(f"Exported {result.turns} turn(s) to {result.path}"))

    def handle_prune_exports(self, options: dict[str, Any]) -> None:
        from dataset_app.retention import prune_export_files

        deleted = prune_export_files()
        self.stdout.write(f"Deleted {len(deleted)} old conversation export(s)")

    def handle_retention(self, options: dict[str, Any]) -> None:
        from dataset_app.retention import apply_retention

        result = apply_retention(days=options["days"], dry_run=options["dry_run"])
        verb = "Would delete" if options["dry_run"] else "Deleted"
        self.stdout.write(
            f"{verb} {result.sessions_deleted} inactive session(s); kept {result.sessions_kept} with approved "
            f"samples; {result.snapshots_deleted} snapshot(s) freed; {result.sessions_failed} protected."
        )

    def handle_sweep_exports(self, options: dict[str, Any]) -> None:
        from dataset_app.exporters import sweep_stale_exports

        self.stdout.write(f"Requeued {sweep_stale_exports()} export(s)")


# --- Showing a sample in a terminal -----------------------------------------------------------------


def describe(content: dict[str, Any]) -> list[str]:
    """A sample's content as readable lines: the conversation, then the decision and its correction."""
    lines: list[str] = []
    kind = content.get("type")

    def say(messages: list[dict[str, Any]]) -> None:
        for m in messages or []:
            who = "USER " if m.get("role") == "user" else "AGENT"
            lines.append(f"  {who} │ {m.get('message', '')}")

    if kind in (SampleType.MEMORY_GATE_POSITIVE, SampleType.MEMORY_GATE_NEGATIVE):
        say(content.get("conversation") or [])
        if kind == SampleType.MEMORY_GATE_POSITIVE:
            lines.append(f"  gate decision: {content.get('correctDecision')}  fact: {content.get('correctFact')}")
            lines.append(f"  reason: {content.get('reason')}")
        else:
            lines.append(f"  gate said: {content.get('incorrectDecision')}  fact: {content.get('incorrectFact')}")
            lines.append(f"  correct:   {content.get('correctDecision')}  fact: {content.get('correctFact') or '-'}")
            lines.append(f"  why: {content.get('rejectionReason')}")
    elif kind == SampleType.WRITE_GUARDIAN_DECISION:
        lines.append(f"  fact → {content.get('targetFile')}: {content.get('candidateFact')}")
        lines.append(f"  guardian: {content.get('decision')}  ({content.get('reason')})")
        correction = content.get("userCorrection")
        if correction:
            lines.append(f"  corrected to: {correction.get('correctedDecision')}  ({correction.get('reason')})")
        if content.get("diff"):
            lines.extend("  " + line for line in str(content["diff"]).splitlines()[:20])
    elif kind == SampleType.ANNOTATED_TURN:
        say(content.get("context") or [])
        gate = content.get("memoryGate") or {}
        given = gate.get("input") or {}
        say(
            [
                {"role": "user", "message": given.get("userMessage")},
                {"role": "agent", "message": given.get("agentReply")},
            ]
        )
        out = gate.get("output") or {}
        lines.append(
            f"  gate: {out.get('decision')}  fact: {out.get('candidateFact') or '-'}  label: {gate.get('label')}"
        )
        if gate.get("correctedOutput"):
            c = gate["correctedOutput"]
            lines.append(
                f"  corrected: {c.get('decision')}  fact: {c.get('candidateFact') or '-'}  ({c.get('reason')})"
            )
        guardian = content.get("writeGuardian")
        if guardian:
            lines.append(f"  guardian: {(guardian.get('output') or {}).get('status')}  label: {guardian.get('label')}")
        feedback = content.get("feedback")
        if feedback:
            lines.append(f"  feedback: {feedback.get('last')} ({len(feedback.get('events') or [])} event(s))")
    return lines
