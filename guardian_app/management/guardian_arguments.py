"""The `guardian` command's subcommands and options (the seed's CLI), kept apart from what each one does."""

from __future__ import annotations

from argparse import ArgumentParser, _SubParsersAction
from pathlib import Path

from django.core.management.base import CommandError
from django.utils import timezone

from guardian_app.models import WriteGuardianAudit
from reflection_site import cli, memory_files

STATUSES = WriteGuardianAudit.Status.values
# --since/--until: 30d, an ISO date or time (in TIME_ZONE without a zone), epoch milliseconds.
_when = cli.time_argument(tz=timezone.get_current_timezone, now=timezone.now)


def _file(value: str) -> str:
    names = memory_files.active().files  # The workspace profile's (WORKSPACE_PROFILE).
    if value not in names:
        raise CommandError(f"unknown memory file {value!r}; expected one of {', '.join(names)}")
    return value


def add_arguments(parser: ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    _add_reading(actions)
    _add_changing(actions)
    _add_upkeep(actions)


def _filters(sub: ArgumentParser, *, default_limit: int | None) -> None:
    sub.add_argument("session_key", nargs="?", help="Only this session's audits.")
    sub.add_argument("-l", "--limit", type=int, default=default_limit, help="At most N audits, newest first.")
    sub.add_argument("-f", "--file", type=_file, help="Only this memory file.")
    sub.add_argument("-s", "--status", choices=STATUSES, help="Only this status.")
    sub.add_argument("--since", type=_when, help=f"Created at or after ({cli.TIME_HELP}).")
    sub.add_argument("--until", type=_when, help="Created at or before (the same forms).")


def _add_reading(actions: _SubParsersAction) -> None:
    """list, show, diff, history, export, files: what the audits and files say."""
    listing = actions.add_parser("list", help="List audits, newest first.")
    _filters(listing, default_limit=10)
    listing.add_argument("-d", "--with-diff", action="store_true", help="Show each audit's diff summary.")
    listing.add_argument("--json", action="store_true")
    show = actions.add_parser("show", help="One audit in full, with its diff.")
    show.add_argument("audit_id")
    show.add_argument("--include-content", action="store_true", help="Print the file before and after.")
    show.add_argument("--json", action="store_true")
    diff = actions.add_parser("diff", help="An audit's unified diff.")
    diff.add_argument("audit_id")
    diff.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    history = actions.add_parser("history", help="A file's versions, newest first.")
    history.add_argument("file_name", nargs="?", type=_file, help="The file (or -f).")
    history.add_argument("-f", "--file", type=_file, help="The file.")
    history.add_argument("-l", "--limit", type=int, default=20, help="At most N versions (default 20).")
    history.add_argument("-d", "--with-diff", action="store_true", help="Print each version's diff.")
    history.add_argument("--json", action="store_true")
    export = actions.add_parser("export", help="Write the matching audits to a file.")
    _filters(export, default_limit=None)
    export.add_argument("--format", choices=["json", "csv", "markdown"], default="json")
    export.add_argument("-o", "--output", type=Path, help="File to write (default: stdout).")
    export.add_argument("--include-content", action="store_true", help="Include the files before and after.")
    files = actions.add_parser("files", help="The workspace profile's memory files, where they are and their sizes.")
    files.add_argument("--json", action="store_true")


def _add_changing(actions: _SubParsersAction) -> None:
    """rollback, rollback-session, retry, correct: what changes a file or records a label."""
    rollback = actions.add_parser("rollback", help="Undo one write, keeping later changes.")
    rollback.add_argument("audit_id")
    rollback.add_argument("--reason", help='Why (default: "rolled back from the CLI by <user>").')
    rollback.add_argument("--force", action="store_true", help="Overwrite overlapping later changes.")
    rollback.add_argument(
        "--dry-run", action="store_true", help="Only show the change it would make now, or its conflict."
    )
    rollback.add_argument("--by", default="cli", help="Who asks (default: cli).")
    rollback.add_argument("--json", action="store_true")
    session = actions.add_parser("rollback-session", help="Undo a session's writes, all or nothing.")
    session.add_argument("session_id")
    session.add_argument("--reason", help='Why (default: "rolled back from the CLI by <user>").')
    session.add_argument("--since", type=_when)
    session.add_argument("--until", type=_when)
    session.add_argument("--dry-run", action="store_true")
    session.add_argument("--partial", action="store_true", help="Apply the clean ones, report the rest.")
    session.add_argument("--by", default="cli")
    session.add_argument("--json", action="store_true")
    retry = actions.add_parser("retry", help="Run the guardian again for an audit's decision.")
    retry.add_argument("audit_id")
    retry.add_argument("--fact", help="A corrected fact.")
    retry.add_argument("--file", type=_file, help="Another target file.")
    retry.add_argument("--by", default="cli")
    correct = actions.add_parser("correct", help="Record the right outcome for an audit.")
    correct.add_argument("audit_id")
    correct.add_argument("--status", required=True, choices=["written", "refused"])
    correct.add_argument("--fact", help="The corrected candidate fact.")
    correct.add_argument("--file", type=_file, help="The corrected target file.")
    correct.add_argument("--reason", required=True)
    correct.add_argument("--apply-to-future", action="store_true", help="Steer the gate and guardian from now on.")
    correct.add_argument("--pattern", help="The correction pattern (default: derived from the fact).")
    correct.add_argument(
        "--about",
        metavar="NAME|owner",
        help="Whose fact it is: a person's name (MEMORY.md, the person named) or 'owner' (USER.md); the corrected "
        "fact and file follow from it.",
    )
    correct.add_argument("--by", default="cli")
    correct.add_argument(
        "--apply",
        action="store_true",
        help="Also change the file now, as audited writes: roll the write back (refused), and/or write the "
        "corrected fact (written).",
    )


def _add_upkeep(actions: _SubParsersAction) -> None:
    """sweep, drift, consolidate: what the schedules do, run by hand."""
    sweep = actions.add_parser("sweep", help="Re-enqueue UPDATE_* decisions still without an audit.")
    sweep.add_argument("--grace", type=int, default=None, help="Seconds (default GUARDIAN_SWEEP_GRACE_S).")
    actions.add_parser("drift", help="Record hand edits of the memory files now (as the 10-minute task does).")
    consolidate = actions.add_parser(
        "consolidate", help="Remove repeated and superseded lines of the memory files, one audited write each."
    )
    consolidate.add_argument("--dry-run", action="store_true", help="Show what would be removed, write nothing.")
    consolidate.add_argument("--file", action="append", dest="files", help="Only this file (repeatable).")
    consolidate.add_argument("--json", action="store_true")
