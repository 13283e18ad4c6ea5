"""REQ-003: the memory files' snapshots and versions, write-guardian audits, rollbacks and corrections."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from reflection_site.ids import new_ulid
from reflection_site.memory_files import ALL_FILES, SEED_FILES

# The seed's five files (the seed profile's); what a deployment reads is memory_files.active().files, and the
# database accepts every profile's files (ALL_FILES) so that a file keeps its history across profiles.
MEMORY_FILES: tuple[str, ...] = SEED_FILES
# Reflect's pages (seed 001's bank/): names made by guardian_app.write.workspace.bank_page, never taken from a client.
BANK_PAGE_PATTERN = r"^bank/(entities/[A-Za-z0-9][A-Za-z0-9_-]{0,63}|opinions|world|experience)\.md$"
# A daily log (seed 001's memory/YYYY-MM-DD.md): reflect writes the ``## Retain`` bullets it infers into it.
DAILY_LOG_PATTERN = r"^memory/[0-9]{4}-[0-9]{2}-[0-9]{2}\.md$"
FILE_NAME_MAX_LENGTH = 96


def workspace_file_q(field: str) -> Q:
    """The database check on a workspace file name: a memory file of any profile, a bank page or a daily log."""
    return (
        Q(**{f"{field}__in": ALL_FILES})
        | Q(**{f"{field}__regex": BANK_PAGE_PATTERN})
        | Q(**{f"{field}__regex": DAILY_LOG_PATTERN})
    )


class MemoryFile(models.TextChoices):
    # Labelled with the file name: the console says USER.md, never "User".
    MEMORY = "MEMORY.md", "MEMORY.md"
    USER = "USER.md", "USER.md"
    SOUL = "SOUL.md", "SOUL.md"
    IDENTITY = "IDENTITY.md", "IDENTITY.md"
    TOOLS = "TOOLS.md", "TOOLS.md"
    AGENTS = "AGENTS.md", "AGENTS.md"  # the openclaw profile's home of tool facts (its "## Tools")


class FileSnapshot(models.Model):
    """A file's whole content; identical content for the same file is stored once."""

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    file_name = models.CharField(max_length=FILE_NAME_MAX_LENGTH, choices=MemoryFile.choices)
    content = models.TextField()
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the content")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "file_snapshots"
        indexes = [
            models.Index(fields=["file_name", "created_at"], name="file_snapshots_file_time"),
            models.Index(fields=["content_hash"], name="file_snapshots_hash"),
        ]
        constraints = [
            models.CheckConstraint(condition=workspace_file_q("file_name"), name="file_snapshots_file_name_valid"),
            models.UniqueConstraint(fields=["file_name", "content_hash"], name="file_snapshots_file_hash_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.file_name}@{self.content_hash[:10]}"


class WorkspaceFile(models.Model):
    """The last version Reflection knows of each file; its row is the cross-machine write lock on PostgreSQL."""

    file_name = models.CharField(primary_key=True, max_length=FILE_NAME_MAX_LENGTH, choices=MemoryFile.choices)
    current_version = models.ForeignKey(
        "FileVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Write-ahead: the audit whose write is under way. Set (and committed) before the file is replaced,
    # cleared when the write is recorded; one left behind by a crash is reconciled under the file lock.
    pending_audit = models.ForeignKey(
        "WriteGuardianAudit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(default=timezone.now)
    # A drift finding: the file's path holds a symbolic link, a FIFO or another non-regular file, which is
    # neither read nor written through (guardian_app.write.workspace). Cleared once a regular file is back.
    unsafe_reason = models.CharField(max_length=200, blank=True, default="")
    unsafe_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "workspace_files"
        constraints = [
            models.CheckConstraint(condition=workspace_file_q("file_name"), name="workspace_files_file_name_valid")
        ]

    def __str__(self) -> str:
        return self.file_name


class WriteGuardianAudit(models.Model):
    class Status(models.TextChoices):
        WRITTEN = "written"
        REFUSED = "refused"
        FAILED = "failed"
        SKIPPED = "skipped"
        ROLLED_BACK = "rolled_back"

    class Source(models.TextChoices):
        GATE = "gate", "memory gate decision"
        RETRY = "retry", "operator retry"
        LEARNING = "learning", "learning guardrails"
        REFLECT = "reflect", "reflect job"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    # The seed makes these NOT NULL; writes from reflect and learning have no gate decision behind them.
    # Decision and session are served by wga_decision and wga_session_time below (no index of their own).
    decision = models.ForeignKey(
        "sessions_app.MemoryGateDecision",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="audits",
        db_index=False,
    )
    turn = models.ForeignKey(
        "sessions_app.ConversationTurn", null=True, blank=True, on_delete=models.CASCADE, related_name="audits"
    )
    session = models.ForeignKey(
        "sessions_app.ConversationSession",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="audits",
        db_index=False,
    )
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.GATE)
    source_ref = models.CharField(
        max_length=64, blank=True, default="", help_text="Id of the reflect run or learning item."
    )
    retry_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retries")
    requested_by = models.CharField(
        max_length=255, default="system", help_text="Who asked for the write: system, or the operator of a retry."
    )

    target_file = models.CharField(max_length=FILE_NAME_MAX_LENGTH, choices=MemoryFile.choices)
    candidate_fact = models.TextField()

    before_snapshot = models.ForeignKey(FileSnapshot, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    after_snapshot = models.ForeignKey(FileSnapshot, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    diff = models.TextField(null=True, blank=True)
    lines_added = models.IntegerField(null=True, blank=True)
    lines_removed = models.IntegerField(null=True, blank=True)
    lines_modified = models.IntegerField(null=True, blank=True)

    status = models.CharField(max_length=16, choices=Status.choices)
    reason = models.TextField(null=True, blank=True)
    held_for_review = models.BooleanField(
        default=False, help_text="An instruction-like fact kept out of the file for a person."
    )

    llm_model = models.CharField(max_length=255, null=True, blank=True)
    llm_latency_ms = models.IntegerField(null=True, blank=True)
    agent_steps = models.IntegerField(null=True, blank=True)
    prompt_version = models.CharField(max_length=32, blank=True, default="")
    edits = models.JSONField(null=True, blank=True, help_text="The edits the guardian asked for.")

    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "write_guardian_audit"
        indexes = [
            models.Index(fields=["session", "created_at"], name="wga_session_time"),
            models.Index(fields=["status"], name="wga_status"),
            # GET /guardian/audits?file=&status= newest first (issue 9); its prefix serves a file's audits.
            models.Index(fields=["target_file", "status", "-created_at", "-id"], name="wga_file_status_time"),
            models.Index(fields=["decision"], name="wga_decision"),
            models.Index(fields=["created_at"], name="wga_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=workspace_file_q("target_file"), name="write_guardian_audit_target_file_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["written", "refused", "failed", "skipped", "rolled_back"]),
                name="write_guardian_audit_status_valid",
            ),
            # A redelivered guardian task finds the decision's audit already there.
            models.UniqueConstraint(
                fields=["decision"],
                condition=Q(retry_of__isnull=True, decision__isnull=False),
                name="write_guardian_audit_decision_unique",
            ),
            # A redelivered learning or reflect write finds its audit already there.
            models.UniqueConstraint(
                fields=["source", "source_ref"],
                condition=Q(retry_of__isnull=True, decision__isnull=True) & ~Q(source_ref=""),
                name="write_guardian_audit_source_ref_unique",
            ),
        ]
        permissions = [
            ("rollback_writeguardianaudit", "Can roll back a memory write"),
            ("retry_writeguardianaudit", "Can retry a memory write"),
        ]

    def __str__(self) -> str:
        return f"{self.status} {self.target_file} ({self.id})"

    @property
    def is_written(self) -> bool:
        return self.status == self.Status.WRITTEN


class FileVersion(models.Model):
    """One state a memory file had, in order: a write, a rollback, a hand edit, or the first sighting."""

    class Kind(models.TextChoices):
        INITIAL = "initial", "first seen"
        WRITE = "write"
        ROLLBACK = "rollback"
        HAND_EDIT = "hand_edit", "hand edit"
        # openclaw profile: a change Reflection did not make to a file the agent writes itself (MEMORY.md,
        # memory/), such as OpenClaw's "dreaming" consolidation.
        AGENT_EDIT = "agent_edit", "agent edit"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    file_name = models.CharField(max_length=FILE_NAME_MAX_LENGTH, choices=MemoryFile.choices)
    seq = models.PositiveIntegerField(
        help_text="Position in the file's history: 1, 2, 3 … (assigned under the file lock)."
    )
    snapshot = models.ForeignKey(
        FileSnapshot,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="versions",
        help_text="Empty: no file.",
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    audit = models.ForeignKey(
        WriteGuardianAudit, null=True, blank=True, on_delete=models.SET_NULL, related_name="versions"
    )
    rollback = models.ForeignKey("Rollback", null=True, blank=True, on_delete=models.SET_NULL, related_name="versions")
    diff = models.TextField(blank=True, default="")
    lines_added = models.IntegerField(default=0)
    lines_removed = models.IntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "file_versions"
        indexes = [
            # Serves guardian_app.queries.file_history: newest first per file.
            models.Index(fields=["file_name", "-created_at", "-id"], name="file_versions_file_time"),
            # Serves the admin's changelist order (file, newest version first): the unique (file_name, seq) index
            # cannot give ascending files with descending versions, so SQLite sorted every version (1 s at 1M).
            models.Index(fields=["file_name", "-seq"], name="file_versions_file_seq_desc"),
        ]
        constraints = [
            models.CheckConstraint(condition=workspace_file_q("file_name"), name="file_versions_file_name_valid"),
            models.CheckConstraint(
                condition=Q(kind__in=["initial", "write", "rollback", "hand_edit", "agent_edit"]),
                name="file_versions_kind_valid",
            ),
            # Serves guardian_app.queries.file_history (newest first) and the rollback's "changes since".
            models.UniqueConstraint(fields=["file_name", "seq"], name="file_versions_file_seq_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.file_name} {self.kind} {self.created_at:%Y-%m-%d %H:%M:%S}"


class Rollback(models.Model):
    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    audit = models.OneToOneField(WriteGuardianAudit, on_delete=models.CASCADE, related_name="rollback")
    rolled_back_at = models.DateTimeField(default=timezone.now)
    rolled_back_by = models.CharField(max_length=255)
    reason = models.TextField()
    # The seed's NOT NULL; empty when the write created the file and the rollback removed it.
    restored_snapshot = models.ForeignKey(
        FileSnapshot, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    replaced_snapshot = models.ForeignKey(
        FileSnapshot,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="What the rollback overwrote.",
    )
    previous_status = models.CharField(max_length=16)
    method = models.CharField(max_length=16, default="restore", help_text="restore | merge | forced")
    forced = models.BooleanField(default=False)

    class Meta:
        db_table = "rollbacks"
        indexes = [models.Index(fields=["rolled_back_at"], name="rollbacks_rolled_back_at")]

    def __str__(self) -> str:
        return f"rollback of {self.audit_id}"


class BehaviorCorrectionQuerySet(models.QuerySet["BehaviorCorrection"]):
    def for_prompt(self) -> BehaviorCorrectionQuerySet:
        """The corrections the gate and guardian prompts include: marked apply_to_future, newest first."""
        return self.filter(apply_to_future=True, active=True).order_by("-corrected_at")


class BehaviorCorrection(models.Model):
    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    audit = models.ForeignKey(WriteGuardianAudit, on_delete=models.CASCADE, related_name="corrections")

    original_status = models.CharField(max_length=16)
    original_candidate_fact = models.TextField(null=True, blank=True)
    original_target_file = models.CharField(max_length=FILE_NAME_MAX_LENGTH, null=True, blank=True)

    corrected_status = models.CharField(max_length=16)
    corrected_candidate_fact = models.TextField(null=True, blank=True)
    corrected_target_file = models.CharField(max_length=32, null=True, blank=True, choices=MemoryFile.choices)
    correction_reason = models.TextField()

    apply_to_future = models.BooleanField(default=False)
    correction_pattern = models.TextField(null=True, blank=True)
    active = models.BooleanField(default=True, help_text="Untick to stop applying it without deleting the record.")

    corrected_by = models.CharField(max_length=255)
    corrected_at = models.DateTimeField(default=timezone.now)

    objects = BehaviorCorrectionQuerySet.as_manager()

    class Meta:
        db_table = "behavior_corrections"
        indexes = [models.Index(fields=["apply_to_future"], name="corrections_apply_to_future")]
        constraints = [
            models.CheckConstraint(
                condition=Q(corrected_status__in=["written", "refused"]), name="behavior_corrections_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(corrected_target_file__isnull=True) | Q(corrected_target_file__in=ALL_FILES),
                name="behavior_corrections_target_file_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"correction of {self.audit_id}: {self.corrected_status}"


# --- Learning guardrails (seed 002) ---
class LearningSource(models.TextChoices):
    """Where a learning decision came from (the seed's ``source``)."""

    API_FEEDBACK = "api_feedback", "feedback API"
    DISCORD_REACTION = "discord_reaction", "Discord reaction"
    SYSTEM = "system", "system (decay)"
    OPERATOR = "operator", "operator (admin or API)"


class LearningEventType(models.TextChoices):
    MEM_ACCEPT = "mem_accept", "memory accepted"
    MEM_REJECT = "mem_reject", "memory rejected"
    MEM_SUPPRESS = "mem_suppress", "memory suppressed"
    MEM_EXPIRE = "mem_expire", "memory expired"
    MEM_REACTIVATE = "mem_reactivate", "memory reactivated"
    RULE_ACCEPT = "rule_accept", "rule accepted"
    RULE_REJECT = "rule_reject", "rule rejected"
    RULE_CONFLICT = "rule_conflict", "rule refused: conflict"
    RULE_SUPPRESS = "rule_suppress", "rule suppressed"
    RULE_ARCHIVE = "rule_archive", "rule archived"
    RULE_REACTIVATE = "rule_reactivate", "rule reactivated"
    RATE_LIMITED = "rate_limited", "rate limited"
    GUARDRAIL_ERROR = "guardrail_error", "guardrail error (failed open)"
    DECAY_RUN = "decay_run", "decay run"


class LearningEvent(models.Model):
    """One decision of the learning guardrails, with its reason and source (the seed's audit log)."""

    EventType = LearningEventType

    # The seed's column is event_id; the field keeps Django's usual name.
    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False, db_column="event_id")
    project_id = models.CharField(max_length=64, default="default")
    source = models.CharField(max_length=32, choices=LearningSource.choices, default=LearningSource.API_FEEDBACK)
    trace_id = models.CharField(
        max_length=64, null=True, blank=True, help_text="The conversation turn the feedback was on."
    )
    user_id = models.CharField(max_length=255, blank=True, default="")
    event_type = models.CharField(max_length=32, choices=EventType.choices)
    reason = models.CharField(max_length=64, blank=True, default="", help_text="The decision's reason code.")
    ref_id = models.CharField(max_length=26, blank=True, default="", help_text="The memory item or rule concerned.")
    shadow = models.BooleanField(default=False, help_text="Recorded in shadow mode: decided, not applied.")
    payload_json = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "learning_events"
        indexes = [
            # Serves guardian_app.learning.guardrails.learning_metrics: counts per type over a window.
            models.Index(fields=["event_type", "created_at"], name="learning_events_type_time"),
            models.Index(fields=["project_id", "-created_at"], name="learning_events_project_time"),
            models.Index(fields=["trace_id"], name="learning_events_trace"),
            models.Index(fields=["-created_at", "-id"], name="learning_events_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(event_type__in=LearningEventType.values),
                name="learning_events_event_type_valid",
            ),
            models.CheckConstraint(
                condition=Q(source__in=["api_feedback", "discord_reaction", "system", "operator"]),
                name="learning_events_source_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.reason} ({self.id})"


class MemoryItem(models.Model):
    """A fact learned from positive feedback; accepted ones are handed to the write guardian for MEMORY.md."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        SUPPRESSED = "suppressed"
        EXPIRED = "expired"

    class Origin(models.TextChoices):
        GATE = "gate", "the gate's candidate fact"
        DISTILLED = "distilled", "distilled from the turn"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    project_id = models.CharField(max_length=64, default="default")
    content = models.TextField()
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the normalised text.")
    quality_score = models.FloatField(default=0, help_text="The memory guard's score when accepted.")
    score = models.FloatField(default=0, help_text="The quality score after decay and activity boost.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.GATE)
    source = models.CharField(max_length=32, choices=LearningSource.choices, default=LearningSource.API_FEEDBACK)
    trace_id = models.CharField(max_length=64, null=True, blank=True)
    user_id = models.CharField(max_length=255, blank=True, default="")
    last_hit_at = models.DateTimeField(null=True, blank=True)
    hit_count = models.IntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Expires unless hit before then.")
    decayed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "mem_items"
        verbose_name = "learned memory item"
        indexes = [
            # Serves GET /learning/memory-items and the per-project cap.
            models.Index(fields=["project_id", "status", "-created_at"], name="mem_items_project_status_time"),
            # Serves the admin changelist's order, newest first (issue 9: a sort of every item before).
            models.Index(fields=["created_at"], name="mem_items_created"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["project_id", "fingerprint"], name="mem_items_project_fingerprint_unique"),
            models.CheckConstraint(
                condition=Q(status__in=["active", "suppressed", "expired"]), name="mem_items_status_valid"
            ),
            models.CheckConstraint(condition=Q(hit_count__gte=0), name="mem_items_hit_count_positive"),
        ]

    def __str__(self) -> str:
        text = self.content if len(self.content) <= 60 else self.content[:59] + "…"
        return f"{self.status}: {text}"


class Rule(models.Model):
    """A behaviour rule learned from negative feedback, fetched by the agent (highest priority first)."""

    class RuleType(models.TextChoices):
        SAFETY = "safety"
        STYLE = "style"
        ROUTING = "routing"

    class Status(models.TextChoices):
        ACTIVE = "active"
        SUPPRESSED = "suppressed"
        ARCHIVED = "archived"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    project_id = models.CharField(max_length=64, default="default")
    rule_type = models.CharField(max_length=16, choices=RuleType.choices)
    content = models.TextField(help_text="The instruction, from the feedback's reason.")
    subject = models.CharField(max_length=255, blank=True, default="", help_text="What it is about, for conflicts.")
    stance = models.SmallIntegerField(default=1, help_text="+1 do / more, -1 don't / less, on the subject.")
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the type and the normalised text.")
    priority = models.IntegerField(default=50)
    confidence = models.FloatField(default=0.5, help_text="After decay and activity boost.")
    base_confidence = models.FloatField(default=0.5, help_text="When accepted.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    conflict_with = models.CharField(
        max_length=26, null=True, blank=True, help_text="The rule it superseded or lost to."
    )
    source = models.CharField(max_length=32, choices=LearningSource.choices, default=LearningSource.API_FEEDBACK)
    trace_id = models.CharField(max_length=64, null=True, blank=True)
    user_id = models.CharField(max_length=255, blank=True, default="")
    last_hit_at = models.DateTimeField(null=True, blank=True)
    hit_count = models.IntegerField(default=0)
    decayed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "rules"
        verbose_name = "learned rule"
        indexes = [
            # Serves GET /learning/rules?status=active (highest priority first) and conflict lookups.
            models.Index(
                fields=["project_id", "status", "-priority", "-updated_at"], name="rules_project_status_priority"
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["project_id", "fingerprint"], name="rules_project_fingerprint_unique"),
            models.CheckConstraint(
                condition=Q(rule_type__in=["safety", "style", "routing"]), name="rules_rule_type_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["active", "suppressed", "archived"]), name="rules_status_valid"
            ),
            models.CheckConstraint(condition=Q(priority__gte=0, priority__lte=100), name="rules_priority_range"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="rules_confidence_range"),
            models.CheckConstraint(condition=Q(hit_count__gte=0), name="rules_hit_count_positive"),
        ]

    def __str__(self) -> str:
        text = self.content if len(self.content) <= 60 else self.content[:59] + "…"
        return f"{self.rule_type}/{self.priority}: {text}"


class FeedbackIdempotency(models.Model):
    """One row per accepted feedback key ``sha256(trace_id + user_id + feedback)``; a repeat hits the key."""

    idem_key = models.CharField(primary_key=True, max_length=64)
    trace_id = models.CharField(max_length=64)
    user_id = models.CharField(max_length=255)
    feedback = models.CharField(max_length=8)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "feedback_idempotency"
        verbose_name_plural = "feedback idempotency keys"

    def __str__(self) -> str:
        return self.idem_key


class LearningRateLimit(models.Model):
    """Per-user feedback counters when there is no Redis: one row per ``learning:feedback:{user}:{minute}``."""

    bucket_key = models.CharField(primary_key=True, max_length=320)
    count = models.IntegerField(default=0)
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "learning_rate_limits"
        # Serves guardian_app.learning.ratelimit.purge_expired.
        indexes = [models.Index(fields=["expires_at"], name="learning_rate_limits_expiry")]

    def __str__(self) -> str:
        return f"{self.bucket_key}={self.count}"


# --- Recall index (seed 003) ---
from guardian_app.signals import memory_file_changed  # noqa: E402


# A derived index over the workspace's Markdown (the single source of truth): `python manage.py memory
# index --rebuild` recreates all of it. Seed 003's `meta`, `files` and `chunks` are prefixed
# `memory_index_` because those bare names are too generic for a database that several apps share;
# `embedding_cache` keeps its name. The full-text index beside the chunks (an FTS5 table on SQLite, a
# tsvector column with a GIN index on PostgreSQL) is created by the `recall_index` migration.
class RecallKind(models.TextChoices):
    """Seed 001's fact types (Retain prefixes W, B, O, S)."""

    WORLD = "world"
    EXPERIENCE = "experience"
    OPINION = "opinion"
    OBSERVATION = "observation"


class MemoryIndexMeta(models.Model):
    """Seed 003's ``meta``: schema version, chunking parameters, embedding provider/model/dims."""

    key = models.CharField(primary_key=True, max_length=64)
    value = models.TextField(help_text="JSON")

    class Meta:
        db_table = "memory_index_meta"
        verbose_name = "recall index setting"

    def __str__(self) -> str:
        return self.key


class MemoryIndexFile(models.Model):
    """Seed 003's ``files``: one row per indexed Markdown file, to skip files that did not change."""

    path = models.CharField(primary_key=True, max_length=512, help_text="Relative to WORKSPACE_DIR, with '/'.")
    source = models.CharField(max_length=16, default="memory")
    hash = models.CharField(max_length=64, help_text="SHA-256 of the content")
    mtime = models.BigIntegerField(help_text="Modification time, Unix milliseconds")
    size = models.BigIntegerField()
    indexed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "memory_index_files"
        verbose_name = "indexed memory file"

    def __str__(self) -> str:
        return self.path


class MemoryChunk(models.Model):
    """Seed 003's ``chunks``: a fact or a passage of a file, with its exact lines, and its embedding."""

    # An integer key, not the seed's UUID text: it is the FTS5 table's rowid, which must be a stable integer.
    id = models.BigAutoField(primary_key=True)
    path = models.CharField(max_length=512)
    source = models.CharField(max_length=16, default="memory")
    start_line = models.PositiveIntegerField()
    end_line = models.PositiveIntegerField()
    hash = models.CharField(max_length=64, help_text="SHA-256 of the embedded text (heading and chunk text)")
    model = models.CharField(max_length=255, blank=True, default="", help_text="Embedding provider/model; empty: none")
    text = models.TextField()
    heading = models.CharField(max_length=512, blank=True, default="")
    # The words the full-text index stores (CJK as characters and bigrams); see guardian_app.recall.chunking.
    search_text = models.TextField()
    embedding = models.BinaryField(null=True, blank=True, help_text="float32 vector")
    kind = models.CharField(max_length=16, choices=RecallKind.choices, null=True, blank=True)
    entities = models.JSONField(default=list, blank=True)
    # "|peter|the-castle|": the entity filter is a LIKE on both databases.
    entity_keys = models.TextField(blank=True, default="")
    confidence = models.FloatField(null=True, blank=True)
    content = models.TextField(help_text="The fact without its Retain prefix; else the text")
    timestamp = models.DateTimeField(
        help_text="The source's date: a daily log's day, else when the text was first indexed"
    )
    # The period the fact states ("since March", "until 2025", "自三月起"; guardian_app.recall.retain.parse_time_range).
    valid_from = models.DateField(null=True, blank=True, help_text="First day the fact holds, when it says")
    valid_until = models.DateField(null=True, blank=True, help_text="Last day the fact holds, when it says")
    hits = models.PositiveIntegerField(default=0, help_text="Times the agent reported using this result")
    last_hit_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "memory_index_chunks"
        verbose_name = "recall index chunk"
        indexes = [
            # Serves guardian_app.recall.index: a file's chunks, compared with the file's new chunks.
            models.Index(fields=["path", "start_line"], name="memory_index_chunks_path"),
            models.Index(fields=["source"], name="memory_index_chunks_source"),
            # Serves guardian_app.recall.index (chunks still to embed: model "") and recall's vector matrix.
            models.Index(fields=["model"], name="memory_index_chunks_model"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__isnull=True) | Q(kind__in=RecallKind.values), name="memory_index_chunks_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(start_line__gte=1) & Q(end_line__gte=models.F("start_line")),
                name="memory_index_chunks_lines_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.source_ref

    @property
    def source_ref(self) -> str:
        """``memory/2026-02-03.md#L12-L18`` (``#L12`` for one line)."""
        if self.start_line == self.end_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


class EmbeddingCache(models.Model):
    """Seed 003's ``embedding_cache``: unchanged text is never embedded twice.

    The seed's primary key (provider, model, provider_key, hash) is a unique constraint here: Django's
    admin and ``bulk_create(ignore_conflicts=True)`` work with a plain key.
    """

    id = models.BigAutoField(primary_key=True)
    provider = models.CharField(max_length=64)
    model = models.CharField(max_length=255)
    provider_key = models.CharField(max_length=64, help_text="Hash of the endpoint and API key")
    hash = models.CharField(max_length=64, help_text="SHA-256 of the input text")
    embedding = models.BinaryField(help_text="float32 vector")
    dims = models.IntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "embedding_cache"
        indexes = [models.Index(fields=["updated_at"], name="embedding_cache_updated_at")]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "model", "provider_key", "hash"], name="embedding_cache_key_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} {self.hash[:10]}"


def _reindex_after_change(sender: object, file_name: str = "", **kwargs: object) -> None:
    """A memory file changed (write, rollback, recorded hand edit; sent after commit): re-index it."""
    from guardian_app.recall.index import enqueue_index

    enqueue_index(file_name or None)


# Connected here because every process imports the models (web, worker, commands) and so sends the signal
# with this receiver in place; guardian_app.signals holds only the Signal.
memory_file_changed.connect(_reindex_after_change, dispatch_uid="guardian_app.recall_reindex")


# --- Reflect (seeds 001, 004) ---
# Reflection keeps bank/ pages (entity pages, opinions) true as evidence accumulates, projects the index into
# daily views, reports what changed, resumes its jobs after a crash, and proposes skill drafts. Its page
# writes are ordinary write-guardian audits (source "reflect", source_ref "<run id>:<page>").
class ReflectRun(models.Model):
    """One reflect job over the facts of a period: what it read, which pages it wrote, which opinions moved."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    since = models.DateTimeField(help_text="Facts from this time on (daily logs from this day on).")
    until = models.DateTimeField(help_text="Facts before this time; also the date the pages say they were updated.")
    dry_run = models.BooleanField(default=False, help_text="Computed what would change; wrote nothing.")
    requested_by = models.CharField(max_length=255, default="system")
    stage = models.CharField(max_length=32, blank=True, default="", help_text="collect, opinions, pages, skills, done")
    facts_count = models.IntegerField(default=0)
    entities_count = models.IntegerField(default=0)
    pages_written = models.IntegerField(default=0)
    pages_unchanged = models.IntegerField(default=0)
    pages_refused = models.IntegerField(default=0)
    opinions_created = models.IntegerField(default=0)
    opinions_updated = models.IntegerField(default=0)
    memory_proposals = models.IntegerField(default=0)
    skill_drafts = models.IntegerField(default=0)
    llm_model = models.CharField(max_length=255, blank=True, default="", help_text="Empty: the offline summariser.")
    stats = models.JSONField(default=dict, blank=True, help_text="Per page outcome, excluded facts, opinion moves.")
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "reflect_runs"
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="reflect_runs_created"),
            # Serves guardian_app.reflect.reflect.sweep_stale_runs and the "since the last run" of the daily job.
            models.Index(fields=["status", "created_at"], name="reflect_runs_status_time"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed"]), name="reflect_runs_status_valid"
            ),
            models.CheckConstraint(condition=Q(since__lte=models.F("until")), name="reflect_runs_since_before_until"),
        ]
        permissions = [("run_reflectrun", "Can start a reflect run")]

    def __str__(self) -> str:
        return f"reflect {self.id} ({self.status})"


class Opinion(models.Model):
    """Seed 001's opinion: a statement, its confidence in [0, 1], last updated, and its evidence."""

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    entity = models.CharField(max_length=255, blank=True, default="", help_text="Empty: about no entity in particular.")
    entity_key = models.CharField(max_length=255, blank=True, default="", help_text="The entity, compared lower-case.")
    statement = models.TextField()
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the normalised statement.")
    confidence = models.FloatField()
    supporting_count = models.IntegerField(default=0)
    contradicting_count = models.IntegerField(default=0)
    contradiction_streak = models.IntegerField(
        default=0, help_text="Strong contradictions since the last support: a large drop needs several in a row."
    )
    source = models.CharField(max_length=512, blank=True, default="", help_text="Where it was first stated.")
    created_by_run = models.ForeignKey(
        ReflectRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="opinions_created_set"
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_updated = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "opinions"
        indexes = [
            # Serves GET /opinions?entity=… (newest first) and reflect's candidate lookup per entity.
            models.Index(fields=["entity_key", "-last_updated", "-id"], name="opinions_entity_time"),
            models.Index(fields=["-last_updated", "-id"], name="opinions_updated"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["entity_key", "fingerprint"], name="opinions_entity_fingerprint_unique"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="opinions_confidence_range"),
        ]

    def __str__(self) -> str:
        about = f"@{self.entity}: " if self.entity else ""
        return f"{about}{self.statement[:60]} (c={self.confidence:.2f})"


class OpinionEvidence(models.Model):
    """A fact that supported or contradicted an opinion, and how it moved the confidence (once per fact)."""

    class Stance(models.TextChoices):
        SUPPORTS = "supports"
        CONTRADICTS = "contradicts"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    opinion = models.ForeignKey(  # Served by (opinion, fact_date) and (opinion, fact_id) below.
        Opinion, on_delete=models.CASCADE, related_name="evidence", db_index=False
    )
    fact_id = models.CharField(max_length=64, help_text="Stable id of the fact: hash of its file and text.")
    stance = models.CharField(max_length=16, choices=Stance.choices)
    strength = models.FloatField()
    confidence_before = models.FloatField()
    confidence_after = models.FloatField()
    source = models.CharField(max_length=512, help_text="memory/2025-11-27.md#L12")
    content = models.TextField()
    fact_kind = models.CharField(max_length=16, null=True, blank=True)
    fact_date = models.DateTimeField()
    run = models.ForeignKey(ReflectRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="evidence")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "opinion_evidence"
        verbose_name_plural = "opinion evidence"
        indexes = [models.Index(fields=["opinion", "fact_date"], name="opinion_evidence_opinion_date")]
        constraints = [
            # A resumed or repeated reflect finds the evidence already counted.
            models.UniqueConstraint(fields=["opinion", "fact_id"], name="opinion_evidence_fact_unique"),
            models.CheckConstraint(
                condition=Q(stance__in=["supports", "contradicts"]), name="opinion_evidence_stance_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.stance} {self.opinion_id}: {self.source}"


class SkillDraft(models.Model):
    """Seed 004 P3-001: a SKILL.md proposed from a pattern the agent keeps recalling; a person approves it."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    name = models.CharField(max_length=64, help_text="Folder name under skills/: lower-case letters, digits, hyphens.")
    description = models.TextField()
    triggers = models.JSONField(default=list, blank=True)
    steps = models.JSONField(default=list, blank=True)
    confidence = models.FloatField()
    source_path = models.CharField(max_length=512)
    source_start_line = models.PositiveIntegerField()
    source_end_line = models.PositiveIntegerField()
    source_hash = models.CharField(max_length=64, help_text="Hash of the pattern's chunk: drafted once.")
    source_text = models.TextField()
    hits = models.PositiveIntegerField(default=0, help_text="Times the pattern had been recalled when drafted.")
    content = models.TextField(help_text="The SKILL.md draft.")
    llm_model = models.CharField(max_length=255, blank=True, default="", help_text="Empty: drafted offline.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reviewed_by = models.CharField(max_length=255, blank=True, default="")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_reason = models.TextField(blank=True, default="", help_text="Why it was rejected (or approved).")
    written_path = models.CharField(max_length=512, blank=True, default="")
    run = models.ForeignKey(
        ReflectRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="skill_drafts_set"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "skill_drafts"
        indexes = [models.Index(fields=["status", "-created_at"], name="skill_drafts_status_time")]
        constraints = [
            models.UniqueConstraint(fields=["source_hash"], name="skill_drafts_source_unique"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "approved", "rejected"]), name="skill_drafts_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(name__regex=r"^[a-z0-9][a-z0-9-]{0,63}$"), name="skill_drafts_name_slug"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1), name="skill_drafts_confidence_range"
            ),
        ]
        permissions = [("review_skilldraft", "Can approve or reject a skill draft")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class ReportDelivery(models.Model):
    """A change report posted to REPORT_WEBHOOK_URL: once per day, retried until it is delivered or given up."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    kind = models.CharField(max_length=16, default="daily")
    day = models.DateField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.IntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    target = models.CharField(
        max_length=255, blank=True, default="", help_text="Scheme and host only: never the token."
    )
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "report_deliveries"
        verbose_name_plural = "report deliveries"
        constraints = [
            models.UniqueConstraint(fields=["kind", "day"], name="report_deliveries_kind_day_unique"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "delivered", "failed"]), name="report_deliveries_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} report {self.day} ({self.status})"
