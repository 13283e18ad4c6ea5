"""The seed's `/reflection guardian` CLI: list, show, diff, rollback, history, correct and export audits."""

from __future__ import annotations

import csv
import getpass
import json
import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import IO, Any

from django.core.management.base import BaseCommand, CommandError

from guardian_app.errors import GuardianError
from guardian_app.management.guardian_arguments import add_arguments
from guardian_app.models import WriteGuardianAudit
from guardian_app.queries import audit_record, file_history, list_audits
from guardian_app.write import history, locks, workspace
from guardian_app.write.corrections import apply_correction, correct_audit
from guardian_app.write.guardian import retry_write
from guardian_app.write.recovery import sweep_pending_decisions
from guardian_app.write.rollback import LineChange, preview_rollback, rollback_write
from guardian_app.write.session_rollback import rollback_session
from reflection_site import cli, memory_files
from reflection_site.errors import ReflectionError

CSV_FIELDS = [
    "id", "created_at", "status", "target_file", "candidate_fact", "reason", "held_for_review", "source",
    "source_ref", "requested_by", "decision_id", "turn_id", "session_id", "retry_of_id", "lines_added",
    "lines_removed", "lines_modified", "llm_model", "llm_latency_ms", "agent_steps", "rolled_back_at",
    "rolled_back_by", "rollback_reason",
]  # fmt: skip


def _reason(options: dict[str, Any]) -> str:
    """--reason, or the default the seed's bare `guardian rollback <audit-id>` gets."""
    return options["reason"] or f"rolled back from the CLI by {_user()}"


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # No login name (a container without a passwd entry).
        return "unknown"


def _plus_minus(version: Any) -> str:
    """``+a -r`` as ``git diff --stat`` counts them, from the version's diff: a replaced line is one of each (the
    stored counts call a replacement "modified", which this column used to leave out: "+0 -1" for a line
    replaced by a shorter block)."""
    if version.diff:
        lines = version.diff.splitlines()
        added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        return f"+{added} -{removed}"
    return f"+{version.lines_added or 0} -{version.lines_removed or 0}"


