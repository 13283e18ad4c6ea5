"""The seed's `/reflection gate` CLI: list, show, stats and export gate decisions; sweep, re-run, roll up."""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from reflection_site import cli, privacy
from sessions_app.gate import rerun_gate, sweep_pending_turns
from sessions_app.models import ConversationTurn, Decision
from sessions_app.queries import (
    decision_record,
    gate_stats,
    get_decision,
    iter_decision_records,
    list_decisions,
    sent_context,
)
from sessions_app.stats import roll_up_gate_stats

RAW_HELP = "Show the turn's text as it was sent (default: PII and secrets redacted)."


# --since/--until: 30d, an ISO date or time (in TIME_ZONE without a zone), epoch milliseconds.
_when = cli.time_argument(tz=timezone.get_current_timezone, now=timezone.now)


class Command(BaseCommand):
    help = (
        "Memory gate decisions. `list` shows the newest decisions (default 10), optionally of one session "
        "(positional or -S), one decision type (-d), and a time range (-s inclusive, -u exclusive: 30d, an ISO "
        "8601 date or time, or epoch milliseconds). "
        "`show ID` prints one decision, with -c its turn and context window. `stats` prints counts and mean "
        "latency per day (--daily, default), ISO week (--weekly) or session (--by-session). `export` writes "
        "the matching decisions as JSON Lines (-o FILE, default stdout). `sweep` re-enqueues turns still "
        "pending after the grace period, `rerun TURN_ID` runs the gate on a turn again, `rollup` stores the "
        "daily statistics. --json gives machine-readable output."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)

        def filters(sub: ArgumentParser, *, default_limit: int | None) -> None:
            sub.add_argument("session_key", nargs="?", help="Only this session's decisions.")
            sub.add_argument("-S", "--session", help="Only this session's decisions.")
            sub.add_argument(
                "-l", "--limit", type=int, default=default_limit, help="At most N decisions, newest first."
            )
            sub.add_argument("-s", "--since", type=_when, help=f"Created at or after ({cli.TIME_HELP}).")
            sub.add_argument("-u", "--until", type=_when, help="Created before (the same forms).")
            sub.add_argument(
                "-d", "--decision", type=str.upper, choices=Decision.values, help="Only this decision type."
            )
            sub.add_argument("-m", "--model", help="Only decisions by this model.")
            sub.add_argument("-q", "--search", help="Text in the candidate fact or reason.")
            sub.add_argument("-c", "--with-context", action="store_true", help="Include each turn and its context.")
            sub.add_argument("--raw", action="store_true", help=RAW_HELP)

        listing = actions.add_parser("list", help="List decisions, newest first.")
        filters(listing, default_limit=10)
        listing.add_argument("--json", action="store_true", help="A JSON array instead of a table.")

        show = actions.add_parser("show", help="One decision in full.")
        show.add_argument("decision_id")
        show.add_argument("-c", "--with-context", action="store_true", help="Include the context window.")
        show.add_argument("--json", action="store_true")
        show.add_argument("--raw", action="store_true", help=RAW_HELP)

        stats = actions.add_parser("stats", help="Decision statistics.")
        period = stats.add_mutually_exclusive_group()
        period.add_argument("--daily", dest="period", action="store_const", const="daily")
        period.add_argument("--weekly", dest="period", action="store_const", const="weekly")
        period.add_argument("--by-session", dest="period", action="store_const", const="session")
        stats.add_argument("--days", type=int, default=None, help="Days covered (daily: 14, by session: 30).")
        stats.add_argument("--weeks", type=int, default=8, help="Weeks covered by --weekly.")
        stats.add_argument("--json", action="store_true")

        export = actions.add_parser("export", help="Write decisions as JSON Lines.")
        filters(export, default_limit=None)
        export.add_argument("-o", "--output", type=Path, help="File to write (default: stdout).")

        sweep = actions.add_parser("sweep", help="Re-enqueue turns still pending after the grace period.")
        sweep.add_argument("--grace", type=int, default=None, help="Seconds (default GATE_SWEEP_GRACE_S).")

        rerun = actions.add_parser("rerun", help="Run the gate on a turn again.")
        rerun.add_argument("turn_id")

        actions.add_parser("rollup", help="Store the daily statistics now (as the hourly task does).")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"handle_{options['action']}")(options)

    # --- list / export --------------------------------------------------------------------------
    def _selection(self, options: dict[str, Any], *, with_raw: bool = False) -> Any:
        if options["session_key"] and options["session"] and options["session_key"] != options["session"]:
            raise CommandError("give the session once, positionally or with -S")
        limit = options["limit"]
        if limit is not None and limit < 1:
            raise CommandError("--limit must be at least 1")
        decisions = list_decisions(
            session=options["session_key"] or options["session"],
            decision=options["decision"],
            since=options["since"],
            until=options["until"],
            model=options["model"],
            search=options["search"],
            with_context=options["with_context"],
            with_raw=with_raw,
        )
        return decisions[:limit] if limit else decisions

    def handle_list(self, options: dict[str, Any]) -> None:
        decisions = list(self._selection(options))
        if options["json"]:
            records = [decision_record(d, with_context=options["with_context"], raw=options["raw"]) for d in decisions]
            self.stdout.write(json.dumps(records, ensure_ascii=False, indent=2))
            return
        if not decisions:
            self.stdout.write("No decisions match.")
            return
        rows = [
            [
                d.id,
                timezone.localtime(d.created_at).strftime("%Y-%m-%d %H:%M:%S"),
                cli.short(d.session_id, 28),
                d.turn_number,
                d.decision,
                "" if d.llm_latency_ms is None else f"{d.llm_latency_ms} ms",
                cli.short(d.llm_model, 24),
                cli.short(d.candidate_fact or d.reason, 60),
            ]
            for d in decisions
        ]
        headers = ["ID", "CREATED", "SESSION", "TURN", "DECISION", "LATENCY", "MODEL", "FACT / REASON"]
        self.stdout.write(cli.table(rows, headers))
        if options["with_context"]:
            for d in decisions:
                self.stdout.write("")
                self._write_turn(d, raw=options["raw"])

    def handle_export(self, options: dict[str, Any]) -> None:
        decisions = self._selection(options, with_raw=True)
        records = iter_decision_records(decisions, with_context=options["with_context"], raw=options["raw"])
        output = options["output"]
        count = 0
        if output is None:
            for record in records:
                self.stdout.write(json.dumps(record, ensure_ascii=False))
                count += 1
            return
        from tqdm import tqdm

        with output.open("w", encoding="utf-8") as fh:
            for record in tqdm(records, unit=" decisions", disable=not sys.stderr.isatty()):
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
        self.stdout.write(self.style.SUCCESS(f"Exported {count} decision(s) to {output}"))

    # --- show -----------------------------------------------------------------------------------
    def handle_show(self, options: dict[str, Any]) -> None:
        decision = get_decision(options["decision_id"])
        if decision is None:
            raise CommandError(f"No gate decision {options['decision_id']}")
        if options["json"]:
            record = decision_record(decision, with_context=True, raw=options["raw"])
            self.stdout.write(json.dumps(record, ensure_ascii=False, indent=2))
            return
        fields = [
            ("Decision", decision.decision),
            ("Target file", decision.target_file or "-"),
            ("Candidate fact", decision.candidate_fact or "-"),
            ("Reason", decision.reason),
            ("Confidence", "-" if decision.confidence is None else f"{decision.confidence:.2f}"),
            ("Session", decision.session_id),
            ("Turn", f"{decision.turn_id} (#{decision.turn_number}, run {decision.run_number})"),
            ("Model", decision.llm_model),
            ("Latency", "-" if decision.llm_latency_ms is None else f"{decision.llm_latency_ms} ms"),
            ("Tokens", f"{decision.prompt_tokens or '-'} prompt, {decision.completion_tokens or '-'} completion"),
            ("Prompt version", decision.prompt_version or "-"),
            ("Created", timezone.localtime(decision.created_at).isoformat()),
        ]
        width = max(len(name) for name, _ in fields)
        self.stdout.write(self.style.MIGRATE_HEADING(f"Gate decision {decision.id}"))
        for name, value in fields:
            self.stdout.write(f"{name.ljust(width)}  {value}")
        if decision.raw_response:
            self.stdout.write(f"\nRaw reply:\n{decision.raw_response}")
        self.stdout.write("")
        self._write_turn(decision, context=options["with_context"], raw=options["raw"])

    def _write_turn(self, decision: Any, *, context: bool = True, raw: bool = False) -> None:
        turn = decision.turn
        self.stdout.write(self.style.MIGRATE_HEADING(f"Turn #{turn.turn_number} of {turn.session_id} ({decision.id})"))
        lines: list[str] = []
        if context:
            window = sent_context(turn)
            lines += [f"  [{item.sequence_number}] {item.role}: {item.message}" for item in window]
            if window:
                lines.append("  ---")
        lines += [f"  user:  {turn.user_message_content}", f"  agent: {turn.agent_message_content}"]
        shown = lines if raw else [privacy.redact(line) for line in lines]
        self.stdout.write("\n".join(shown))
        if shown != lines:
            self.stdout.write(self.style.WARNING("  (values redacted: --raw shows the turn as it was sent)"))

    # --- stats ----------------------------------------------------------------------------------
    def handle_stats(self, options: dict[str, Any]) -> None:
        period = options["period"] or "daily"
        days = options["days"] or (14 if period == "daily" else 30)
        stats = gate_stats(period, days=days, weeks=options["weeks"])
        if options["json"]:
            self.stdout.write(json.dumps(stats, ensure_ascii=False, indent=2, default=str))
            return
        key, label = {
            "daily": ("date", "DATE"),
            "weekly": ("week_start", "WEEK OF"),
            "session": ("session_id", "SESSION"),
        }[period]
        headers = [label, "TOTAL", "NO_WRITE", "MEMORY", "USER", "SOUL", "IDENTITY", "TOOLS", "AVG MS"]
        rows = []
        quiet = 0
        for row in stats["rows"]:
            if period != "session" and not row["total_decisions"]:
                quiet += 1  # a day or week without a decision: counted below, not a row of zeros
                continue
            rows.append(
                [
                    row[key],
                    row["total_decisions"],
                    row["no_write_count"],
                    row["update_memory_count"],
                    row["update_user_count"],
                    row["update_soul_count"],
                    row["update_identity_count"],
                    row["update_tools_count"],
                    row["avg_latency_ms"],
                ]
            )
            if period != "session":
                rows[-1].insert(1, row["session_count"])
        if period != "session":
            headers.insert(1, "SESSIONS")
        self.stdout.write(cli.table(rows, headers) if rows else "No decisions in this period.")
        if rows and quiet:
            unit = "day" if period == "daily" else "week"
            self.stdout.write(f"({quiet} {unit}(s) of the period without a decision are not shown; --json has them.)")
        self.stdout.write("")
        latency = [[r["decision"], r["count"], r["avg_latency_ms"]] for r in stats["by_decision"]]
        self.stdout.write(cli.table(latency, ["DECISION", "COUNT", "AVG LATENCY MS"]))

    # --- jobs -----------------------------------------------------------------------------------
    def handle_sweep(self, options: dict[str, Any]) -> None:
        try:
            count = sweep_pending_turns(grace_s=options["grace"])
        except Exception as exc:  # A broker that is down: say so, the turns stay pending.
            raise CommandError(f"could not enqueue: {exc}") from exc
        self.stdout.write(self.style.SUCCESS(f"Requeued {count} pending turn(s)"))

    def handle_rerun(self, options: dict[str, Any]) -> None:
        turn = ConversationTurn.objects.filter(id=options["turn_id"]).first()
        if turn is None:
            raise CommandError(f"No turn {options['turn_id']}")
        turn = rerun_gate(turn)
        self.stdout.write(self.style.SUCCESS(f"Gate run {turn.gate_run} of turn {turn.id} enqueued"))

    def handle_rollup(self, options: dict[str, Any]) -> None:
        count = roll_up_gate_stats()
        self.stdout.write(self.style.SUCCESS(f"Stored statistics for {count} day(s)"))
