"""Change reports (seed 004 P2-001): per day and per session, what happened to the memory files.

For a day (in ``TIME_ZONE``), from the write guardian's audits and rollbacks:

- **created**: writes that only added lines (a new fact);
- **merged**: writes that changed or removed lines (a fact folded into an existing one);
- **skipped**: writes that changed nothing, among them facts **held for review**;
- **refused**: facts the guardian refused (duplicates, vague, secrets, corrections);
- **failed**: writes that failed;
- **rolled back**: rollbacks made that day (of writes of any day).

Writes are counted on the day they were made, whatever became of them later. Sessions are the
conversations the writes came from; reflect and learning writes, which have none, get one line each.
Reflect's page writes (``bank/``) are not facts and are not counted: its runs are listed instead (a page
write refused or failed is a pivotal highlight), and a rollback of one counts as a rollback.
Highlights name the pivotal changes first (rollbacks, facts held for review, failures, opinions whose
confidence moved by ``REPORT_PIVOTAL_OPINION_DELTA`` or more in a day, reflect pages refused), then the
day's new facts and reflect runs. A report with a pivotal change is posted to ``REPORT_WEBHOOK_URL`` when
one is set: by a task that retries with backoff, so a slow or failing webhook never holds anything up.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, OuterRef, Subquery
from django.utils import timezone

from guardian_app.models import (
    OpinionEvidence,
    ReflectRun,
    ReportDelivery,
    Rollback,
    WriteGuardianAudit,
)
from guardian_app.reflect.webhook import WebhookError, post_json, webhook_target
from reflection_site.celery import enqueue_on_commit
from sessions_app.models import ConversationTurn, MemoryGateDecision

logger = logging.getLogger(__name__)

Status = WriteGuardianAudit.Status
MAX_HIGHLIGHTS = 30


@dataclass
class Counts:
    created: int = 0
    merged: int = 0
    skipped: int = 0
    held: int = 0
    refused: int = 0
    failed: int = 0
    rolled_back: int = 0

    def add(self, other: Counts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def changes(self) -> int:
        return self.created + self.merged + self.rolled_back


@dataclass
class SessionReport:
    session: str  # the session id, or "(reflect)", "(learning)" …
    turns: int = 0
    counts: Counts = field(default_factory=Counts)
    highlights: list[str] = field(default_factory=list)


@dataclass
class Highlight:
    kind: str  # rolled_back | held | failed | opinion | reflect_refused | written | reflect
    text: str
    pivotal: bool
    ref: str = ""


@dataclass
class DailyReport:
    day: dt.date
    counts: Counts
    sessions: list[SessionReport]
    highlights: list[Highlight]
    turns: int
    gate: dict[str, int]
    reflect_runs: list[dict[str, Any]]

    @property
    def pivotal(self) -> bool:
        return any(h.pivotal for h in self.highlights)

    def as_dict(self) -> dict[str, Any]:
        return {
            "date": self.day.isoformat(),
            "pivotal": self.pivotal,
            "counts": asdict(self.counts),
            "turns": self.turns,
            "gate": self.gate,
            "sessions": [
                {"session": s.session, "turns": s.turns, "counts": asdict(s.counts), "highlights": s.highlights}
                for s in self.sessions
            ],
            "highlights": [asdict(h) for h in self.highlights],
            "reflect_runs": self.reflect_runs,
            "markdown": render_markdown(self),
        }


def day_bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """The day from midnight to midnight in the server's time zone (the first and last days representable
    are clamped a day inwards, so that any date gives a report, an empty one)."""
    day = min(max(day, dt.date.min + dt.timedelta(days=1)), dt.date.max - dt.timedelta(days=2))
    start = timezone.make_aware(dt.datetime.combine(day, dt.time()))
    end = timezone.make_aware(dt.datetime.combine(day + dt.timedelta(days=1), dt.time()))
    return start, end


def _short(text: str | None, limit: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _classify(audit: WriteGuardianAudit, counts: Counts) -> None:
    if audit.status in (Status.WRITTEN, Status.ROLLED_BACK) and audit.after_snapshot_id:
        if (audit.lines_removed or 0) + (audit.lines_modified or 0) == 0:
            counts.created += 1
        else:
            counts.merged += 1
    elif audit.status == Status.SKIPPED:
        counts.skipped += 1
        if audit.held_for_review:
            counts.held += 1
    elif audit.status == Status.REFUSED:
        counts.refused += 1
    elif audit.status == Status.FAILED:
        counts.failed += 1


def _group(audit: WriteGuardianAudit) -> str:
    return audit.session_id or f"({audit.source})"


# Of an audit, what the counts and highlights read.
_COUNTED_FIELDS = (
    "status",
    "held_for_review",
    "lines_removed",
    "lines_modified",
    "after_snapshot_id",
    "target_file",
    "candidate_fact",
)


def _first_line(audit: WriteGuardianAudit) -> str:
    return _short(audit.candidate_fact.splitlines()[0] if audit.candidate_fact else "")


@dataclass
class _Day:
    """What ``daily_report`` gathers as it reads the day: the sessions' reports, the totals, the highlights."""

    sessions: dict[str, SessionReport] = field(default_factory=dict)
    totals: Counts = field(default_factory=Counts)
    pivotal: list[Highlight] = field(default_factory=list)
    written: list[Highlight] = field(default_factory=list)

    def session(self, key: str) -> SessionReport:
        return self.sessions.setdefault(key, SessionReport(session=key))

    def highlight(self, highlight: Highlight, report: SessionReport) -> None:
        (self.pivotal if highlight.pivotal else self.written).append(highlight)
        if len(report.highlights) < 10:
            report.highlights.append(highlight.text)