class Command(BaseCommand):
    help = (
        "Write-guardian audits. `list [SESSION]` shows the newest audits (default 10; -f file, -s status, "
        "--since/--until ISO 8601, -d with a diff summary). `show ID` prints one audit with its diff, `diff ID` "
        "only the diff (coloured on a terminal). `rollback ID [--reason …]` undoes one write and keeps later "
        "changes, and prints the lines it removed and restored; an overlapping later change stops it unless --force; "
        "--dry-run shows the change it would make. `rollback-session SESSION --reason …` "
        "does a session's writes all or nothing (--partial, --dry-run). `retry ID [--fact …] [--file …]` runs "
        "the guardian again. `history -f FILE -l N` lists a file's versions. `correct ID --status … --reason …` "
        "records a behaviour correction (--apply-to-future steers later runs). `export --format json|csv|markdown "
        "-o FILE [--include-content]` writes the matching audits. `sweep` re-enqueues decisions without an audit, "
        "`drift` records hand edits (and the agent's own, openclaw profile). `files` lists the workspace profile's "
        "memory files. --json gives machine-readable output."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, "handle_" + options["action"].replace("-", "_"))(options)
        except ReflectionError as exc:
            raise CommandError(exc.message) from exc

    # --- helpers --------------------------------------------------------------------------------
    def _audit(self, audit_id: str) -> WriteGuardianAudit:
        audit = (
            WriteGuardianAudit.objects.select_related("before_snapshot", "after_snapshot", "rollback")
            .filter(id=audit_id)
            .first()
        )
        if audit is None:
            raise CommandError(f"no audit {audit_id!r}")
        return audit

    def _selection(self, options: dict[str, Any]) -> Any:
        limit = options["limit"]
        if limit is not None and limit < 1:
            raise CommandError("--limit must be at least 1")
        audits = list_audits(
            session=options["session_key"],
            file=options["file"],
            status=options["status"],
            since=options["since"],
            until=options["until"],
        ).order_by("-created_at", "-id")
        return audits[:limit] if limit else audits

    def _colour(self, diff: str, mode: str) -> str:
        use = mode == "always" or (mode == "auto" and hasattr(self.stdout, "isatty") and self.stdout.isatty())
        if not use:
            return diff
        out = []
        for line in diff.splitlines():
            if line.startswith(("+++", "---")):
                out.append(f"\033[1m{line}\033[0m")
            elif line.startswith("@@"):
                out.append(f"\033[36m{line}\033[0m")
            elif line.startswith("+"):
                out.append(f"\033[32m{line}\033[0m")
            elif line.startswith("-"):
                out.append(f"\033[31m{line}\033[0m")
            else:
                out.append(line)
        return "\n".join(out) + ("\n" if diff.endswith("\n") else "")

    # --- list / show / diff ---------------------------------------------------------------------
    def handle_list(self, options: dict[str, Any]) -> None:
        audits = list(self._selection(options))
        if options["json"]:
            self.stdout.write(json.dumps([audit_record(a, with_diff=options["with_diff"]) for a in audits], indent=2))
            return
        if not audits:
            self.stdout.write("No audits.")
            return
        rows = [
            [a.id, a.created_at.strftime("%Y-%m-%d %H:%M:%S"), a.status, a.target_file, cli.short(a.candidate_fact, 50)]
            + (
                [f"+{a.lines_added or 0} -{a.lines_removed or 0} ~{a.lines_modified or 0}"]
                if options["with_diff"]
                else []
            )
            for a in audits
        ]
        headers = ["ID", "CREATED", "STATUS", "FILE", "FACT"] + (["DIFF"] if options["with_diff"] else [])
        self.stdout.write(cli.table(rows, headers))

    def handle_show(self, options: dict[str, Any]) -> None:
        audit = self._audit(options["audit_id"])
        record = audit_record(audit, include_content=options["include_content"])
        if options["json"]:
            self.stdout.write(json.dumps(record, indent=2))
            return
        for key, value in record.items():
            if key in {"diff", "before_content", "after_content", "rollback"} or value in (None, ""):
                continue
            self.stdout.write(f"{key:>18}: {value}")
        if record["rollback"]:
            rb = record["rollback"]
            self.stdout.write(
                f"{'rolled back':>18}: {rb['rolled_back_at']} by {rb['rolled_back_by']} ({rb['method']}): {rb['reason']}"
            )
        self.stdout.write("")
        self.stdout.write(self._colour(audit.diff or "(no diff)\n", "auto"))
        if options["include_content"]:
            self.stdout.write("--- before ---\n" + (record["before_content"] or "(no file)\n"))
            self.stdout.write("--- after ---\n" + (record["after_content"] or "(not written)\n"))

    def handle_diff(self, options: dict[str, Any]) -> None:
        audit = self._audit(options["audit_id"])
        self.stdout.write(self._colour(audit.diff or "", options["color"]), ending="")

    # --- rollback / retry / correct -------------------------------------------------------------
    def _print_change(self, change: LineChange) -> None:
        """The lines a rollback removed and restored, as measured on the file."""
        for line in change.removed:
            self.stdout.write(f"  removed:  {line}")
        for line in change.restored:
            self.stdout.write(f"  restored: {line}")

    def handle_rollback(self, options: dict[str, Any]) -> None:
        audit = self._audit(options["audit_id"])
        if options["dry_run"]:
            preview = preview_rollback(audit, force=options["force"])
            if options["json"]:
                record = {"audit_id": audit.id, "dry_run": True, "method": preview.method, **preview.change.as_dict()}
                if preview.conflict is not None:
                    record["conflict"] = {"message": preview.conflict.message, **(preview.conflict.details or {})}
                self.stdout.write(json.dumps(record, indent=2))
                return
            if preview.conflict is not None:
                self.stdout.write(self.style.WARNING(f"Conflict: {preview.conflict.message}"))
                self.stdout.write("Add --force --dry-run to see what a forced rollback would do.")
                return
            self.stdout.write(f"Dry run: rolling back {audit.id} now would do this ({preview.change.summary()}):")
            self._print_change(preview.change)
            self.stdout.write(self._colour(preview.change.diff or "(no change)\n", "auto"), ending="")
            return
        try:
            rollback = rollback_write(
                audit, reason=_reason(options), requested_by=options["by"], force=options["force"]
            )
        except GuardianError as exc:
            if options["json"]:
                self.stdout.write(
                    json.dumps({"error": {"code": exc.code, "message": exc.message, "details": exc.details}}, indent=2)
                )
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "rollback_id": rollback.id,
                        "audit_id": audit.id,
                        "method": rollback.method,
                        "forced": rollback.forced,
                        **rollback.change.as_dict(),
                    }
                )
            )
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"Rolled back {audit.id} ({rollback.method}); rollback {rollback.id}: {rollback.change.summary()}"
            )
        )
        self._print_change(rollback.change)

    def handle_rollback_session(self, options: dict[str, Any]) -> None:
        result = rollback_session(
            options["session_id"],
            reason=_reason(options),
            requested_by=options["by"],
            since=options["since"],
            until=options["until"],
            dry_run=options["dry_run"],
            partial=options["partial"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), indent=2))
        else:
            rows = [[i.audit.id, i.audit.target_file, i.status, cli.short(i.message, 70)] for i in result.items]
            self.stdout.write(
                cli.table(rows, ["AUDIT", "FILE", "PLAN", "MESSAGE"]) if rows else "No written audits in that session."
            )
        if result.conflicts and not options["partial"] and not options["dry_run"]:
            raise CommandError(
                f"{len(result.conflicts)} write(s) conflict; nothing was rolled back (use --partial to roll back the rest)"
            )
        if options["json"]:
            return
        for item in result.items:
            if item.status == ("clean" if result.dry_run else "rolled_back") and item.change is not None:
                if item.change.changed:
                    self.stdout.write(f"{item.audit.id} ({item.audit.target_file}): {item.change.summary()}")
                    self._print_change(item.change)
        style = self.style.SUCCESS if result.applied and result.files_changed else self.style.WARNING
        self.stdout.write(style(result.summary()))

    def handle_retry(self, options: dict[str, Any]) -> None:
        audit = self._audit(options["audit_id"])
        new = retry_write(
            audit, candidate_fact=options["fact"], target_file=options["file"], requested_by=options["by"]
        )
        style = self.style.SUCCESS if new.status == WriteGuardianAudit.Status.WRITTEN else self.style.WARNING
        self.stdout.write(style(f"Retry {new.id}: {new.status} — {new.reason}"))

    def handle_correct(self, options: dict[str, Any]) -> None:
        audit = self._audit(options["audit_id"])
        correction = correct_audit(
            audit,
            status=options["status"],
            reason=options["reason"],
            corrected_by=options["by"],
            candidate_fact=options["fact"],
            target_file=options["file"],
            apply_to_future=options["apply_to_future"],
            pattern=options["pattern"],
            about=options["about"],
        )
        pattern = (
            f" (applies to future facts matching {correction.correction_pattern!r})"
            if correction.apply_to_future
            else ""
        )
        self.stdout.write(self.style.SUCCESS(f"Correction {correction.id} recorded{pattern}."))
        if not options["apply"]:
            self.stdout.write(
                f"It is a label for learning (the dataset{', and the prompts from now on' if pattern else ''}): "
                f"{audit.target_file} is unchanged. Add --apply to change the file now (an audited write)."
            )
            return
        self._apply_correction(audit, correction, by=options["by"])

    def _apply_correction(self, audit: WriteGuardianAudit, correction: Any, *, by: str) -> None:
        """The correction made real (``apply_correction``): the wrong write rolled back, the right fact written."""
        try:
            applied = apply_correction(audit, correction, requested_by=by)
        except GuardianError as exc:
            raise CommandError(f"the write could not be rolled back, so nothing was applied: {exc.message}") from exc
        if applied.rollback is not None:
            self.stdout.write(f"Rolled back {audit.id} from {audit.target_file}: {applied.rollback.change.summary()}.")
            self._print_change(applied.rollback.change)
        if applied.written is not None:
            done = applied.written
            self.stdout.write(
                f"Wrote the corrected fact to {done.target_file}: audit {done.id} {done.status}"
                + (f" ({done.reason})" if done.reason else "")
                + "."
            )
        elif applied.rollback is None:
            self.stdout.write(f"Nothing to apply: {audit.target_file} already holds what the correction says.")

    # --- history / export -----------------------------------------------------------------------
    def handle_history(self, options: dict[str, Any]) -> None:
        name = options["file"] or options["file_name"]
        if not name:
            raise CommandError(f"give the file with -f FILE ({', '.join(memory_files.active().files)})")
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1")
        with locks.file_lock(name):
            history.reconcile(name)
        versions = list(file_history(name)[: options["limit"]])
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    [
                        {
                            "id": v.id, "seq": v.seq, "kind": v.kind, "created_at": v.created_at.isoformat(),
                            "audit_id": v.audit_id, "rollback_id": v.rollback_id, "lines_added": v.lines_added,
                            "lines_removed": v.lines_removed, "content_hash": v.snapshot.content_hash if v.snapshot_id else None,
                            **({"diff": v.diff} if options["with_diff"] else {}),
                        }
                        for v in versions
                    ],
                    indent=2,
                )
            )  # fmt: skip
            return
        if not versions:
            self.stdout.write(f"No versions of {name} recorded yet.")
            return
        rows = [
            [
                v.seq,
                v.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                v.kind,
                _plus_minus(v),
                v.audit_id or "",
                cli.short(v.audit.candidate_fact if v.audit_id else "", 40),
            ]
            for v in versions
        ]
        self.stdout.write(cli.table(rows, ["#", "WHEN", "KIND", "LINES", "AUDIT", "FACT"]))
        if options["with_diff"]:
            for v in versions:
                self.stdout.write(f"\n#{v.seq} {v.kind}\n" + self._colour(v.diff or "(no change)\n", "auto"))

    def handle_export(self, options: dict[str, Any]) -> None:
        audits = self._selection(options).select_related("before_snapshot", "after_snapshot")
        include = options["include_content"]
        output: Path | None = options["output"]
        stream: IO[str] = output.open("w", encoding="utf-8", newline="") if output else sys.stdout
        count = 0
        try:
            records = (audit_record(a, include_content=include) for a in audits.iterator(chunk_size=500))
            if options["format"] == "json":
                stream.write("[")
                for count, record in enumerate(records, start=1):
                    stream.write(("," if count > 1 else "") + "\n  " + json.dumps(record, ensure_ascii=False))
                stream.write("\n]\n")
            elif options["format"] == "csv":
                fields = CSV_FIELDS + (["diff", "before_content", "after_content"] if include else [])
                writer = csv.DictWriter(stream, fieldnames=fields, extrasaction="ignore")
                writer.writeheader()
                for record in records:
                    count += 1
                    rollback = record.pop("rollback") or {}
                    record.update(
                        rolled_back_at=rollback.get("rolled_back_at"),
                        rolled_back_by=rollback.get("rolled_back_by"),
                        rollback_reason=rollback.get("reason"),
                    )
                    writer.writerow(record)
            else:
                stream.write(
                    "# Write-guardian audits\n\n| ID | Created | Status | File | Fact | Lines | Reason |\n|---|---|---|---|---|---|---|\n"
                )
                details: list[str] = []
                for record in records:
                    count += 1
                    cell = {k: str(v or "").replace("|", "\\|").replace("\n", " ") for k, v in record.items()}
                    stream.write(
                        f"| {cell['id']} | {cell['created_at']} | {cell['status']} | {cell['target_file']} | {cell['candidate_fact']} "
                        f"| +{record['lines_added'] or 0} -{record['lines_removed'] or 0} ~{record['lines_modified'] or 0} | {cell['reason']} |\n"
                    )
                    if record.get("diff") or include:
                        block = f"\n## {record['id']}\n\n"
                        if record.get("diff"):
                            block += f"```diff\n{record['diff']}```\n"
                        if include:
                            block += f"\nBefore:\n\n```markdown\n{record['before_content'] or ''}```\n\nAfter:\n\n```markdown\n{record['after_content'] or ''}```\n"
                        details.append(block)
                stream.writelines(details)
        finally:
            if output:
                stream.close()
        if output:
            self.stdout.write(self.style.SUCCESS(f"Exported {count} audit(s) to {output}"))

    # --- periodic jobs by hand ------------------------------------------------------------------
    def handle_sweep(self, options: dict[str, Any]) -> None:
        count = sweep_pending_decisions(grace_s=options["grace"])
        self.stdout.write(f"Requeued {count} decision(s) without an audit")

    def handle_drift(self, options: dict[str, Any]) -> None:
        versions = history.check_drift()
        self.stdout.write(f"Recorded {len(versions)} hand or agent edit(s) or first sighting(s)")
        for v in versions:
            self.stdout.write(f"  {v.file_name} #{v.seq} {v.kind} +{v.lines_added} -{v.lines_removed}")
        for name, found in workspace.unsafe_files().items():
            self.stderr.write(self.style.ERROR(f"  {name} is {found}: not read or written until it is replaced"))

    def handle_consolidate(self, options: dict[str, Any]) -> None:
        from guardian_app.write.consolidation import consolidate

        results = consolidate(dry_run=options["dry_run"], files=options["files"])
        if options["json"]:
            self.stdout.write(json.dumps([r.as_dict() for r in results], indent=2, ensure_ascii=False))
            return
        for result in results:
            if not result.removals:
                self.stdout.write(f"{result.file_name}: nothing to consolidate")
                continue
            verb = "would remove" if result.status == "planned" else f"{result.status}, removed"
            if result.status not in ("planned", "written"):
                verb = f"{result.status} ({result.reason}), nothing removed"
            audit = f" (audit {result.audit_id})" if result.audit_id else ""
            self.stdout.write(f"{result.file_name}: {verb} {len(result.removals)} line(s){audit}")
            for removal in result.removals:
                self.stdout.write(f"  -L{removal.number} {removal.line.strip()}  [{removal.why}: {removal.by.strip()}]")

    def handle_files(self, options: dict[str, Any]) -> None:
        listing = workspace.profile_files()
        if options["json"]:
            self.stdout.write(json.dumps({"profile": memory_files.active().name, "files": listing}, indent=2))
            return
        self.stdout.write(f"Workspace profile: {memory_files.active().name}")
        for row in listing:
            limit = f"/{row['max_chars']:,}" if row["max_chars"] else ""
            where = f" under ## {row['section']}" if row["section"] else ""
            state = f"{row['chars']:,}{limit} chars" if row["exists"] else "no file yet"
            unsafe = f" [{row['unsafe']}]" if row["unsafe"] else ""
            self.stdout.write(f"  {row['file_name']:<12} {row['decision'] or '-':<16} {state}{where}{unsafe}")
