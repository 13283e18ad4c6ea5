"""``python manage.py import_openclaw PATH``: backfill Reflection from an OpenClaw ``sessions/`` folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.openclaw_import import import_sessions


class Command(BaseCommand):
    help = (
        "Import OpenClaw transcripts: PATH is a sessions/ folder (registry.json5, chats/*.json5, groups/*.json5) "
        "or the OpenClaw home that holds it. Each transcript becomes a session, each user message and the reply "
        "that follows a turn with its context window, through the same code path as the ingest API. Running it "
        "again imports nothing twice. A file that does not parse is reported by name and skipped. Imported turns "
        "skip the memory gate unless --gate."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="The sessions/ folder (or the OpenClaw home).")
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
                bar = tqdm(total=total, unit="file", desc="importing", file=self.stderr._out, leave=False)
            bar.set_postfix_str(name, refresh=False)
            bar.update(1)

        try:
            report = import_sessions(
                options["path"],
                dry_run=options["dry_run"],
                gate=options["gate"],
                progress=None if options["no_progress"] else progress,
            )
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            if bar is not None:
                bar.close()
        for name, why in report.malformed:
            self.stderr.write(self.style.WARNING(f"Skipped malformed file {name}: {why}"))
        for refused in report.turns_failed:
            self.stderr.write(self.style.WARNING(f"Refused {refused}"))
        if options["json"]:
            self.stdout.write(json.dumps(report.__dict__, indent=2, ensure_ascii=False))
            return
        style = self.style.WARNING if report.malformed or report.turns_failed else self.style.SUCCESS
        self.stdout.write(style(report.summary()))
