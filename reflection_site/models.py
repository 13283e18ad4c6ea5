"""API keys: shown once, stored as a SHA-256 hash, each with scopes."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from django.db import connection, models
from django.db.models import Q
from django.utils import timezone

from reflection_site.ids import new_ulid


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True)

    def active_with_prefix(self, prefix: str) -> ApiKey | None:
        """``active().filter(prefix=prefix).first()`` as one written statement, its values converted as the ORM
        converts them: every API request asks, and this takes 0.03 ms where the ORM compiling the query took 0.35
        (and a raw queryset 0.07)."""
        fields = self.model._meta.concrete_fields
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in fields)
        sql = f"SELECT {columns} FROM {quote(self.model._meta.db_table)} WHERE {quote('prefix')} = %s"
        with connection.cursor() as cursor:
            cursor.execute(f"{sql} AND {quote('revoked_at')} IS NULL", [prefix])
            row = cursor.fetchone()
        if row is None:
            return None
        values = []
        for field, value in zip(fields, row, strict=True):
            col = field.cached_col
            for convert in [*connection.ops.get_db_converters(col), *col.get_db_converters(connection)]:
                value = convert(value, col, connection)
            values.append(value)
        return self.model.from_db(connection.alias, [f.attname for f in fields], values)


class ApiKey(models.Model):
    class Scope(models.TextChoices):
        INGEST = "ingest", "ingest turns"
        READ = "read", "read everything"
        OPERATE = "operate", "roll back, retry, run jobs"
        ANNOTATE = "annotate", "review dataset samples"

    LAST_USED_RESOLUTION = dt.timedelta(minutes=1)  # ``last_used_at`` is written at most once a minute

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    name = models.CharField(max_length=100, unique=True)
    prefix = models.CharField(max_length=12, unique=True, help_text="The key's visible start, used to find it.")
    key_hash = models.CharField(max_length=64, help_text="SHA-256 of the whole key; the key itself is never stored.")
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)  # to the minute: LAST_USED_RESOLUTION
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        db_table = "api_keys"
        verbose_name = "API key"
        constraints = [models.CheckConstraint(condition=~Q(name=""), name="api_keys_name_not_empty")]

    def __str__(self) -> str:
        return self.name

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @staticmethod
    def hash_key(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()

    @classmethod
    def generate(cls, name: str, scopes: list[str]) -> tuple[ApiKey, str]:
        """Create a key; returns the row and the raw key, which is shown once and never again."""
        prefix = secrets.token_hex(4)
        raw = f"rk_{prefix}_{secrets.token_urlsafe(32)}"
        key = cls.objects.create(name=name, prefix=prefix, key_hash=cls.hash_key(raw), scopes=sorted(set(scopes)))
        return key, raw

    @classmethod
    def prefix_of(cls, raw: str) -> str | None:
        parts = raw.split("_", 2)
        if len(parts) != 3 or parts[0] != "rk":
            return None
        return parts[1]


class JobCheckpoint(models.Model):
    """Seed 004 P2-002: where a long job is (stage, candidates, processed index), so a killed one resumes.

    A process holds the checkpoint while it works (``owner`` and ``lease_until``, renewed at every save);
    another may take it over once the lease has expired or the owner's process is gone.
    """

    class Job(models.TextChoices):
        REFLECT = "reflect"
        OPENCLAW_IMPORT = "openclaw_import", "OpenClaw transcript import"

    id = models.CharField(primary_key=True, max_length=26, default=new_ulid, editable=False)
    job = models.CharField(max_length=32, choices=Job.choices)
    key = models.CharField(max_length=255, help_text="The job's own id: a reflect run, a hash of the import folder.")
    params = models.JSONField(default=dict, blank=True, help_text="What the job needs to resume.")
    stage = models.CharField(max_length=32, blank=True, default="")
    candidates = models.JSONField(default=list, blank=True)
    processed_index = models.IntegerField(default=0)
    state = models.JSONField(default=dict, blank=True)
    owner = models.CharField(max_length=255, blank=True, default="", help_text="host:pid:token of the holder")
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.IntegerField(default=0, help_text="Times the job was started or resumed.")
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "job_checkpoints"
        indexes = [
            # Serves reflection_site.checkpoints.incomplete (worker start, the resume sweep).
            models.Index(fields=["finished_at", "job"], name="job_checkpoints_open"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["job", "key"], name="job_checkpoints_job_key_unique"),
            models.CheckConstraint(
                condition=Q(job__in=["reflect", "openclaw_import"]), name="job_checkpoints_job_valid"
            ),
            models.CheckConstraint(condition=Q(processed_index__gte=0), name="job_checkpoints_index_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.job} {self.key} at {self.stage or 'start'}[{self.processed_index}]"

    @property
    def is_finished(self) -> bool:
        return self.finished_at is not None
