"""``python manage.py import_openclaw PATH``: backfill Reflection from what OpenClaw has stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.openclaw_import import NothingToImport, import_sessions


class Command(BaseCommand):
    help = (
        "Import OpenClaw's sessions: PATH is the OpenClaw home (~/.openclaw), one agent's folder, its "
        "openclaw-agent.sqlite store or a legacy sessions/ folder. Reads each agent's SQLite store "
        "(agents/<id>/agent/openclaw-agent.sqlite, read-only, zstd rows decoded) and legacy sessions.json + "
        "<sessionId>.jsonl files and .jsonl.zst archives. Each session key becomes one session, each user "
        "message and what follows it a turn with its context window, through the same code path as the ingest "
        "API, with the ids the OpenClaw plugin uses: running it again, or after the plugin fed the same turns, "
        "imports nothing twice. A source that cannot be read is reported by name and skipped; finding nothing "
        "at all is an error naming where it looked. Imported turns skip the memory gate unless --gate."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path", type=Path, nargs="?", default=Path("~/.openclaw"), help="Where OpenClaw keeps its state."
        )
        parser.add_argument("--dry-run", action="store_true", help="Parse and count; store nothing.")
        parser.add_argument("--gate", action="store_true", help="Send the imported turns through the memory gate.")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        from tqdm import tqdm

        bar: tqdm | None = None

        def progress(done: int, total: int, name: str) -> None:
            nonlocal bar
            if bar is None:
                bar = tqdm(total=total, unit="source", desc="importing", file=self.stderr._out, leave=False)
            bar.set_postfix_str(name, refresh=False)
            bar.update(1)

        try:
            report = import_sessions(
                options["path"],
                dry_run=options["dry_run"],
                gate=options["gate"],
                progress=None if options["no_progress"] else progress,
            )
        except (FileNotFoundError, NothingToImport) as exc:
            raise CommandError(str(exc)) from exc
        finally:
            if bar is not None:
                bar.close()
        for name, why in report.malformed:
            self.stderr.write(self.style.WARNING(f"Skipped unreadable {name}: {' '.join(why.split())}"))
        for refused in report.turns_failed:
            self.stderr.write(self.style.WARNING(f"Refused {refused}"))
        if options["json"]:
            self.stdout.write(json.dumps(report.__dict__, indent=2, ensure_ascii=False))
            return
        style = self.style.WARNING if report.malformed or report.turns_failed else self.style.SUCCESS
        self.stdout.write(style(report.summary()))
