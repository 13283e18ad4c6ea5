"""The seed's ``memory`` CLI (seed 001): ``memory index [--rebuild]`` and ``memory recall "…" --k 25 --since 30d``;
``memory reflect --since 7d [--dry-run]``, ``memory project`` and ``memory report --date …`` (seed 004).

Adding a subcommand is two methods and one line: name it in ``ACTIONS``, then write
``add_<name>_arguments(self, parser)`` and ``handle_<name>(self, options)``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from guardian_app.recall.index import index_status, index_workspace
from guardian_app.recall.query import InvalidRecallQuery
from guardian_app.recall.recall import MAX_K, MODES, recall
from reflection_site import cli


class Command(BaseCommand):
    help = (
        "The memory index over the workspace's Markdown. `index` brings it up to date (files whose size and "
        "mtime are unchanged are skipped; --rebuild re-reads everything); `recall` prints the best facts for a "
        "query with their file and lines, after a quick incremental index (--no-index skips it). `reflect` "
        "updates entity pages and opinions from the facts of a period (first finishing any run a crash "
        "interrupted); `project` writes the daily projection; `report` prints a day's change report."
    )

    # Subcommand -> one-line help. Each has add_<name>_arguments and handle_<name> ("-" as "_").
    ACTIONS: dict[str, str] = {
        "index": "Bring the recall index up to date with the workspace's Markdown.",
        "recall": "Print the best facts for a query, with their file and lines.",
        "eval": "Replay a labelled conversation corpus through the pipeline on a scratch workspace and print "
        "captured, stale, duplicates, misattributed, poison, small talk and secrets written (nothing is kept).",
        "eval-recall": "Measure recall@5/@10 on public data beside plain FTS5 bm25 (nothing is kept).",
        # Reflect (seeds 001, 004):
        "reflect": "Update entity pages and opinions from the facts of a period (audited writes).",
        "project": "Write the daily projection (category views and summary) under PROJECTION_DIR.",
        "report": "Print a day's change report: facts created, merged, skipped, refused, rolled back.",
    }

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="{" + ",".join(self.ACTIONS) + "}")
        for name, text in self.ACTIONS.items():
            getattr(self, f"add_{name.replace('-', '_')}_arguments")(sub.add_parser(name, help=text, description=text))

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"handle_{options['action'].replace('-', '_')}")(options)

    # --- index ------------------------------------------------------------------------------------------
    def add_index_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rebuild", action="store_true", help="Drop every chunk and index all files again.")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle_index(self, options: dict[str, Any]) -> None:
        from tqdm import tqdm

        bar: tqdm | None = None

        def progress(done: int, total: int, path: str) -> None:
            nonlocal bar
            if bar is None:
                # disable=None: no bar when stderr is not a terminal (a log, a pipe), where it was left as text.
                bar = tqdm(total=total, unit="file", desc="indexing", file=self.stderr._out, leave=False, disable=None)
            bar.set_postfix_str(path, refresh=False)
            bar.update(1)
            bar.refresh()  # tqdm draws at most every 0.1 s: a fast file left the bar at 0 % while the rest ran.

        try:
            report = index_workspace(rebuild=options["rebuild"], progress=None if options["no_progress"] else progress)
        finally:
            if bar is not None:
                bar.close()
        if options["json"]:
            self.stdout.write(json.dumps({**report.__dict__, "status": index_status()}, default=str, indent=2))
            return
        style = self.style.WARNING if report.embedding_error or report.files_too_large else self.style.SUCCESS
        self.stdout.write(style(f"Indexed {report.summary()}"))
        for path in report.files_too_large:
            self.stdout.write(self.style.WARNING(f"Skipped {path}: larger than RECALL_MAX_FILE_BYTES"))

    # --- recall -----------------------------------------------------------------------------------------
    def add_recall_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query", help="What to recall, in plain words.")
        parser.add_argument("--k", type=int, default=None, help=f"How many results (1-{MAX_K}; default 25).")
        parser.add_argument("--since", help="30d, 12h, 2w, 6m, 1y, or an ISO date.")
        parser.add_argument("--until", help="As --since; a bare date includes that day.")
        parser.add_argument("--kind", choices=["world", "experience", "opinion", "observation"])
        parser.add_argument("--entity", help="Only facts tagged with this entity (@Peter -> Peter).")
        parser.add_argument("--file", help="Only this file (USER.md) or folder (memory/).")
        parser.add_argument(
            "--mode", choices=MODES, default="auto", help="auto (hybrid when embeddings are configured)."
        )
        parser.add_argument("--no-index", action="store_true", help="Skip the incremental index before searching.")
        parser.add_argument("--json", action="store_true", help="Print the answer as JSON.")

    def handle_recall(self, options: dict[str, Any]) -> None:
        if not options["no_index"]:
            index_workspace()
        try:
            answer = recall(
                options["query"],
                k=options["k"],
                since=options["since"],
                until=options["until"],
                kind=options["kind"],
                entity=options["entity"],
                file=options["file"],
                mode=options["mode"],
            )
        except InvalidRecallQuery as exc:
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps(answer.as_dict(), ensure_ascii=False, indent=2))
            return
        if answer.note:
            self.stderr.write(answer.note)
        if not answer.results:
            self.stdout.write("No matching facts.")
            return
        width = max(60, shutil.get_terminal_size((120, 20)).columns)
        sources = [r.source for r in answer.results]
        source_width = min(40, max(len(s) for s in sources))
        self.stdout.write(f"{'#':>3} {'SCORE':>7} {'SOURCE':<{source_width}} {'FROM':<10} {'KIND':<11} CONTENT")
        for rank, result in enumerate(answer.results, start=1):
            content = " ".join(result.content.split())
            room = max(20, width - source_width - 37)
            if len(content) > room:
                content = content[: room - 1] + "…"
            self.stdout.write(
                f"{rank:>3} {result.score:>7.3f} {result.source:<{source_width}} {result.origin:<10} "
                f"{(result.kind or '-'):<11} {content}"
            )
        self.stdout.write(f"{len(answer.results)} result(s), {answer.mode}, {answer.took_ms:.1f} ms")

    # --- eval-recall (issue 22) ---------------------------------------------------------------------------
    def add_eval_recall_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dataset",
            action="append",
            choices=["longmemeval-s", "longmemeval-s-transcripts", "seed-corpus", "seed-corpus-v2"],
            help="Data set(s) to run (default: both). See guardian_app/recall/recall_eval.py.",
        )
        parser.add_argument("--mode", choices=MODES, default="auto", help="Recall mode (default: the defaults).")
        parser.add_argument(
            "--split", choices=["tune", "heldout"], help="Only this split of the seed corpus (v2 is all held out)."
        )
        parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")

    def handle_eval_recall(self, options: dict[str, Any]) -> None:
        """Each data set in a temporary workspace, indexed and asked inside a transaction that is rolled back."""
        import tempfile

        from django.db import transaction
        from django.test.utils import override_settings

        from guardian_app.recall.recall_eval import DATASETS, evaluate, format_table

        results = []
        for name in options["dataset"] or list(DATASETS):
            dataset = DATASETS[name]()
            split = options["split"] if any(q.split == options["split"] for q in dataset.questions) else None
            with tempfile.TemporaryDirectory(prefix="eval-recall-") as folder:
                with override_settings(WORKSPACE_DIR=Path(folder), WORKSPACE_PROFILE="seed"), transaction.atomic():
                    result = evaluate(dataset, mode=options["mode"], split=split)
                    transaction.set_rollback(True)  # The project's own index keeps nothing of the evaluation.
            results.append(result)
            if not options["json"]:
                self.stdout.write(format_table(result) + "\n")
        if options["json"]:
            self.stdout.write(json.dumps([r.as_dict() for r in results], indent=2))

    # --- reflect (seeds 001, 004) -------------------------------------------------------------------------
    def add_reflect_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", help="30d, 12h, 1w or an ISO date (default: since the last run, else 7d).")
        parser.add_argument("--until", help="As --since (default: now).")
        parser.add_argument("--dry-run", action="store_true", help="Show what would change; write nothing.")
        parser.add_argument("--no-resume", action="store_true", help="Do not first finish interrupted runs.")
        parser.add_argument("--json", action="store_true", help="Print the run as JSON.")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def _progress_bar(self, options: dict[str, Any], desc: str) -> Any:
        from tqdm import tqdm

        state: dict[str, Any] = {"bar": None}

        def progress(done: int, total: int, label: str) -> None:
            if options.get("no_progress") or options.get("json"):
                return
            if state["bar"] is None or state["bar"].total != total:
                if state["bar"] is not None:
                    state["bar"].close()
                state["bar"] = tqdm(total=total, desc=desc, file=self.stderr._out, leave=False, disable=None)
            state["bar"].set_postfix_str(label[:40], refresh=False)
            # update(), not n = done: tqdm then knows the rate (it printed 131072.00it/s after a jump of n).
            state["bar"].update(done - state["bar"].n)
            state["bar"].refresh()

        def close() -> None:
            if state["bar"] is not None:
                state["bar"].close()

        progress.close = close  # type: ignore[attr-defined]
        return progress

    def _print_run(self, run: Any) -> None:
        verb = "Would change" if run.dry_run else "Reflect"
        self.stdout.write(
            self.style.SUCCESS(
                f"{verb} {run.id} ({run.since:%Y-%m-%d %H:%M} to {run.until:%Y-%m-%d %H:%M}): {run.facts_count} fact(s), "
                f"{run.entities_count} entit(ies); pages {run.pages_written} {'to write' if run.dry_run else 'written'}, "
                f"{run.pages_unchanged} unchanged, {run.pages_refused} refused; opinions {run.opinions_created} new, "
                f"{run.opinions_updated} moved; {run.memory_proposals} MEMORY.md proposal(s); {run.skill_drafts} skill draft(s)"
            )
        )
        for page in run.stats.get("pages", []):
            change = f"+{page.get('lines_added', 0)} -{page.get('lines_removed', 0)}" if "lines_added" in page else ""
            what = page.get("page") if page.get("type") != "memory" else f"MEMORY.md: {page.get('fact', '')[:60]}"
            audit = f"  audit {page['audit_id']}" if page.get("audit_id") else ""
            self.stdout.write(f"  {page.get('status', ''):<13} {what}  {change}{audit}")
            if run.dry_run and page.get("diff"):
                self.stdout.write(page["diff"])
        for item in run.stats.get("excluded", [])[:20]:
            self.stdout.write(self.style.WARNING(f"  left out {item.get('source')}: {item.get('reason')}"))

    def handle_reflect(self, options: dict[str, Any]) -> None:
        from guardian_app.reflect.reflect import InvalidReflectRequest, execute_run, resume_interrupted, start_run
        from reflection_site.checkpoints import CheckpointBusy

        progress = self._progress_bar(options, "reflect")
        try:
            if not options["no_resume"] and not options["dry_run"]:
                for run in resume_interrupted(progress=progress):
                    if not options["json"]:
                        self.stdout.write(f"Finished interrupted run {run.id}.")
                        self._print_run(run)
            try:
                run = start_run(
                    since=options["since"], until=options["until"], dry_run=options["dry_run"], requested_by="cli"
                )
            except InvalidReflectRequest as exc:
                raise CommandError(exc.message) from exc
            try:
                run = execute_run(run, progress=progress)
            except CheckpointBusy as exc:
                raise CommandError(exc.message) from exc
        finally:
            progress.close()
        if options["json"]:
            from guardian_app.reflect.run_state import run_as_dict

            self.stdout.write(json.dumps(run_as_dict(run), default=str, indent=2, ensure_ascii=False))
            return
        self._print_run(run)

    # --- project ------------------------------------------------------------------------------------------
    def add_project_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--date", help="The summary's day, YYYY-MM-DD (default: today).")
        parser.add_argument("--json", action="store_true", help="Print the files written as JSON.")

    def handle_project(self, options: dict[str, Any]) -> None:
        from guardian_app.reflect.projection import project

        projection = project(day=_parse_day(options["date"]))
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "day": projection.day.isoformat(),
                        "files": [str(p) for p in projection.files],
                        "totals": projection.totals,
                    },
                    indent=2,
                )
            )
            return
        self.stdout.write(self.style.SUCCESS(projection.summary()))
        for path in projection.files:
            self.stdout.write(f"  {path}")

    # --- report -------------------------------------------------------------------------------------------
    def add_report_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--date", help="YYYY-MM-DD, today or yesterday (default: today).")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
        parser.add_argument("--post", action="store_true", help="Also post it to REPORT_WEBHOOK_URL (by a worker).")

    def handle_report(self, options: dict[str, Any]) -> None:
        from django.conf import settings

        from guardian_app.reflect.reports import daily_report, queue_delivery, render_markdown

        report = daily_report(_parse_day(options["date"]))
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2, ensure_ascii=False, default=str))
        else:
            self.stdout.write(render_markdown(report))
        if options["post"]:
            if not settings.REPORT_WEBHOOK_URL:
                raise CommandError("REPORT_WEBHOOK_URL is not set.")
            queue_delivery(report.day, force=True)
            self.stderr.write(f"Queued the report of {report.day} for the webhook.")

    # --- eval (issue 21) ----------------------------------------------------------------------------------
    def add_eval_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "corpus",
            nargs="?",
            help="A JSONL corpus, one session a line (default: the shipped tests/fixtures/memory_eval/conversations.jsonl).",
        )
        parser.add_argument("--split", help="Replay only the sessions of this split (dev, heldout).")
        parser.add_argument("--owner", action="append", help="An owner sender id (else the first sender seen).")
        parser.add_argument("--problems", action="store_true", help="List every miss, stale line and leak.")
        parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")

    def handle_eval(self, options: dict[str, Any]) -> None:
        from pathlib import Path

        from django.conf import settings

        from guardian_app.write.memory_eval import load_corpus, replay

        corpus = Path(options["corpus"] or Path(settings.BASE_DIR) / "tests/fixtures/memory_eval/conversations.jsonl")
        try:
            sessions = load_corpus(corpus)
        except (OSError, ValueError) as exc:
            raise CommandError(f"{corpus}: {exc}") from exc
        if options["split"]:
            sessions = [s for s in sessions if s.get("split") == options["split"]]
            if not sessions:
                raise CommandError(f"no session of split {options['split']!r} in {corpus}")
        from django.db import DatabaseError

        try:
            report = replay(sessions, owner_ids=options["owner"])
        except DatabaseError as exc:
            raise CommandError(f"the database is not ready ({exc}); run `python manage.py migrate` first") from exc
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
            return
        self.stdout.write(f"memory eval of {corpus} ({report.mode}, {report.turns_per_s:.0f} turns/s)")
        header = f"{'split':<8} {'turns':>5} {'captured':>9} {'stale':>6} {'dupl.':>6} {'misattr.':>8} "
        self.stdout.write(header + f"{'poison':>7} {'smalltalk':>9} {'secrets':>7}")
        for name, f in report.splits.items():
            self.stdout.write(
                f"{name:<8} {f.turns:>5} {f.captured:>9.3f} {f.stale:>6} {f.duplicates:>6} {f.misattributed:>8} "
                f"{f.poison_written:>7} {f.smalltalk_written:>9} {f.secrets_written:>7}"
            )
        if options["problems"]:
            for problem in report.splits["all"].problems:
                self.stdout.write(f"  {problem}")


def _parse_day(value: str | None) -> Any:
    """``today``, ``yesterday`` or an ISO date (``reflection_site.cli.parse_day``); a CommandError otherwise."""
    from django.utils import timezone

    try:
        return cli.parse_day(value, today=timezone.localdate())
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
