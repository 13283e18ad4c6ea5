"""REQ-003: the memory files' snapshots and versions, write-guardian audits, rollbacks and corrections."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from reflection_site.ids import new_ulid
from reflection_site.memory_files import ALL_FILES, SEED_FILES
from reflection_site.rows import RowReader

# The seed's five files (the seed profile's); what a deployment reads is memory_files.active().files, and the
# database accepts every profile's files (ALL_FILES) so that a file keeps its history across profiles.
MEMORY_FILES: tuple[str, ...] = SEED_FILES
# Reflect's pages (seed 001's bank/): names made by guardian_app.write.paths.bank_page, never taken from a client.
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
            # A redelivered guardian task finds the decision's audit already there; a second fact the gate gave
            # beside it (its "also", issue 21) has an audit of its own, told apart by source_ref ("also-1").
            models.UniqueConstraint(
                fields=["decision", "source_ref"],
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

    def prompt_rows(self, limit: int, *, with_pattern: bool = False) -> list[BehaviorCorrection]:
        """``for_prompt()[:limit]`` (only those with a ``correction_pattern`` if ``with_pattern``) as one written
        statement: the gate and the guardian read them for every turn, and the ORM took 0.7 ms to compile the query."""
        clause = "WHERE {apply_to_future} AND {active}"
        if with_pattern:
            clause += " AND {correction_pattern} IS NOT NULL AND {correction_pattern} <> ''"
        return RowReader.of(self.model, clause + " ORDER BY {corrected_at} DESC LIMIT %s").rows([limit])


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
