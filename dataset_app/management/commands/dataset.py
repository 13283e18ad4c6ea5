"""``python manage.py dataset …``: the seed's ``/reflection dataset`` command."""

from __future__ import annotations

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
from dataset_app.collect import collect_samples, sample_types_for
from dataset_app.errors import DatasetError
from dataset_app.exporters.registry import writers
from dataset_app.exports import claim_export, create_export, write_export
from dataset_app.management.dataset_arguments import add_arguments
from dataset_app.models import AnnotationStatus, DatasetSample
from dataset_app.review import content_for, describe
from reflection_site import cli
from reflection_site.privacy import redact

BAR_WIDTH = 40
WITHHELD = "  (text withheld: it holds personal data that could not be redacted; --raw shows it)"


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
        add_arguments(parser)

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
        table = [
            [
                s.id,
                s.sample_type,
                s.label,
                f"{s.quality_score:.3f}" if s.quality_score is not None else "-",
                s.annotation_status,
                "yes" if s.contains_pii else "no",
                f"{timezone.localtime(s.created_at):%Y-%m-%d %H:%M}",
            ]
            for s in rows
        ]
        headers = ["ID", "TYPE", "LABEL", "QUALITY", "STATUS", "PII", "CREATED"]
        self.stdout.write(cli.table(table, headers, right={3}))

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
        content, _ = content_for(sample, raw=raw)
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
                suffixes = {".json", *(writer.suffix for writer in writers().values())}  # -o sft.jsonl: "sft"
                name = next((name.removesuffix(s) for s in suffixes if name.endswith(s)), name)
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
        from dataset_app.evaluate import empty_split_hint, evaluate

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
            self.stdout.write("  " + empty_split_hint(run))
            return
        figures = [
            [label, *(f"{m[k]:.3f}" if m[k] is not None else "-" for k in ("precision", "recall", "f1")), m["support"]]
            for label, m in run.metrics.items()
        ]
        table = cli.table(figures, ["LABEL", "PRECISION", "RECALL", "F1", "SUPPORT"], right={1, 2, 3, 4})
        self.stdout.write("\n".join("  " + line for line in table.splitlines()))
        labels = run.confusion.get("labels", [])
        matrix = run.confusion.get("matrix", [])
        used = [i for i, _ in enumerate(labels) if any(matrix[i]) or any(row[i] for row in matrix)]
        width = max([len(labels[j]) for j in used] + [5]) + 2  # whole labels: UPDATE_USER, UPDATE_IDENTITY
        self.stdout.write("  confusion (rows: expected, columns: predicted)")
        self.stdout.write("  " + " " * width + "".join(f"{labels[j]:>{width}}" for j in used))
        for i in used:
            self.stdout.write(f"  {labels[i]:<{width}}" + "".join(f"{matrix[i][j]:>{width}}" for j in used))

    # --- periodic jobs by hand --------------------------------------------------------------------
    def handle_export_conversations(self, options: dict[str, Any]) -> None:
        from dataset_app.exporters.conversations import export_conversations

        result = export_conversations(options["date"])
        self.stdout.write(self.style.SUCCESS(f"Exported {result.turns} turn(s) to {result.path}"))

    def handle_prune_exports(self, options: dict[str, Any]) -> None:
        from dataset_app.exporters.conversations import prune_export_files

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
        from dataset_app.exports import sweep_stale_exports

        self.stdout.write(f"Requeued {sweep_stale_exports()} export(s)")
