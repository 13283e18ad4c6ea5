"""Seed 003: the recall index (meta, files, chunks) and the embedding cache."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone


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