def daily_report(day: dt.date) -> DailyReport:
    """The day's report (see the module docstring); a handful of indexed queries."""
    start, end = day_bounds(day)
    found = _Day()
    _read_audits(found, start, end)
    _read_rollbacks(found, start, end)
    found.pivotal += _opinion_highlights(start, end)
    run_rows, run_highlights = _reflect_runs(start, end)
    found.written += run_highlights
    turns = dict(
        ConversationTurn.objects.filter(created_at__gte=start, created_at__lt=end)
        .values_list("session_id")
        .annotate(n=Count("id"))
        .values_list("session_id", "n")
    )
    for session_id, n in turns.items():
        found.session(session_id).turns = n
    gate = gate_figures(start, end)
    ordered = sorted(found.sessions.values(), key=lambda s: (s.session.startswith("("), -s.counts.changes, s.session))
    return DailyReport(
        day=day,
        counts=found.totals,
        sessions=ordered,
        highlights=(found.pivotal + found.written)[:MAX_HIGHLIGHTS],
        turns=sum(turns.values()),
        gate=gate,
        reflect_runs=run_rows,
    )


def _read_audits(found: _Day, start: dt.datetime, end: dt.datetime) -> None:
    """The day's writes, counted per session (reflect's pages aside) and highlighted."""
    audits = (
        WriteGuardianAudit.objects.filter(created_at__gte=start, created_at__lt=end)
        .only("id", "session_id", "source", *_COUNTED_FIELDS, "reason")
        .order_by("created_at", "id")
    )
    for audit in audits.iterator():
        counts = Counts()
        page = audit.target_file.startswith("bank/")
        if not page:  # Reflect's pages are views of facts, not facts: their runs are highlighted instead.
            _classify(audit, counts)
            report = found.session(_group(audit))
            report.counts.add(counts)
            found.totals.add(counts)
        else:
            report = SessionReport(session="(reflect)")
        highlight = _audit_highlight(audit, counts)
        if highlight is not None:
            found.highlight(highlight, report)


def _audit_highlight(audit: WriteGuardianAudit, counts: Counts) -> Highlight | None:
    fact = _first_line(audit)
    if audit.held_for_review:
        return Highlight("held", f"Held for review ({audit.target_file}): {fact}", True, audit.id)
    if audit.status == Status.FAILED:
        why = _short(audit.reason, 120)
        return Highlight("failed", f"Failed ({audit.target_file}): {fact} — {why}", True, audit.id)
    if audit.source == WriteGuardianAudit.Source.REFLECT and audit.status == Status.REFUSED:
        why = _short(audit.reason)
        return Highlight("reflect_refused", f"Reflect write refused ({audit.target_file}): {why}", True, audit.id)
    if (counts.created or counts.merged) and audit.source != WriteGuardianAudit.Source.REFLECT:
        verb = "New" if counts.created else "Updated"
        return Highlight("written", f"{verb} in {audit.target_file}: {fact}", False, audit.id)
    return None


def _read_rollbacks(found: _Day, start: dt.datetime, end: dt.datetime) -> None:
    """The day's rollbacks (of writes of any day), counted for the write's session and highlighted."""
    rollbacks = (
        Rollback.objects.filter(rolled_back_at__gte=start, rolled_back_at__lt=end)
        .select_related("audit")
        .order_by("rolled_back_at", "id")
    )
    for rollback in rollbacks:
        audit = rollback.audit
        report = found.session(_group(audit))
        report.counts.rolled_back += 1
        found.totals.rolled_back += 1
        why = _short(rollback.reason, 120)
        text = f"Rolled back ({audit.target_file}) by {rollback.rolled_back_by}: {_first_line(audit)} — {why}"
        found.highlight(Highlight("rolled_back", text, True, audit.id), report)


