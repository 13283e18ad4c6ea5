"""REQ-001/002: sessions, conversation turns, their context windows, and the memory gate's decisions."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from reflection_site import memory_files
from reflection_site.ids import new_ulid


class Decision(models.TextChoices):
    NO_WRITE = "NO_WRITE"
    UPDATE_MEMORY = "UPDATE_MEMORY"
    UPDATE_USER = "UPDATE_USER"
    UPDATE_SOUL = "UPDATE_SOUL"
    UPDATE_IDENTITY = "UPDATE_IDENTITY"
    UPDATE_TOOLS = "UPDATE_TOOLS"


# DESIGN §3: each UPDATE_* decision names exactly one of the five memory files (the seed's vocabulary, kept in
# datasets); the file it is written to is the workspace profile's, memory_files.active().file_for_decision.
FILE_FOR_DECISION: dict[str, str] = dict(memory_files.SEED_FILE_FOR_DECISION)
# Any profile's file back to its decision (TOOLS.md and AGENTS.md are both UPDATE_TOOLS).
DECISION_FOR_FILE: dict[str, str] = dict(memory_files.DECISION_FOR_FILE)


class ConversationSession(models.Model):
    """A conversation (the seed's ``sessions`` table); named so it is not mistaken for Django's sessions."""

    id = models.CharField(primary_key=True, max_length=255, help_text="The agent's session key, e.g. channel:xxx:yyy")
    channel_id = models.CharField(max_length=255)
    conversation_target = models.CharField(max_length=255, null=True, blank=True)
    account_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_activity_at = models.DateTimeField(default=timezone.now)
    metadata = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "sessions"
        verbose_name = "conversation session"
        indexes = [
            models.Index(fields=["channel_id"], name="sessions_channel"),
            models.Index(fields=["last_activity_at"], name="sessions_last_activity"),
            # Serves sessions_app.queries.list_sessions(channel=…), newest activity first.
            models.Index(fields=["channel_id", "-last_activity_at"], name="sessions_channel_activity"),
        ]
        constraints = [models.CheckConstraint(condition=~Q(channel_id=""), name="sessions_channel_not_empty")]

    def __str__(self) -> str:
        return self.id


class GateStatus(models.TextChoices):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"
    DISABLED = "disabled"


class ConversationTurn(models.Model):
    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    # Served by (session, turn_number) and (session, created_at) below; no index of its own (issue 9: only the
    # indexes the queries need, each one written on every ingest).
    session = models.ForeignKey(ConversationSession, on_delete=models.CASCADE, related_name="turns", db_index=False)
    turn_number = models.PositiveIntegerField()

    user_message_id = models.CharField(max_length=255, null=True, blank=True)
    user_message_content = models.TextField()
    user_from = models.CharField(max_length=255, null=True, blank=True)
    user_metadata = models.JSONField(null=True, blank=True)

    agent_message_id = models.CharField(max_length=255, null=True, blank=True)
    agent_message_content = models.TextField()
    agent_metadata = models.JSONField(null=True, blank=True)

    created_at = models.DateTimeField(default=timezone.now)

    # Where the turn is in the pipeline, so that no turn is ever silently dropped.
    gate_status = models.CharField(max_length=16, choices=GateStatus.choices, default=GateStatus.PENDING)
    gate_run = models.PositiveIntegerField(default=1, help_text="Incremented when an operator runs the gate again.")
    gate_attempts = models.PositiveIntegerField(default=0)
    gate_last_error = models.TextField(null=True, blank=True)
    gate_enqueued_at = models.DateTimeField(null=True, blank=True)
    gate_finished_at = models.DateTimeField(null=True, blank=True)

    # The agent's thumbs up/down (the guardrails seed's traces.feedback_json).
    feedback_json = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "conversation_turns"
        indexes = [
            models.Index(fields=["created_at"], name="turns_created_at"),
            models.Index(fields=["session", "created_at"], name="turns_session_created"),
            # Serves the failed-turn count of the decision admin's changelist (issue 9): only failed rows are in it.
            models.Index(fields=["gate_status"], condition=Q(gate_status="failed"), name="turns_gate_failed"),
            # Serves sessions_app.gate.sweep_pending_turns: only pending rows are in it.
            models.Index(fields=["gate_enqueued_at"], condition=Q(gate_status="pending"), name="turns_gate_pending"),
        ]
        constraints = [
            # Also the seed's idx_session_turn (the seed declares the same columns twice, unique and not).
            models.UniqueConstraint(fields=["session", "turn_number"], name="conversation_turns_session_turn_unique"),
            models.UniqueConstraint(
                fields=["session", "user_message_id"],
                condition=Q(user_message_id__isnull=False),
                name="conversation_turns_session_message_unique",
            ),
            models.CheckConstraint(condition=Q(turn_number__gte=1), name="conversation_turns_turn_number_positive"),
            models.CheckConstraint(
                condition=Q(gate_status__in=GateStatus.values), name="conversation_turns_gate_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.session_id} #{self.turn_number}"


class ConversationContext(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        AGENT = "agent"

    id = models.BigAutoField(primary_key=True)
    turn = models.ForeignKey(  # Served by (turn, sequence_number) below.
        ConversationTurn, on_delete=models.CASCADE, related_name="context", db_index=False
    )
    role = models.CharField(max_length=8, choices=Role.choices)
    message = models.TextField()
    timestamp = models.DateTimeField()
    sequence_number = models.PositiveIntegerField()

    class Meta:
        db_table = "conversation_contexts"
        ordering = ["turn", "sequence_number"]
        constraints = [
            models.CheckConstraint(condition=Q(role__in=["user", "agent"]), name="conversation_contexts_role_valid"),
            # Also the seed's idx_turn_sequence.
            models.UniqueConstraint(fields=["turn", "sequence_number"], name="conversation_contexts_turn_sequence"),
        ]

    def __str__(self) -> str:
        return f"{self.turn_id}[{self.sequence_number}] {self.role}"


class MemoryGateDecision(models.Model):
    Decision = Decision

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    # Served by the indexes below (the seed's idx_turn, (session, created_at)).
    turn = models.ForeignKey(ConversationTurn, on_delete=models.CASCADE, related_name="decisions", db_index=False)
    session = models.ForeignKey(ConversationSession, on_delete=models.CASCADE, related_name="decisions", db_index=False)
    run_number = models.PositiveIntegerField(
        default=1, help_text="Which run of the gate on this turn (re-runs count up)."
    )

    decision = models.CharField(max_length=16, choices=Decision.choices)
    reason = models.TextField()
    candidate_fact = models.TextField(null=True, blank=True)
    confidence = models.FloatField(null=True, blank=True, help_text="The gate's own confidence in [0, 1], if given.")

    llm_model = models.CharField(max_length=255)
    llm_latency_ms = models.IntegerField(null=True, blank=True)
    prompt_tokens = models.IntegerField(null=True, blank=True)
    completion_tokens = models.IntegerField(null=True, blank=True)
    raw_response = models.TextField(null=True, blank=True)
    prompt_version = models.CharField(max_length=32, blank=True, default="")

    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "memory_gate_decisions"
        indexes = [
            models.Index(fields=["session", "created_at"], name="gate_decisions_session_time"),
            models.Index(fields=["decision"], name="gate_decisions_decision"),
            models.Index(fields=["turn"], name="gate_decisions_turn"),
            models.Index(fields=["created_at"], name="gate_decisions_created"),
            # Serves sessions_app.queries.latency_by_decision (issue 9): one range a type, read from the index.
            models.Index(fields=["decision", "created_at", "llm_latency_ms"], name="gate_decisions_decision_time"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(decision__in=Decision.values), name="memory_gate_decisions_decision_valid"
            ),
            models.CheckConstraint(
                condition=Q(decision="NO_WRITE") | (Q(candidate_fact__isnull=False) & ~Q(candidate_fact="")),
                name="memory_gate_decisions_fact_required",
            ),
            # A redelivered gate task finds its run already decided.
            models.UniqueConstraint(fields=["turn", "run_number"], name="memory_gate_decisions_turn_run_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.decision} for {self.turn_id}"

    @property
    def target_file(self) -> str | None:
        """The file this decision is written to in the workspace profile."""
        return memory_files.active().file_for_decision.get(self.decision)

    def also_facts(self) -> list[tuple[str, str]]:
        """The facts for other files the gate gave beside this decision's (its reply's ``also``, issue 21): a fact
        about someone else said in the same sentence, as ``(decision, fact)``, at most two; never a file name, and
        nothing for a ``NO_WRITE`` or a reply without a well-formed ``also``."""
        if self.decision == Decision.NO_WRITE or not self.raw_response or '"also"' not in self.raw_response:
            return []
        from reflection_site.llm import parse_json_object  # The LLM's reply as the gate read it: fenced, in prose.

        try:
            extra = parse_json_object(self.raw_response).get("also")
        except ValueError:
            return []
        facts = []
        for item in extra if isinstance(extra, list) else []:
            decision = str(item.get("decision", "")).strip().upper() if isinstance(item, dict) else ""
            fact = item.get("candidate_fact") if isinstance(item, dict) else None
            if decision in Decision.values and decision != Decision.NO_WRITE and isinstance(fact, str) and fact.strip():
                facts.append((decision, fact.strip()))
        return facts[:2]


class MemoryGateStats(models.Model):
    """One row a day, rolled up from decisions by the hourly beat task (today is computed live)."""

    date = models.DateField(primary_key=True)
    session_count = models.IntegerField(default=0)
    total_decisions = models.IntegerField(default=0)
    no_write_count = models.IntegerField(default=0)
    update_memory_count = models.IntegerField(default=0)
    update_user_count = models.IntegerField(default=0)
    update_soul_count = models.IntegerField(default=0)
    update_identity_count = models.IntegerField(default=0)
    update_tools_count = models.IntegerField(default=0)
    avg_latency_ms = models.IntegerField(null=True, blank=True)
    # On a Sunday, the distinct sessions with a decision in the ISO week that ends that day (the days'
    # session counts do not add up to the week's); empty on other days.
    week_session_count = models.IntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "memory_gate_stats"
        verbose_name_plural = "memory gate stats"
        ordering = ["-date"]

    def __str__(self) -> str:
        return str(self.date)


class WorkspaceOwner(models.Model):
    """A sender id that belongs to the workspace's owner, the person USER.md describes (issue 21).

    ``settings.WORKSPACE_OWNER_IDS`` wins when set; else these rows, which start with the first sender seen
    and are changed in the admin. A sender id is a turn's ``user_message.from`` or ``<channel_id>:<from>``.
    """

    class Source(models.TextChoices):
        FIRST_SENDER = "first_sender", "first sender seen"
        ADMIN = "admin", "set in the admin"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    sender_id = models.CharField(max_length=255, unique=True, help_text="user_message.from, or <channel_id>:<from>")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.ADMIN)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "workspace_owners"
        verbose_name = "workspace owner id"
        constraints = [
            models.CheckConstraint(condition=~Q(sender_id=""), name="workspace_owners_sender_not_empty"),
            models.CheckConstraint(
                condition=Q(source__in=["first_sender", "admin"]), name="workspace_owners_source_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.sender_id


__all__ = [
    "ConversationContext",
    "ConversationSession",
    "ConversationTurn",
    "DECISION_FOR_FILE",
    "Decision",
    "FILE_FOR_DECISION",
    "GateStatus",
    "MemoryGateDecision",
    "MemoryGateStats",
    "WorkspaceOwner",
]
