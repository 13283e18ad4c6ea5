"""Fill the configured database with a year of synthetic traffic for the scale benchmarks (issue 9).

    .venv/bin/python benchmarks/seed_scale.py --turns 1000000     # 1M turns and everything that follows from them

``benchmarks/scale.py`` runs it on each database it measures; the query-count tests call ``seed()``.

Proportions (per turn, as a busy agent produces them): one session per ``--turns-per-session`` turns
(default 50) across ``--channels`` channels, two context rows per turn, one gate decision per turn (about 20 %
UPDATE_*), one guardian audit per UPDATE_* decision (so ~200k audits at 1M turns), each with its snapshots and
a file version when written, one dataset sample per audit-sized fraction (``--sample-ratio`` 0.2: 200k at 1M,
scored by the dataset scorer: ``quality_score`` and ``quality_factors``),
learning events (``--event-ratio`` 0.05) with memory items and rules. Timestamps spread over ``--days`` days
ending now, ids are ULIDs of those times (so id order is time order, as in production).

Rows go in by batches (``--batch``), one transaction a batch, no signals, no gate or guardian work: ``COPY`` on
PostgreSQL and ``executemany`` on SQLite, with the values Django's ``bulk_create`` would send (``_insert``; the ORM's
SQL compilation was 60 % of the seed's time). At the end the gate statistics are rolled up as the hourly beat task
would have done over the year (``roll_up_gate_stats``), so the readers find the stored days they find in production.
The script refuses a non-empty database unless ``--append``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # Run as a script: Django set up on the configured database first.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    import django

    django.setup()

from django.db import connection, models, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402
from django_celery_beat.models import ClockedSchedule, IntervalSchedule, SolarSchedule  # noqa: E402
from ulid import ULID  # noqa: E402

from dataset_app.models import DatasetExport, DatasetSample, EvaluationRun  # noqa: E402
from dataset_app.scoring import Evidence, QualityWeights, ScoringInput, score_sample  # noqa: E402
from guardian_app.models import (  # noqa: E402
    BehaviorCorrection,
    FileSnapshot,
    FileVersion,
    LearningEvent,
    MemoryChunk,
    MemoryItem,
    Opinion,
    ReflectRun,
    ReportDelivery,
    Rollback,
    Rule,
    SkillDraft,
    WorkspaceFile,
    WriteGuardianAudit,
)
from reflection_site.models import ApiKey, JobCheckpoint  # noqa: E402
from reflection_site.rows import RowWriter  # noqa: E402
from sessions_app.models import (  # noqa: E402
    FILE_FOR_DECISION,
    ConversationContext,
    ConversationSession,
    ConversationTurn,
    MemoryGateDecision,
)
from sessions_app.stats import roll_up_gate_stats  # noqa: E402

CHANNELS = ("discord", "telegram", "slack", "web", "cli", "whatsapp", "signal", "email")
WORDS = (
    "the user prefers short answers about python deployment and asked for a summary of yesterday's meeting "
    "notes with the team on the new billing service which runs on postgres and redis behind nginx"
).split()
# Gate decisions: mostly NO_WRITE, the rest spread as a real agent's are (MEMORY.md and USER.md most often).
DECISION_WEIGHTS = (
    ("NO_WRITE", 80),
    ("UPDATE_MEMORY", 9),
    ("UPDATE_USER", 6),
    ("UPDATE_SOUL", 2),
    ("UPDATE_IDENTITY", 1),
    ("UPDATE_TOOLS", 2),
)
AUDIT_STATUS_WEIGHTS = (("written", 85), ("refused", 10), ("skipped", 3), ("failed", 1), ("rolled_back", 1))
SAMPLE_STATUS_WEIGHTS = (("pending", 55), ("approved", 20), ("auto_approved", 5), ("rejected", 8), ("needs_review", 12))
# What confirmed a guardian sample's label (dataset_app.collect), by audit status; the seed's default weights.
SAMPLE_EVIDENCE = {"written": Evidence.STOOD, "rolled_back": Evidence.ROLLBACK, "refused": Evidence.REFUSAL}
SAMPLE_WEIGHTS = QualityWeights()
EVENT_WEIGHTS = (
    ("mem_accept", 40),
    ("mem_reject", 15),
    ("rule_accept", 15),
    ("rule_reject", 10),
    ("rate_limited", 5),
    ("mem_expire", 10),
    ("decay_run", 5),
)


def _weighted(rng: random.Random, table: tuple[tuple[str, int], ...], k: int) -> list[str]:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table], k=k)


def _ulid_at(when: dt.datetime) -> str:
    return str(ULID.from_timestamp(when.timestamp()))


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, k=n))


class Progress:
    """One line on stderr, redrawn: rows done of the total, rows/s, ETA."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, 0, enabled
        self.start = time.monotonic()
        self.last = 0.0

    def add(self, n: int, label: str) -> None:
        self.done += n
        now = time.monotonic()
        if not self.enabled or (now - self.last < 0.5 and self.done < self.total):
            return
        self.last = now
        rate = self.done / max(now - self.start, 1e-9)
        frac = min(self.done / max(self.total, 1), 1.0)
        eta = (self.total - self.done) / rate if rate else 0
        bar = "#" * int(frac * 30)
        sys.stderr.write(
            f"\r[{bar:<30}] {frac:6.1%} {self.done:>10,}/{self.total:,} rows {rate:>9,.0f}/s ETA {eta:5.0f}s {label:<14}"
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def main(argv: list[str] | None = None) -> int:
    """The script: seed the configured database, then print the rows inserted per model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--turns-per-session", type=int, default=50)
    parser.add_argument("--channels", type=int, default=len(CHANNELS))
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--sample-ratio", type=float, default=0.2, help="samples per turn (0.2: 200k at 1M)")
    parser.add_argument("--event-ratio", type=float, default=0.05, help="learning events per turn")
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--append", action="store_true", help="allow a database that already has turns")
    parser.add_argument("--no-progress", action="store_true")
    opts = parser.parse_args(argv)
    if opts.turns < 1:
        parser.error("--turns must be at least 1")
    if not opts.append and ConversationTurn.objects.exists():
        parser.error("the database already has turns; pass --append to add more")
    started = time.monotonic()
    counts = seed(
        turns=opts.turns,
        turns_per_session=max(1, opts.turns_per_session),
        channels=max(1, min(opts.channels, len(CHANNELS))),
        days=max(1, opts.days),
        sample_ratio=opts.sample_ratio,
        event_ratio=opts.event_ratio,
        batch=max(100, opts.batch),
        rng_seed=opts.seed,
        progress=not opts.no_progress and sys.stderr.isatty(),
    )
    elapsed = time.monotonic() - started
    total = sum(counts.values())
    for name, n in counts.items():
        print(f"{name:<22} {n:>10,}")
    print(f"{'total':<22} {total:>10,} rows in {elapsed:.1f}s ({total / max(elapsed, 1e-9):,.0f} rows/s)")
    return 0


# The models a batch of turns inserts, in this order (a row's foreign keys point at rows inserted before it).
BATCH_MODELS: tuple[tuple[str, type[models.Model]], ...] = (
    ("turns", ConversationTurn),
    ("contexts", ConversationContext),
    ("decisions", MemoryGateDecision),
    ("snapshots", FileSnapshot),
    ("audits", WriteGuardianAudit),
    ("file_versions", FileVersion),
    ("samples", DatasetSample),
    ("memory_items", MemoryItem),
    ("rules", Rule),
    ("learning_events", LearningEvent),
)


def seed(
    *,
    turns: int,
    turns_per_session: int = 50,
    channels: int = len(CHANNELS),
    days: int = 365,
    sample_ratio: float = 0.2,
    event_ratio: float = 0.05,
    batch: int = 5000,
    rng_seed: int = 9,
    progress: bool = False,
) -> dict[str, int]:
    """Insert the data set; returns the rows inserted per model. Also used by the query-count tests."""
    seeder = Seeder(turns, turns_per_session, days, sample_ratio, event_ratio, random.Random(rng_seed))
    n_sessions = len(seeder.sessions_plan(channels))
    # Rows to insert, for the progress bar (audits ~ 20 % of turns with 2 snapshots and a version each).
    expected = int(turns * (1 + 2 + 1 + 0.2 * 4 + sample_ratio + event_ratio) + n_sessions)
    bar = Progress(expected, progress)
    counts = dict.fromkeys(["sessions", *(name for name, _ in BATCH_MODELS)], 0)
    for chunk in _chunks(seeder.sessions, batch):
        with transaction.atomic():
            _insert(ConversationSession, chunk)
        bar.add(len(chunk), "sessions")
    counts["sessions"] = n_sessions
    for base in range(0, turns, batch):
        size = min(batch, turns - base)
        rows = seeder.batch_rows(base, size)
        with transaction.atomic():
            for name, model in BATCH_MODELS:
                if rows[name]:
                    _insert(model, rows[name])
                    counts[name] += len(rows[name])
        bar.add(sum(len(v) for v in rows.values()), f"turns {base + size:,}")
    with transaction.atomic():
        for file_name, version_id in seeder.last_version.items():
            WorkspaceFile.objects.update_or_create(
                file_name=file_name, defaults={"current_version_id": version_id, "updated_at": seeder.now}
            )
    bar.close()
    counts["one_of_each"] = _one_of_each(seeder.now)
    if connection.vendor == "postgresql":
        # Statistics for the planner, and (outside a transaction) the visibility map autovacuum would have
        # set by now, without which PostgreSQL reads the table behind an index-only scan.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE" if connection.in_atomic_block else "VACUUM ANALYZE")
    # What the hourly beat task would have stored over the seeded year (one row a day).
    counts["gate_stats_days"] = roll_up_gate_stats()
    return counts


class Seeder:
    """The rows of the data set, batch by batch, drawn from one random generator in a fixed order; keeps the file
    state as the guardian keeps it (per file, the last snapshot and version number) across batches."""

    def __init__(
        self,
        turns: int,
        turns_per_session: int,
        days: int,
        sample_ratio: float,
        event_ratio: float,
        rng: random.Random,
    ) -> None:
        self.rng = rng
        self.turns, self.turns_per_session = turns, turns_per_session
        self.now = timezone.now()
        self.span = dt.timedelta(days=days).total_seconds()
        self.start = self.now - dt.timedelta(seconds=self.span)
        self.sessions: list[ConversationSession] = []
        self.last_snapshot: dict[str, str | None] = dict.fromkeys(FILE_FOR_DECISION.values())
        self.seq: dict[str, int] = dict.fromkeys(FILE_FOR_DECISION.values(), 0)
        self.last_version: dict[str, str] = {}
        self.sample_every = 1 / sample_ratio if sample_ratio > 0 else 0
        self.event_every = 1 / event_ratio if event_ratio > 0 else 0
        self.sample_acc = self.event_acc = 0.0

    def sessions_plan(self, channels: int) -> list[ConversationSession]:
        """One session per ``turns_per_session`` turns, spread evenly over the span, across ``channels``."""
        n_sessions = max(1, -(-self.turns // self.turns_per_session))
        for i in range(n_sessions):
            created = self.start + dt.timedelta(seconds=self.span * i / n_sessions)
            channel = CHANNELS[i % channels]
            self.sessions.append(
                ConversationSession(
                    id=f"{channel}:{i // 97:05d}:{_ulid_at(created).lower()}",
                    channel_id=channel,
                    conversation_target=f"user-{i % 997}",
                    account_id=f"acct-{i % 13}",
                    created_at=created,
                    last_activity_at=min(self.now, created + dt.timedelta(seconds=self.span / n_sessions * 0.9)),
                )
            )
        return self.sessions

    def batch_rows(self, base: int, size: int) -> dict[str, list[Any]]:
        """The rows of turns ``base`` to ``base + size`` and of all that follows from them, by model name."""
        rows: dict[str, list[Any]] = {name: [] for name, _ in BATCH_MODELS}
        kinds = _weighted(self.rng, DECISION_WEIGHTS, size)
        for j in range(size):
            t = base + j
            created = self.start + dt.timedelta(seconds=self.span * (t + 0.5) / self.turns)
            session = self.sessions[min(t // self.turns_per_session, len(self.sessions) - 1)]
            turn = self.turn(t, created, session, rows)
            decision = self.decision(turn, kinds[j])
            rows["decisions"].append(decision)
            audit = self.audit(decision, rows) if kinds[j] != "NO_WRITE" else None
            self.sample_acc += 1
            if self.sample_every and self.sample_acc >= self.sample_every:
                self.sample_acc -= self.sample_every
                rows["samples"].append(_sample(self.rng, turn, decision, audit, session.id))
            self.event_acc += 1
            if self.event_every and self.event_acc >= self.event_every:
                self.event_acc -= self.event_every
                self.learning_event(t, turn, session, rows)
        return rows

    def turn(
        self, t: int, created: dt.datetime, session: ConversationSession, rows: dict[str, list[Any]]
    ) -> ConversationTurn:
        """Turn number ``t`` with its two context rows."""
        rng = self.rng
        turn = ConversationTurn(
            id=_ulid_at(created),
            session_id=session.id,
            turn_number=t % self.turns_per_session + 1,
            user_message_id=f"m{t}",
            user_message_content=_text(rng, rng.randint(6, 30)),
            user_from=session.conversation_target,
            agent_message_content=_text(rng, rng.randint(10, 60)),
            created_at=created,
            gate_status="done",
            gate_attempts=1,
            gate_finished_at=created + dt.timedelta(seconds=2),
        )
        rows["turns"].append(turn)
        for k, role in enumerate(("user", "agent")):
            rows["contexts"].append(
                ConversationContext(
                    turn_id=turn.id,
                    role=role,
                    message=_text(rng, rng.randint(5, 20)),
                    timestamp=created - dt.timedelta(minutes=2 - k),
                    sequence_number=k + 1,
                )
            )
        return turn

    def decision(self, turn: ConversationTurn, kind: str) -> MemoryGateDecision:
        rng = self.rng
        decided = turn.created_at + dt.timedelta(seconds=2)
        return MemoryGateDecision(
            id=_ulid_at(decided),
            turn_id=turn.id,
            session_id=turn.session_id,
            decision=kind,
            reason=_text(rng, 8),
            candidate_fact=None if kind == "NO_WRITE" else _text(rng, 10),
            confidence=round(rng.uniform(0.5, 1), 3),
            llm_model="gpt-4o-mini",
            llm_latency_ms=rng.randint(300, 2500),
            prompt_tokens=rng.randint(300, 2000),
            completion_tokens=rng.randint(20, 120),
            created_at=decided,
        )

    def audit(self, decision: MemoryGateDecision, rows: dict[str, list[Any]]) -> WriteGuardianAudit:
        """The guardian's audit of an UPDATE_* decision; a write (or a rolled-back one) with its snapshot and
        its file version."""
        rng = self.rng
        file_name = FILE_FOR_DECISION[decision.decision]
        status = _weighted(rng, AUDIT_STATUS_WEIGHTS, 1)[0]
        audited = decision.created_at + dt.timedelta(seconds=3)
        after = None
        if status in ("written", "rolled_back"):
            body = f"# {file_name}\n\n- {decision.candidate_fact}\n"
            after = _ulid_at(audited)
            rows["snapshots"].append(
                FileSnapshot(
                    id=after,
                    file_name=file_name,
                    content=body,
                    content_hash=hashlib.sha256(body.encode()).hexdigest(),
                    created_at=audited,
                )
            )
        audit = WriteGuardianAudit(
            id=_ulid_at(audited),
            decision_id=decision.id,
            turn_id=decision.turn_id,
            session_id=decision.session_id,
            target_file=file_name,
            candidate_fact=decision.candidate_fact,
            before_snapshot_id=self.last_snapshot[file_name],
            after_snapshot_id=after,
            diff=f"+- {decision.candidate_fact}" if after else None,
            lines_added=1 if after else 0,
            lines_removed=0,
            lines_modified=0,
            status=status,
            reason=_text(rng, 6),
            llm_model="gpt-4o-mini",
            llm_latency_ms=rng.randint(500, 4000),
            agent_steps=rng.randint(1, 4),
            created_at=audited,
        )
        rows["audits"].append(audit)
        if after:
            self.file_version(audit, after, rows)
        return audit

    def file_version(self, audit: WriteGuardianAudit, snapshot_id: str, rows: dict[str, list[Any]]) -> None:
        file_name = audit.target_file
        self.seq[file_name] += 1
        version = FileVersion(
            id=audit.id,
            file_name=file_name,
            seq=self.seq[file_name],
            snapshot_id=snapshot_id,
            kind="write",
            audit_id=audit.id,
            diff=audit.diff,
            lines_added=1,
            created_at=audit.created_at,
        )
        rows["file_versions"].append(version)
        self.last_snapshot[file_name] = snapshot_id
        self.last_version[file_name] = version.id

    def learning_event(
        self, t: int, turn: ConversationTurn, session: ConversationSession, rows: dict[str, list[Any]]
    ) -> None:
        """A learning event of the turn; an accepted memory or rule comes with its item."""
        rng, created = self.rng, turn.created_at
        event_type = _weighted(rng, EVENT_WEIGHTS, 1)[0]
        ref = ""
        if event_type == "mem_accept":
            item = MemoryItem(
                id=_ulid_at(created),
                content=_text(rng, 10),
                fingerprint=hashlib.sha256(f"item{t}".encode()).hexdigest(),
                quality_score=round(rng.uniform(0.5, 1), 3),
                score=round(rng.uniform(0.1, 1), 3),
                status=rng.choice(("active", "active", "active", "expired", "suppressed")),
                trace_id=turn.id,
                user_id=session.conversation_target or "",
                expires_at=created + dt.timedelta(days=90),
                created_at=created,
                updated_at=created,
            )
            rows["memory_items"].append(item)
            ref = item.id
        elif event_type == "rule_accept":
            rule = Rule(
                id=_ulid_at(created),
                rule_type=rng.choice(("style", "style", "routing", "safety")),
                content=_text(rng, 8),
                subject=rng.choice(WORDS),
                fingerprint=hashlib.sha256(f"rule{t}".encode()).hexdigest(),
                priority=rng.randint(10, 90),
                status=rng.choice(("active", "active", "suppressed", "archived")),
                trace_id=turn.id,
                created_at=created,
                updated_at=created,
            )
            rows["rules"].append(rule)
            ref = rule.id
        rows["learning_events"].append(
            LearningEvent(
                id=_ulid_at(created + dt.timedelta(milliseconds=1)),
                event_type=event_type,
                trace_id=turn.id,
                user_id=session.conversation_target or "",
                reason="ok",
                ref_id=ref,
                payload_json={"turn": turn.id},
                created_at=created,
            )
        )


def _one_of_each(now: dt.datetime) -> int:
    """One row of every admin-registered model the traffic above does not produce (exports, evaluations,
    corrections, rollbacks, reflect runs, opinions, skill drafts, recall chunks, checkpoints, report deliveries,
    API keys, beat schedules), so that every admin page has a row to show. Returns the rows created."""
    audits = WriteGuardianAudit.objects.order_by("-created_at")
    text = "- The user deploys the billing service on Fridays."
    digest = hashlib.sha256(text.encode()).hexdigest()
    rows: list[models.Model] = [
        DatasetExport(export_name="scale-seed", export_format="raw", file_path="var/exports/scale-seed.jsonl"),
        EvaluationRun(),
        JobCheckpoint(job=JobCheckpoint.Job.REFLECT, key="scale-seed"),
        MemoryChunk(
            path="MEMORY.md",
            start_line=1,
            end_line=1,
            hash=digest,
            text=text,
            search_text=text,
            content=text,
            timestamp=now,
        ),
        Opinion(statement="The user prefers short answers.", fingerprint=digest, confidence=0.7),
        ReflectRun(since=now - dt.timedelta(days=1), until=now),
        ReportDelivery(day=now.date()),
        SkillDraft(
            name="deploy-fridays",
            description="Deploy on Fridays",
            confidence=0.6,
            source_path="MEMORY.md",
            source_start_line=1,
            source_end_line=1,
            source_hash=digest,
            source_text=text,
            content=text,
        ),
        ClockedSchedule(clocked_time=now),
        IntervalSchedule(every=1, period=IntervalSchedule.HOURS),
        SolarSchedule(event="sunrise", latitude=48.85, longitude=2.35),
    ]
    with transaction.atomic():
        for row in rows:
            row.save()
        ApiKey.generate("scale-seed", ["read"])
        created = len(rows) + 1
        audit = audits.filter(status="refused").first()
        if audit is not None:
            BehaviorCorrection.objects.create(audit=audit, original_status="refused", corrected_status="written",
                                              correction_reason="scale seed", corrected_by="seed")  # fmt: skip
            created += 1
        # The newest write becomes a rolled-back one (a small seed may have drawn no "rolled_back" status).
        audit = audits.filter(status__in=("written", "rolled_back"), rollback__isnull=True).first()
        if audit is not None:
            Rollback.objects.create(audit=audit, rolled_back_by="seed", reason="scale seed", previous_status="written")
            WriteGuardianAudit.objects.filter(pk=audit.pk).update(status="rolled_back")
            created += 1
    return created


def _insert(model: type[models.Model], objs: list[Any]) -> None:
    """Insert ``objs`` as ``bulk_create`` would (same column values, no signals), without the ORM's per-value
    SQL compilation: ``COPY`` on PostgreSQL, ``executemany`` elsewhere. Auto ids are left to the database."""
    writer = RowWriter.of(model)
    attnames = writer.attnames
    rows = [writer.prepare([getattr(obj, a) for a in attnames]) for obj in objs]
    if connection.vendor == "postgresql":
        with (
            connection.cursor() as cursor,
            cursor.cursor.copy(f"COPY {writer.table} ({writer.columns}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)
    else:
        writer.insert(rows)


def _sample(
    rng: random.Random,
    turn: ConversationTurn,
    decision: MemoryGateDecision,
    audit: WriteGuardianAudit | None,
    session_id: str,
) -> DatasetSample:
    if audit is not None and rng.random() < 0.5:
        sample_type, source, label = "write_guardian_decision", audit.id, audit.status
    elif decision.decision != "NO_WRITE":
        sample_type, source, label = "memory_gate_positive", decision.id, decision.decision
    else:
        sample_type, source, label = "memory_gate_negative", decision.id, "NO_WRITE"
    content = {
        "input": {"user_message": turn.user_message_content, "agent_message": turn.agent_message_content},
        "output": {"decision": decision.decision, "reason": decision.reason, "candidate_fact": decision.candidate_fact},
    }
    # Scored as the collector scores (dataset_app.scoring): the score and its three factors, so that readers of
    # ``quality_factors`` pay at size what they pay in production. A refused write's label has no fact.
    guardian = sample_type == "write_guardian_decision"
    refused = audit is not None and guardian and label not in ("written", "rolled_back")
    quality = score_sample(
        ScoringInput(
            user_message=turn.user_message_content,
            agent_reply=turn.agent_message_content,
            fact=None if refused else decision.candidate_fact,
            reason=audit.reason if refused else decision.reason,
            evidence=SAMPLE_EVIDENCE.get(label, Evidence.NONE) if guardian else Evidence.NONE,
            gate_confidence=decision.confidence,
        ),
        weights=SAMPLE_WEIGHTS,
    )
    pii = rng.random() < 0.03
    return DatasetSample(
        id=_ulid_at(turn.created_at + dt.timedelta(seconds=10)),
        sample_type=sample_type,
        turn_id=turn.id,
        decision_id=decision.id,
        audit_id=audit.id if sample_type == "write_guardian_decision" else None,
        session_id=session_id,
        source_key=f"{sample_type}:{source}",
        content=content,
        label=label,
        quality_score=quality.score,
        quality_factors=quality.factors,
        annotation_status=_weighted(rng, SAMPLE_STATUS_WEIGHTS, 1)[0],
        privacy_checked=True,
        contains_pii=pii,
        pii_redacted_content=content if pii else None,
        collection_strategy="scale_seed",
        fingerprint=hashlib.sha256(f"{sample_type}{label}".encode()).hexdigest()[:16],
        created_at=turn.created_at + dt.timedelta(seconds=10),
    )


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


if __name__ == "__main__":
    sys.exit(main())
