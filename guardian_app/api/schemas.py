"""Request and response shapes of the write guardian's API."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, ModelSchema, Schema

from guardian_app.models import BehaviorCorrection, FileVersion, Rollback, WriteGuardianAudit
from guardian_app.write.rollback import rollback_change
from reflection_site import memory_files
from reflection_site.api import NOT_BLANK
from sessions_app.schemas import Timestamp, TimestampParam


class RollbackOut(ModelSchema):
    audit_id: str
    restored_snapshot_id: str | None = None
    replaced_snapshot_id: str | None = None

    class Meta:
        model = Rollback
        fields = ["id", "rolled_back_at", "rolled_back_by", "reason", "previous_status", "method", "forced"]


class RollbackResultOut(RollbackOut):
    """A rollback and what it did to the file, measured by diffing the file before and after."""

    changed: bool = Field(description="Whether the file changed (false: the write's lines were already gone).")
    lines_removed: list[str] = Field(description="Lines that left the file.")
    lines_restored: list[str] = Field(description="Lines the rollback put back.")
    diff: str = Field(description="The unified diff of the file, before -> after the rollback.")

    @staticmethod
    def resolve_changed(obj: Rollback) -> bool:
        return rollback_change(obj).changed

    @staticmethod
    def resolve_lines_removed(obj: Rollback) -> list[str]:
        return rollback_change(obj).removed

    @staticmethod
    def resolve_lines_restored(obj: Rollback) -> list[str]:
        return rollback_change(obj).restored

    @staticmethod
    def resolve_diff(obj: Rollback) -> str:
        return rollback_change(obj).diff


class RollbackPreviewIn(Schema):
    force: bool = Field(False, description="Preview the forced rollback (its own diff).")


class RollbackPreviewOut(Schema):
    """A dry run: the exact change the rollback would make now, or the conflict that stops it."""

    audit_id: str
    force: bool
    method: str = Field(description="restore | merge | forced")
    clean: bool = Field(description="False: later changes overlap this write (see `conflict`).")
    changed: bool
    lines_removed: list[str]
    lines_restored: list[str]
    diff: str
    content_hash: str = Field(description="The file previewed; pass it as `expected_hash` to apply exactly this.")
    conflict: dict[str, Any] | None = None


class AuditOut(ModelSchema):
    decision_id: str | None = None
    turn_id: str | None = None
    session_id: str | None = None
    retry_of_id: str | None = None
    before_snapshot_id: str | None = None
    after_snapshot_id: str | None = None
    diff: str | None = Field(None, description="The unified diff (in lists only with `with_diff=true`).")
    edits: list[dict[str, Any]] | None = Field(None, description="The edits the guardian asked for.")
    rollback: RollbackOut | None = None

    class Meta:
        model = WriteGuardianAudit
        fields = [
            "id",
            "source",
            "source_ref",
            "requested_by",
            "target_file",
            "candidate_fact",
            "lines_added",
            "lines_removed",
            "lines_modified",
            "status",
            "reason",
            "held_for_review",
            "llm_model",
            "llm_latency_ms",
            "agent_steps",
            "prompt_version",
            "edits",
            "created_at",
        ]

    @staticmethod
    def resolve_diff(obj: WriteGuardianAudit) -> str | None:
        return obj.__dict__.get("diff")  # A deferred (unloaded) diff stays out of lists.

    @staticmethod
    def resolve_rollback(obj: WriteGuardianAudit) -> Rollback | None:
        try:
            return obj.rollback
        except Rollback.DoesNotExist:
            return None


class AuditDetailOut(AuditOut):
    before_content: str | None = Field(None, description="The file before the write (none: it did not exist).")
    after_content: str | None = None
    retries: list[str] = Field(default_factory=list, description="Ids of the audits that retried this one.")
    corrections: list[str] = Field(default_factory=list)

    @staticmethod
    def resolve_before_content(obj: WriteGuardianAudit) -> str | None:
        return obj.before_snapshot.content if obj.before_snapshot_id else None

    @staticmethod
    def resolve_after_content(obj: WriteGuardianAudit) -> str | None:
        return obj.after_snapshot.content if obj.after_snapshot_id else None

    @staticmethod
    def resolve_retries(obj: WriteGuardianAudit) -> list[str]:
        return list(obj.retries.order_by("created_at").values_list("id", flat=True))

    @staticmethod
    def resolve_corrections(obj: WriteGuardianAudit) -> list[str]:
        return list(obj.corrections.order_by("corrected_at").values_list("id", flat=True))


class AuditFilter(Schema):
    session: str | None = Field(None, description="Session id.")
    file: str | None = Field(
        None, description="A memory file of the workspace profile (GET /guardian/files lists them), or a bank page."
    )
    status: Literal["written", "refused", "failed", "skipped", "rolled_back"] | None = None
    since: TimestampParam | None = Field(None, description="Epoch milliseconds or ISO 8601.")
    until: TimestampParam | None = None
    with_diff: bool = False


class RollbackIn(Schema):
    reason: str = Field(..., min_length=1, max_length=2000, pattern=NOT_BLANK, description="Why; not only spaces.")
    requested_by: str | None = Field(None, max_length=255, description="Defaults to the API key's name.")
    force: bool = Field(False, description="Overwrite later changes that overlap (after a 409).")
    expected_hash: str | None = Field(
        None, max_length=64, description="A preview's `content_hash`: 409 `rollback_stale` if the file changed since."
    )


class SessionRollbackIn(Schema):
    reason: str = Field(..., min_length=1, max_length=2000, pattern=NOT_BLANK, description="Why; not only spaces.")
    requested_by: str | None = Field(None, max_length=255)
    since: Timestamp | None = None
    until: Timestamp | None = None
    dry_run: bool = False
    partial: bool = Field(False, description="Apply the clean rollbacks and report the conflicting ones.")


class SessionRollbackItemOut(Schema):
    audit_id: str
    target_file: str
    candidate_fact: str
    status: Literal["clean", "conflict", "rolled_back"]
    message: str
    rollback_id: str | None = None
    later_audits: list[str] | None = None
    hand_edits: list[str] | None = None
    changed: bool = Field(False, description="Whether this item changes (or, applied, changed) its file.")
    lines_removed: list[str] = Field(default_factory=list, description="Measured by diffing the file.")
    lines_restored: list[str] = Field(default_factory=list)


class SessionRollbackOut(Schema):
    session_id: str
    dry_run: bool
    partial: bool
    applied: bool
    planned: int
    rolled_back: int
    conflicts: int
    changed: bool = Field(description="Whether any file changed (a dry run: would change).")
    summary: str = Field(description="One line for people, from the measured changes.")
    items: list[SessionRollbackItemOut]


class RetryIn(Schema):
    candidate_fact: str | None = Field(None, max_length=10_000)
    target_file: str | None = Field(None, max_length=32)
    requested_by: str | None = Field(None, max_length=255)


# The memory files of this deployment's workspace profile, as the schema's enum: a correction names one of them.
ProfileFileName = Literal[memory_files.active().files]  # type: ignore[valid-type]


class CorrectionIn(Schema):
    status: Literal["written", "refused"]
    candidate_fact: str | None = Field(None, max_length=10_000)
    target_file: ProfileFileName | None = None
    reason: str = Field(..., min_length=1, max_length=2000, pattern=NOT_BLANK, description="Why; not only spaces.")
    apply_to_future: bool = False
    correction_pattern: str | None = Field(None, max_length=500, description="Derived from the fact when omitted.")
    corrected_by: str | None = Field(None, max_length=255, description="Defaults to the API key's name.")
    about: str | None = Field(
        None,
        max_length=255,
        pattern=NOT_BLANK,
        description="Re-attribute the fact: a person's name (MEMORY.md, the person named) or 'owner' (USER.md).",
    )


class CorrectionOut(ModelSchema):
    audit_id: str

    class Meta:
        model = BehaviorCorrection
        fields = [
            "id",
            "original_status",
            "original_candidate_fact",
            "original_target_file",
            "corrected_status",
            "corrected_candidate_fact",
            "corrected_target_file",
            "correction_reason",
            "apply_to_future",
            "correction_pattern",
            "active",
            "corrected_by",
            "corrected_at",
        ]


class ProfileFileOut(Schema):
    file_name: str
    path: str = Field(description="Where it lives, relative to the workspace.")
    decision: str | None = Field(None, description="The gate decision written to it.")
    section: str | None = Field(None, description="The one heading Reflection writes under (AGENTS.md: Tools).")
    exists: bool
    chars: int = Field(description="Its length as the agent counts it (UTF-16 code units, trailing space trimmed).")
    max_chars: int | None = Field(None, description="The most the agent loads of it; writes past it are refused.")
    written_by_agent: bool = Field(description="The agent writes it too: a change not made by Reflection is its.")
    unsafe: str = Field("", description="What its path holds when that is not a regular file.")


class ProfileOut(Schema):
    profile: str = Field(description="WORKSPACE_PROFILE: seed or openclaw.")
    files: list[ProfileFileOut]


class FileOut(Schema):
    file_name: str
    exists: bool
    content: str
    content_hash: str | None
    size: int
    known_hash: str | None = Field(None, description="Hash of the last version Reflection recorded.")
    changed_by_hand: bool = Field(description="The file differs from the last recorded version.")


class VersionOut(ModelSchema):
    snapshot_id: str | None = None
    content_hash: str | None = None
    audit_id: str | None = None
    rollback_id: str | None = None

    class Meta:
        model = FileVersion
        fields = ["id", "file_name", "seq", "kind", "diff", "lines_added", "lines_removed", "created_at"]

    @staticmethod
    def resolve_content_hash(obj: FileVersion) -> str | None:
        return obj.snapshot.content_hash if obj.snapshot_id else None


class HistoryFilter(Schema):
    kind: Literal["initial", "write", "rollback", "hand_edit", "agent_edit"] | None = None
    since: TimestampParam | None = None
    until: TimestampParam | None = None