def _opinion_highlights(start: dt.datetime, end: dt.datetime) -> list[Highlight]:
    """Opinions whose confidence moved by ``REPORT_PIVOTAL_OPINION_DELTA`` or more over the day."""
    threshold = float(settings.REPORT_PIVOTAL_OPINION_DELTA)
    moves: dict[str, list[OpinionEvidence]] = {}
    for evidence in (
        OpinionEvidence.objects.filter(created_at__gte=start, created_at__lt=end)
        .select_related("opinion")
        .order_by("created_at", "id")
    ):
        moves.setdefault(evidence.opinion_id, []).append(evidence)
    highlights = []
    for items in moves.values():
        first, last = items[0], items[-1]
        delta = last.confidence_after - first.confidence_before
        if abs(delta) >= threshold:
            opinion = last.opinion
            about = f" about {opinion.entity}" if opinion.entity else ""
            verb = "rose" if delta > 0 else "fell"
            highlights.append(
                Highlight(
                    "opinion",
                    f"Opinion{about} {verb} {first.confidence_before:.2f} → {last.confidence_after:.2f}: "
                    f"{_short(opinion.statement, 120)}",
                    True,
                    opinion.id,
                )
            )
    return highlights


def _reflect_runs(start: dt.datetime, end: dt.datetime) -> tuple[list[dict[str, Any]], list[Highlight]]:
    """The reflect runs finished that day (dry runs aside), as rows and as highlights of the finished ones."""
    rows, highlights = [], []
    for run in ReflectRun.objects.filter(finished_at__gte=start, finished_at__lt=end, dry_run=False).order_by(
        "finished_at"
    ):
        rows.append(
            {
                "id": run.id,
                "status": run.status,
                "facts": run.facts_count,
                "pages_written": run.pages_written,
                "opinions_created": run.opinions_created,
                "opinions_updated": run.opinions_updated,
            }
        )
        if run.status == ReflectRun.Status.DONE:
            highlights.append(
                Highlight(
                    "reflect",
                    f"Reflect {run.id}: {run.facts_count} fact(s), {run.pages_written} page(s) updated, "
                    f"{run.opinions_created} new and {run.opinions_updated} moved opinion(s)",
                    False,
                    run.id,
                )
            )
    return rows, highlights


def gate_figures(start: dt.datetime, end: dt.datetime) -> dict[str, int]:
    """The gate's figures of the turns received in [start, end), each counted once by its latest decision (a
    re-run of the gate replaces the earlier one): ``write`` (an ``UPDATE_*``), ``no_write``, ``undecided`` (no
    decision yet, or the gate failed). They add up to ``turns``. The one computation behind the daily report,
    ``memory report`` and the admin index's "Memory changes today" (counting decisions by their own time
    counted a turn twice when it was re-run, and a turn of yesterday decided today)."""
    latest = MemoryGateDecision.objects.filter(turn=OuterRef("pk")).order_by("-run_number", "-created_at", "-id")
    rows = (
        ConversationTurn.objects.filter(created_at__gte=start, created_at__lt=end)
        .annotate(latest=Subquery(latest.values("decision")[:1]))
        .values("latest")
        .annotate(n=Count("id"))
        .order_by()
    )
    figures = {"turns": 0, "write": 0, "no_write": 0, "undecided": 0}
    for row in rows:
        kind = "undecided" if row["latest"] is None else "no_write" if row["latest"] == "NO_WRITE" else "write"
        figures[kind] += row["n"]
        figures["turns"] += row["n"]
    return figures


def session_report(session_id: str) -> SessionReport:
    """All of one session's writes and rollbacks, whatever the day."""
    report = SessionReport(session=session_id)
    for audit in WriteGuardianAudit.objects.filter(session_id=session_id).only(*_COUNTED_FIELDS):
        _classify(audit, report.counts)
        if audit.status == Status.WRITTEN and len(report.highlights) < 10:
            report.highlights.append(f"{audit.target_file}: {_short(audit.candidate_fact)}")
    report.counts.rolled_back = Rollback.objects.filter(audit__session_id=session_id).count()
    report.turns = ConversationTurn.objects.filter(session_id=session_id).count()
    return report


def render_markdown(report: DailyReport) -> str:
    """The report as a person reads it (and as the webhook posts it)."""
    c = report.counts
    held = f" ({c.held} held for review)" if c.held else ""
    lines = [
        f"## Memory daily report - {report.day.isoformat()}",
        "",
        "### Totals",
        "",
        f"- Turns: {report.turns} (gate: {report.gate['write']} to write, {report.gate['no_write']} nothing to remember"
        + (f", {report.gate['undecided']} not decided yet)" if report.gate["undecided"] else ")"),
        f"- Created: {c.created}",
        f"- Merged: {c.merged}",
        f"- Skipped: {c.skipped}{held}",
        f"- Refused: {c.refused}",
        f"- Failed: {c.failed}",
        f"- Rolled back: {c.rolled_back}",
        "",
    ]
    if report.sessions:
        lines += [
            "### Sessions",
            "",
            "| session | turns | created | merged | skipped | refused | failed | rolled back |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for s in report.sessions[:50]:
            k = s.counts
            lines.append(
                f"| {s.session} | {s.turns} | {k.created} | {k.merged} | {k.skipped} | {k.refused} | {k.failed} | {k.rolled_back} |"
            )
        if len(report.sessions) > 50:
            lines.append(f"| … {len(report.sessions) - 50} more | | | | | | | |")
        lines.append("")
    lines += ["### Highlights", ""]
    lines += [f"- {'**' if h.pivotal else ''}{h.text}{'**' if h.pivotal else ''}" for h in report.highlights] or [
        "(none)"
    ]
    lines.append("")
    return "\n".join(lines)


# --- The webhook -------------------------------------------------------------------------------------
def post_report(report: DailyReport, url: str, *, timeout: float | None = None) -> int:
    """POST the report as JSON: ``content`` (Discord), ``text`` (Slack) and ``report`` (the data).

    Returns the HTTP status; raises WebhookError for anything but 2xx, a timeout or a connection error.
    """
    markdown = render_markdown(report)
    data = report.as_dict()
    data.pop("markdown", None)
    wait = float(settings.REPORT_WEBHOOK_TIMEOUT_S if timeout is None else timeout)
    return post_json(url, {"content": markdown[:1900], "text": markdown, "report": data}, timeout=wait)


def queue_delivery(day: dt.date, *, force: bool = False) -> ReportDelivery | None:
    """Post the day's report if it has a pivotal change (or ``force``) and a webhook is set: records the
    delivery and hands it to a task after commit. Returns None when there is nothing to post."""
    url = settings.REPORT_WEBHOOK_URL
    if not url:
        return None
    report = daily_report(day)
    if not (report.pivotal or force):
        return None
    try:
        with transaction.atomic():
            delivery, _ = ReportDelivery.objects.get_or_create(
                kind="daily", day=day, defaults={"target": webhook_target(url)}
            )
    except IntegrityError:
        delivery = ReportDelivery.objects.get(kind="daily", day=day)
    if delivery.status == ReportDelivery.Status.DELIVERED and not force:
        return delivery
    if force and delivery.status != ReportDelivery.Status.PENDING:
        ReportDelivery.objects.filter(id=delivery.id).update(status=ReportDelivery.Status.PENDING)
    # A dead broker leaves the delivery pending; the next report run retries it.
    enqueue_on_commit("guardian_app.tasks.run_report_webhook", day.isoformat())
    return delivery


def deliver(day: dt.date) -> ReportDelivery:
    """One attempt to post the day's report (the task retries a WebhookError)."""
    url = settings.REPORT_WEBHOOK_URL
    delivery, _ = ReportDelivery.objects.get_or_create(kind="daily", day=day, defaults={"target": webhook_target(url)})
    if delivery.status == ReportDelivery.Status.DELIVERED:
        return delivery
    ReportDelivery.objects.filter(id=delivery.id).update(attempts=delivery.attempts + 1)
    delivery.attempts += 1
    if not url:
        raise WebhookError("REPORT_WEBHOOK_URL is not set.")
    try:
        post_report(daily_report(day), url)
    except WebhookError as exc:
        ReportDelivery.objects.filter(id=delivery.id).update(last_error=exc.message[:2000])
        logger.warning("report webhook, attempt %d: %s", delivery.attempts, exc.message)
        raise
    now = timezone.now()
    ReportDelivery.objects.filter(id=delivery.id).update(
        status=ReportDelivery.Status.DELIVERED, delivered_at=now, last_error=""
    )
    delivery.status, delivery.delivered_at = ReportDelivery.Status.DELIVERED, now
    return delivery


def mark_delivery_failed(day: dt.date, error: str) -> None:
    ReportDelivery.objects.filter(kind="daily", day=day).exclude(status=ReportDelivery.Status.DELIVERED).update(
        status=ReportDelivery.Status.FAILED, last_error=error[:2000]
    )
