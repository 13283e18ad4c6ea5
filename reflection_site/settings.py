"""Reflection settings: one module, every value from the environment (django-environ).

Each seed configuration key has an environment name; the README's table lists them all with defaults.
Code reads ``settings.NAME``; ``env(...)`` appears in this module only.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

import environ
from csp import constants as csp_constants

from reflection_site.startup import (
    filesystem_broker_options,
    inline_style_hashes,
    prepare_data_dir,
    prepare_sqlite_file,
    secret_key,
    sqlite_options,
    use_one_sqlite_library,
    use_the_running_instance,
)

SQLITE_VERSION = use_one_sqlite_library()  # Before Django's SQLite backend imports sqlite3 (startup.py says why).

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").is_file():
    environ.Env.read_env(BASE_DIR / ".env")

if "WORKSPACE_DIR" not in os.environ and Path(sys.argv[0]).name == "manage.py":
    use_the_running_instance(BASE_DIR / "var" / "run.env")  # issue 16

# --- Workspace and data dir (seed: <workspaceDir>/.openclaw-reflection/) --------------------------
# workspaceDir
WORKSPACE_DIR = Path(env.str("WORKSPACE_DIR", default=str(BASE_DIR / "var" / "workspace"))).resolve()
# The sender ids of the person USER.md describes; empty: the first sender seen, changeable in the admin (issue 21).
WORKSPACE_OWNER_IDS = env.list("WORKSPACE_OWNER_IDS", default=[])
# storage.sqlite.dbPath lives here, beside exports/.
DATA_DIR = WORKSPACE_DIR / ".openclaw-reflection"
prepare_data_dir(DATA_DIR)  # 0700 and a .gitignore of *: never readable by others, never committed
# Which files the agent reads, "openclaw" or "seed" (reflection_site/memory_files.py; README, Workspace profiles).
WORKSPACE_PROFILE = env.str("WORKSPACE_PROFILE", default="openclaw")
if WORKSPACE_PROFILE not in ("seed", "openclaw"):
    raise environ.ImproperlyConfigured(f"WORKSPACE_PROFILE must be seed or openclaw, not {WORKSPACE_PROFILE!r}")
# OpenClaw's agents.defaults.bootstrapMaxChars: what it loads of each bootstrap file (USER.md: 4,000 at most).
OPENCLAW_BOOTSTRAP_MAX_CHARS = env.int("OPENCLAW_BOOTSTRAP_MAX_CHARS", default=20_000)

# Generated once and kept in the data dir (mode 600), never a constant in the repository.
SECRET_KEY = env.str("SECRET_KEY", default="") or secret_key(DATA_DIR / "secret_key")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
PORT = env.int("PORT", default=8000)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_celery_beat",
    "import_export",
    "ninja",  # its bundled Swagger UI, served from our origin (no CDN: the CSP allows 'self' only)
    "axes",
    "reflection_site",
    "sessions_app",
    "guardian_app",
    "dataset_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "reflection_site.middleware.RequestSizeLimitMiddleware",
    "reflection_site.middleware.NulCharacterMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "reflection_site.urls"
WSGI_APPLICATION = "reflection_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "reflection_site" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ------------------------------------------------------------------------------------
# storage.sqlite.* : the seed's PRAGMAs. synchronous=FULL by default: an acknowledged turn survives
# a power cut (NORMAL trades that for speed).
SQLITE_WAL_MODE = env.bool("SQLITE_WAL_MODE", default=True)  # storage.sqlite.walMode
SQLITE_AUTO_VACUUM = env.bool("SQLITE_AUTO_VACUUM", default=True)  # storage.sqlite.autoVacuum
SQLITE_BUSY_TIMEOUT_MS = env.int("SQLITE_BUSY_TIMEOUT_MS", default=5000)  # storage.sqlite.busyTimeoutMs
SQLITE_CACHE_SIZE_PAGES = env.int("SQLITE_CACHE_SIZE_PAGES", default=-2000)  # storage.sqlite.cacheSizePages
SQLITE_MMAP_SIZE_MB = env.int("SQLITE_MMAP_SIZE_MB", default=256)  # storage.sqlite.mmapSizeMB
SQLITE_SYNCHRONOUS = env.str("SQLITE_SYNCHRONOUS", default="FULL").upper()
if SQLITE_SYNCHRONOUS not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
    raise environ.ImproperlyConfigured("SQLITE_SYNCHRONOUS must be OFF, NORMAL, FULL or EXTRA")

SQLITE_PATH = DATA_DIR / "reflection.db"  # storage.sqlite.dbPath
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{SQLITE_PATH}")}
DATABASE_IS_SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
if DATABASE_IS_SQLITE:
    prepare_sqlite_file(Path(DATABASES["default"]["NAME"]))  # 0600, and its -wal and -shm files too
    DATABASES["default"]["OPTIONS"] = sqlite_options(
        auto_vacuum=SQLITE_AUTO_VACUUM,
        wal_mode=SQLITE_WAL_MODE,
        synchronous=SQLITE_SYNCHRONOUS,
        busy_timeout_ms=SQLITE_BUSY_TIMEOUT_MS,
        cache_size_pages=SQLITE_CACHE_SIZE_PAGES,
        mmap_size_mb=SQLITE_MMAP_SIZE_MB,
    )
# Opening a connection per request costs 2.7x in ingest throughput: keep them.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=None)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = not DATABASE_IS_SQLITE
DATABASES["default"].setdefault("TEST", {})
if not DATABASE_IS_SQLITE:
    DATABASES["default"]["TEST"]["NAME"] = env.str("TEST_DATABASE_NAME", default="") or None

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache and broker ----------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    # A cache that every local process (web workers, the Celery worker) shares, with no server.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(DATA_DIR / "cache"),
        }
    }

CELERY_BROKER_URL = REDIS_URL or "filesystem://"
BROKER_DIR = DATA_DIR / "broker"
if not REDIS_URL:
    # The embedded broker's folders under the data dir (reflection_site/broker.py).
    CELERY_BROKER_TRANSPORT_OPTIONS = filesystem_broker_options(
        BROKER_DIR,
        fsync=env.bool("CELERY_BROKER_FSYNC", default=True),
        polling_interval=env.float("CELERY_BROKER_POLLING_INTERVAL_S", default=0.02),
        busy_polling_interval=env.float("CELERY_BROKER_BUSY_POLLING_INTERVAL_S", default=0.002),
    )
    # The kombu transport class of the embedded broker; benchmarks/broker.py sets the one of before issue 16.
    CELERY_BROKER_TRANSPORT = env.str("CELERY_BROKER_TRANSPORT", default="reflection_site.broker:FilesystemTransport")
else:
    # Before Redis hands a dead worker's message (acks_late) to another: longer than any task runs.
    CELERY_BROKER_VISIBILITY_TIMEOUT_S = env.int("CELERY_BROKER_VISIBILITY_TIMEOUT_S", default=3600)
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_BROKER_VISIBILITY_TIMEOUT_S}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# 0: a worker (and beat) reconnects until the broker is back. Publishing does not retry: the sweeps re-enqueue.
CELERY_BROKER_CONNECTION_MAX_RETRIES = env.int("CELERY_BROKER_CONNECTION_MAX_RETRIES", default=0) or None
CELERY_TASK_PUBLISH_RETRY = False
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Messages the worker takes ahead per pool process, the one it runs included. The embedded broker is polled: with one,
# the next task was taken only after the last was acknowledged and the queue folder looked at again (3.7 ms between
# two tasks, a quarter of a pool process's time); with two, the next waits in the pool. A killed worker's taken
# messages are sent again by the sweeps, as its running ones are (BENCHMARKS.md, issue 21, session 15).
CELERY_WORKER_PREFETCH_MULTIPLIER = env.int("CELERY_WORKER_PREFETCH_MULTIPLIER", default=1 if REDIS_URL else 2)
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "guardian_app.tasks.run_guardian": {"queue": "guardian"},
    "guardian_app.tasks.run_guard_write": {"queue": "guardian"},
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery closes the database connections around every task unless this is set (0); here every N tasks, and
# reflection_site/celery.py drops a broken or CONN_MAX_AGE-old one before each task, as Django does per request.
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=1000) or None
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = env.str("TIME_ZONE", default="UTC")
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
# A worker's heartbeat in the cache (reflection_site.celery.Heartbeat); /healthz says "degraded" when it is stale.
WORKER_HEARTBEAT_S = env.float("WORKER_HEARTBEAT_S", default=5)
WORKER_STALE_S = env.float("WORKER_STALE_S", default=30)

# llm.baseURL / llm.apiKey / llm.model. Unset LLM_BASE_URL = the offline heuristic gate and guardian.
LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
LLM_MODEL = env.str("LLM_MODEL", default="x-ai/grok-4.1-fast")
LLM_TIMEOUT_S = env.float("LLM_TIMEOUT_S", default=60)
LLM_MAX_RETRIES = env.int("LLM_MAX_RETRIES", default=3)
# Seconds before the first in-call retry of an LLM request (then doubled each time, at most 30 s).
LLM_RETRY_BACKOFF_S = env.float("LLM_RETRY_BACKOFF_S", default=1.0)
# Ask for response_format=json_object (a server that rejects it is asked again without it).
LLM_JSON_MODE = env.bool("LLM_JSON_MODE", default=True)
# LLM_TIMEOUT_S < soft limit < hard limit, so a slow LLM ends as a retryable error, not a killed task.
CELERY_TASK_SOFT_TIME_LIMIT = env.int(
    "CELERY_TASK_SOFT_TIME_LIMIT", default=int(LLM_TIMEOUT_S * (LLM_MAX_RETRIES + 1) + 60)
)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=CELERY_TASK_SOFT_TIME_LIMIT + 60)

# --- API -----------------------------------------------------------------------------------------
MAX_REQUEST_BYTES = env.int("MAX_REQUEST_BYTES", default=10 * 1024 * 1024)
MAX_MESSAGE_CHARS = env.int("MAX_MESSAGE_CHARS", default=100_000)
MAX_CONTEXT_ITEMS = env.int("MAX_CONTEXT_ITEMS", default=200)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BYTES
API_PAGE_SIZE = env.int("API_PAGE_SIZE", default=50)
API_MAX_PAGE_SIZE = env.int("API_MAX_PAGE_SIZE", default=500)

# --- Seed configuration (000 "完整配置示例") ------------------------------------------------------
RETENTION_DAYS = env.int("RETENTION_DAYS", default=365)  # storage.retentionDays
JSONL_EXPORT_ENABLED = env.bool("JSONL_EXPORT_ENABLED", default=True)  # storage.jsonlExport.enabled
JSONL_EXPORT_SCHEDULE = env.str("JSONL_EXPORT_SCHEDULE", default="0 0 * * *")  # storage.jsonlExport.schedule
JSONL_EXPORT_RETENTION_DAYS = env.int("JSONL_EXPORT_RETENTION_DAYS", default=30)  # storage.jsonlExport.retentionDays
# The nightly conversation export redacts PII and secrets from the turns' text unless this is set (logged).
JSONL_EXPORT_INCLUDE_PII = env.bool("JSONL_EXPORT_INCLUDE_PII", default=False)

MEMORY_GATE_ENABLED = env.bool("MEMORY_GATE_ENABLED", default=True)  # memoryGate.enabled
MEMORY_GATE_WINDOW_SIZE = env.int("MEMORY_GATE_WINDOW_SIZE", default=10)  # memoryGate.windowSize
MEMORY_GATE_AUDITING_ENABLED = env.bool("MEMORY_GATE_AUDITING_ENABLED", default=True)  # memoryGateAuditing.enabled
# memoryGateAuditing.storeRawLLMResponse
MEMORY_GATE_STORE_RAW_LLM_RESPONSE = env.bool("MEMORY_GATE_STORE_RAW_LLM_RESPONSE", default=True)
MEMORY_GATE_ENABLE_STATS = env.bool("MEMORY_GATE_ENABLE_STATS", default=True)  # memoryGateAuditing.enableStats
# Seconds a turn may wait for its gate before the sweep re-enqueues it.
GATE_SWEEP_GRACE_S = env.int("GATE_SWEEP_GRACE_S", default=120)
# /healthz says "degraded" while a turn has been pending longer: the sweep should have sent it again by then.
PENDING_TURN_STALE_S = env.int("PENDING_TURN_STALE_S", default=GATE_SWEEP_GRACE_S + 120)
# After the LLM client's own retries, the gate task retries this many times, waiting up to
# GATE_TASK_RETRY_BACKOFF_S × 2^n seconds (random jitter, at most 600 s) before the turn is marked failed.
GATE_TASK_MAX_RETRIES = env.int("GATE_TASK_MAX_RETRIES", default=5)
GATE_TASK_RETRY_BACKOFF_S = env.int("GATE_TASK_RETRY_BACKOFF_S", default=5)

# writeGuardianAuditing.enabled
WRITE_GUARDIAN_AUDITING_ENABLED = env.bool("WRITE_GUARDIAN_AUDITING_ENABLED", default=True)
# writeGuardianAuditing.storeFileSnapshots
WRITE_GUARDIAN_STORE_FILE_SNAPSHOTS = env.bool("WRITE_GUARDIAN_STORE_FILE_SNAPSHOTS", default=True)
# writeGuardianAuditing.enableRollback
WRITE_GUARDIAN_ENABLE_ROLLBACK = env.bool("WRITE_GUARDIAN_ENABLE_ROLLBACK", default=True)
# writeGuardianAuditing.maxSnapshotsPerFile
WRITE_GUARDIAN_MAX_SNAPSHOTS_PER_FILE = env.int("WRITE_GUARDIAN_MAX_SNAPSHOTS_PER_FILE", default=100)
GUARDIAN_MAX_REMOVED_LINES = env.int("GUARDIAN_MAX_REMOVED_LINES", default=5)
GUARDIAN_SWEEP_GRACE_S = env.int("GUARDIAN_SWEEP_GRACE_S", default=120)
# Seconds a guardian write, rollback or drift check waits for a memory file's lock before giving up (and retrying).
GUARDIAN_LOCK_TIMEOUT_S = env.float("GUARDIAN_LOCK_TIMEOUT_S", default=30)
# LLM calls one write may make when the file changes while the guardian is thinking.
GUARDIAN_MAX_LLM_STEPS = env.int("GUARDIAN_MAX_LLM_STEPS", default=3)
# The offline guardian's near-duplicate threshold (word-set similarity of a fact and an existing bullet).
GUARDIAN_NEAR_DUPLICATE_THRESHOLD = env.float("GUARDIAN_NEAR_DUPLICATE_THRESHOLD", default=0.8)
# The offline guardian's paraphrase threshold (WordLlama cosine; QUALITY.md); above 1 switches it off.
GUARDIAN_PARAPHRASE_THRESHOLD = env.float("GUARDIAN_PARAPHRASE_THRESHOLD", default=0.886)
GUARDIAN_MAX_FACT_CHARS = env.int("GUARDIAN_MAX_FACT_CHARS", default=2000)

DATASET_COLLECTION_ENABLED = env.bool("DATASET_COLLECTION_ENABLED", default=True)  # datasetCollection.enabled
DATASET_AUTO_COLLECT = env.bool("DATASET_AUTO_COLLECT", default=True)  # datasetCollection.autoCollect
DATASET_POSITIVE_WAS_WRITTEN = env.bool("DATASET_POSITIVE_WAS_WRITTEN", default=True)  # positiveCriteria.wasWritten
# positiveCriteria.noUserObjection
DATASET_POSITIVE_NO_USER_OBJECTION = env.bool("DATASET_POSITIVE_NO_USER_OBJECTION", default=True)
# positiveCriteria.notRolledBackWithinDays
DATASET_NOT_ROLLED_BACK_WITHIN_DAYS = env.int("DATASET_NOT_ROLLED_BACK_WITHIN_DAYS", default=7)
DATASET_MIN_QUALITY_SCORE = env.float("DATASET_MIN_QUALITY_SCORE", default=0.7)  # positiveCriteria.minQualityScore
# negativeCriteria.gateProposedWrite
DATASET_NEGATIVE_GATE_PROPOSED_WRITE = env.bool("DATASET_NEGATIVE_GATE_PROPOSED_WRITE", default=True)
# negativeCriteria.guardianRefused
DATASET_NEGATIVE_GUARDIAN_REFUSED = env.bool("DATASET_NEGATIVE_GUARDIAN_REFUSED", default=True)
# negativeCriteria.hasBehaviorCorrection
DATASET_NEGATIVE_HAS_BEHAVIOR_CORRECTION = env.bool("DATASET_NEGATIVE_HAS_BEHAVIOR_CORRECTION", default=True)
# privacyFiltering.enabled
DATASET_PRIVACY_FILTERING_ENABLED = env.bool("DATASET_PRIVACY_FILTERING_ENABLED", default=True)
DATASET_REDACT_PATTERNS = env.list(  # privacyFiltering.redactPatterns
    "DATASET_REDACT_PATTERNS", default=["api[_-]?key", "password", "token", "secret", "-----BEGIN.*-----"]
)
DATASET_QUALITY_SCORING_ENABLED = env.bool("DATASET_QUALITY_SCORING_ENABLED", default=True)  # qualityScoring.enabled
# weights.conversationClarity
DATASET_WEIGHT_CONVERSATION_CLARITY = env.float("DATASET_WEIGHT_CONVERSATION_CLARITY", default=0.4)
# weights.decisionConfidence
DATASET_WEIGHT_DECISION_CONFIDENCE = env.float("DATASET_WEIGHT_DECISION_CONFIDENCE", default=0.35)
# weights.factVerifiability
DATASET_WEIGHT_FACT_VERIFIABILITY = env.float("DATASET_WEIGHT_FACT_VERIFIABILITY", default=0.25)
DATASET_TRAIN_SPLIT = env.float("DATASET_TRAIN_SPLIT", default=0.8)
# manualReviewCriteria: lowConfidence, containsSensitiveInfo, userFeedbackReceived, mediumQualityScore
DATASET_REVIEW_LOW_CONFIDENCE = env.bool("DATASET_REVIEW_LOW_CONFIDENCE", default=True)
DATASET_REVIEW_SENSITIVE_INFO = env.bool("DATASET_REVIEW_SENSITIVE_INFO", default=True)
DATASET_REVIEW_USER_FEEDBACK = env.bool("DATASET_REVIEW_USER_FEEDBACK", default=True)
DATASET_REVIEW_MEDIUM_QUALITY = env.bool("DATASET_REVIEW_MEDIUM_QUALITY", default=True)
# autoApproveCriteria: hasConfirmedCorrection, highQualityScore, matchesApprovedPattern
DATASET_AUTO_APPROVE_CONFIRMED_CORRECTION = env.bool("DATASET_AUTO_APPROVE_CONFIRMED_CORRECTION", default=True)
DATASET_AUTO_APPROVE_HIGH_QUALITY = env.bool("DATASET_AUTO_APPROVE_HIGH_QUALITY", default=True)
DATASET_AUTO_APPROVE_MATCHES_PATTERN = env.bool("DATASET_AUTO_APPROVE_MATCHES_PATTERN", default=True)
DATASET_LOW_CONFIDENCE = env.float("DATASET_LOW_CONFIDENCE", default=0.5)  # below: lowConfidence
DATASET_MEDIUM_QUALITY_SCORE = env.float("DATASET_MEDIUM_QUALITY_SCORE", default=0.5)  # from here: mediumQualityScore
DATASET_HIGH_QUALITY_SCORE = env.float("DATASET_HIGH_QUALITY_SCORE", default=0.85)  # from here: highQualityScore
DATASET_AUTO_APPROVE = env.bool("DATASET_AUTO_APPROVE", default=False)  # the hourly collect applies --auto-approve
DATASET_EXPORT_DIR = env.str("DATASET_EXPORT_DIR", default="")  # empty: <data dir>/exports
DATASET_EXPORT_SWEEP_GRACE_S = env.int("DATASET_EXPORT_SWEEP_GRACE_S", default=600)

# --- Learning guardrails (seed 002 §4.1; its names and defaults) ----------------------------------
LEARNING_GUARDRAILS_ENABLED = env.bool("LEARNING_GUARDRAILS_ENABLED", default=True)
LEARNING_FEEDBACK_TOKEN = env.str("LEARNING_FEEDBACK_TOKEN", default="")
LEARNING_RATE_LIMIT_PER_MIN = env.int("LEARNING_RATE_LIMIT_PER_MIN", default=20)
# Beside the per-user limit (user_id is the client's word): feedback requests a minute from one client address.
LEARNING_RATE_LIMIT_PER_CLIENT_PER_MIN = env.int("LEARNING_RATE_LIMIT_PER_CLIENT_PER_MIN", default=120)
# Wrong X-Learning-Token values a minute from one client address; then 429 until the minute ends.
LEARNING_TOKEN_FAILURES_PER_MIN = env.int("LEARNING_TOKEN_FAILURES_PER_MIN", default=10)
LEARNING_MIN_MEM_SCORE = env.float("LEARNING_MIN_MEM_SCORE", default=0.60)
LEARNING_MEM_MAX_PER_PROJECT = env.int("LEARNING_MEM_MAX_PER_PROJECT", default=500)
LEARNING_RULE_MAX_PER_PROJECT = env.int("LEARNING_RULE_MAX_PER_PROJECT", default=300)
LEARNING_DECAY_HALF_LIFE_DAYS = env.float("LEARNING_DECAY_HALF_LIFE_DAYS", default=30)
LEARNING_SHADOW_MODE = env.bool("LEARNING_SHADOW_MODE", default=True)
# Seed 004 P1-001 decay.activeWeight: decayed value × (1 + weight · ln(1 + hit_count)).
LEARNING_DECAY_ACTIVE_WEIGHT = env.float("LEARNING_DECAY_ACTIVE_WEIGHT", default=0.1)
# Memory items not hit for this long expire and rules are archived (seed 002 §4.5 "长期未命中").
LEARNING_STALE_DAYS = env.int("LEARNING_STALE_DAYS", default=90)
# Phrases added to the memory guard's built-in English and Chinese boilerplate blacklist.
LEARNING_BOILERPLATE_PHRASES = env.list("LEARNING_BOILERPLATE_PHRASES", default=[])

# --- Recall and reflect (seeds 001, 003, 004) ------------------------------------------------------
EMBEDDING_BASE_URL = env.str("EMBEDDING_BASE_URL", default="")
EMBEDDING_API_KEY = env.str("EMBEDDING_API_KEY", default="")
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="")
# auto: the endpoint above when set, else the local in-wheel model (WordLlama); local, openai, none.
EMBEDDING_PROVIDER = env.str("EMBEDDING_PROVIDER", default="auto")
# How keyword and vector candidates are fused: weighted (RECALL_VECTOR_WEIGHT/RECALL_KEYWORD_WEIGHT on [0, 1]
# scores) or rrf (reciprocal rank, k=RECALL_RRF_K). weighted 0.5/0.5 measured best (BENCHMARKS.md, issue 22).
RECALL_FUSION = env.str("RECALL_FUSION", default="weighted")
RECALL_RRF_K = env.int("RECALL_RRF_K", default=60)
# Recency is a bounded boost (at most ×(1+weight)) for questions without a time scope; durable files count as current.
RECALL_RECENCY_WEIGHT = env.float("RECALL_RECENCY_WEIGHT", default=0.1)
# recallMinScore (seed 004): results scoring below it are left out (0: none are).
RECALL_MIN_SCORE = env.float("RECALL_MIN_SCORE", default=0.0)
# embedding_cache is kept to this many rows by the embedding-cache-prune beat, least recently used first (seed 003).
EMBEDDING_CACHE_MAX_ENTRIES = env.int("EMBEDDING_CACHE_MAX_ENTRIES", default=200_000)
RECALL_DECAY_HALF_LIFE_DAYS = env.float("RECALL_DECAY_HALF_LIFE_DAYS", default=30)
RECALL_VECTOR_WEIGHT = env.float("RECALL_VECTOR_WEIGHT", default=0.5)  # the seed's 0.7 lost answers (issue 22)
RECALL_KEYWORD_WEIGHT = env.float("RECALL_KEYWORD_WEIGHT", default=0.5)
# Recall index (seed 003): chunkTokens / chunkOverlap, EMBEDDING_BATCH_MAX_TOKENS, EMBEDDING_RETRY_MAX_ATTEMPTS.
RECALL_CHUNK_TOKENS = env.int("RECALL_CHUNK_TOKENS", default=512)
RECALL_CHUNK_OVERLAP = env.int("RECALL_CHUNK_OVERLAP", default=50)
RECALL_DEFAULT_K = env.int("RECALL_DEFAULT_K", default=25)
RECALL_SNIPPET_MAX_CHARS = env.int("RECALL_SNIPPET_MAX_CHARS", default=700)  # SNIPPET_MAX_CHARS
RECALL_MAX_FILE_BYTES = env.int("RECALL_MAX_FILE_BYTES", default=5 * 1024 * 1024)
# Above this many vectors, sqlite-vec does the similarity when it loads (NumPy brute force otherwise).
RECALL_BRUTE_FORCE_MAX_CHUNKS = env.int("RECALL_BRUTE_FORCE_MAX_CHUNKS", default=200_000)
RECALL_DECAY_ENABLED = env.bool("RECALL_DECAY_ENABLED", default=True)  # decay.enabled (seed 004 P1-001)
RECALL_DECAY_ACTIVE_WEIGHT = env.float("RECALL_DECAY_ACTIVE_WEIGHT", default=0.1)  # decay.activeWeight
EMBEDDING_DIMENSIONS = env.int("EMBEDDING_DIMENSIONS", default=0)  # 0: the model's own size
EMBEDDING_BATCH_SIZE = env.int("EMBEDDING_BATCH_SIZE", default=64)
EMBEDDING_BATCH_MAX_TOKENS = env.int("EMBEDDING_BATCH_MAX_TOKENS", default=8000)
EMBEDDING_MAX_RETRIES = env.int("EMBEDDING_MAX_RETRIES", default=3)
EMBEDDING_TIMEOUT_S = env.float("EMBEDDING_TIMEOUT_S", default=60)
SKILL_PROMOTION_THRESHOLD = env.int("SKILL_PROMOTION_THRESHOLD", default=5)
REPORT_WEBHOOK_URL = env.str("REPORT_WEBHOOK_URL", default="")
PROJECTION_DIR = Path(env.str("PROJECTION_DIR", default=str(DATA_DIR / "projection")))
# Seed 004 qmdProjection: off by default, as the seed says; the views' detail (L1), one file per category,
# and the daily run (the beat's projection-daily task does nothing unless both ENABLED and DAILY_TRIGGER).
PROJECTION_ENABLED = env.bool("PROJECTION_ENABLED", default=False)
PROJECTION_INCLUDE_L1 = env.bool("PROJECTION_INCLUDE_L1", default=True)
PROJECTION_CATEGORY_SEPARATE_FILES = env.bool("PROJECTION_CATEGORY_SEPARATE_FILES", default=True)
PROJECTION_DAILY_TRIGGER = env.bool("PROJECTION_DAILY_TRIGGER", default=True)
# Reflect (seed 001): the daily run starts where the last one ended, else this long ago.
# consolidation.*: remove repeated and superseded lines of the memory files (guardian_app/write/consolidation.py).
CONSOLIDATION_ENABLED = env.bool("CONSOLIDATION_ENABLED", default=False)  # consolidation.enabled
CONSOLIDATION_SCHEDULE = env.str("CONSOLIDATION_SCHEDULE", default="0 2 * * *")  # consolidation.schedule
CONSOLIDATION_MAX_REMOVED_LINES = env.int("CONSOLIDATION_MAX_REMOVED_LINES", default=50)  # per file and run
REFLECT_DEFAULT_SINCE = env.str("REFLECT_DEFAULT_SINCE", default="7d")
REFLECT_MAX_FACTS = env.int("REFLECT_MAX_FACTS", default=5000)  # per run, newest kept
REFLECT_PAGE_MAX_FACTS = env.int("REFLECT_PAGE_MAX_FACTS", default=200)  # facts listed on an entity page
REFLECT_PROPOSE_MEMORY = env.bool("REFLECT_PROPOSE_MEMORY", default=True)  # sure opinions proposed to MEMORY.md
REFLECT_MEMORY_MIN_CONFIDENCE = env.float("REFLECT_MEMORY_MIN_CONFIDENCE", default=0.9)
REFLECT_SWEEP_GRACE_S = env.int("REFLECT_SWEEP_GRACE_S", default=300)
REFLECT_USER_ENTITY = env.str("REFLECT_USER_ENTITY", default="User")  # the entity USER.md's facts are about
# A name guessed from capitalisation (no @tag, no page yet) becomes an entity once this many facts name it.
REFLECT_NEW_ENTITY_MIN_EVIDENCE = env.int("REFLECT_NEW_ENTITY_MIN_EVIDENCE", default=2)
SKILL_MIN_CONFIDENCE = env.float("SKILL_MIN_CONFIDENCE", default=0.7)  # seed 004 P3-001: below, not a skill
# Resumable jobs (seed 004 P2-002, checkpoint.*): a job's holder renews its lease at every step.
CHECKPOINT_LEASE_S = env.float("CHECKPOINT_LEASE_S", default=300)
CHECKPOINT_MAX_ATTEMPTS = env.int("CHECKPOINT_MAX_ATTEMPTS", default=5)
# Change reports (seed 004 P2-001, reporting.notifyOnPivotal): posted to REPORT_WEBHOOK_URL when set.
REPORT_WEBHOOK_TIMEOUT_S = env.float("REPORT_WEBHOOK_TIMEOUT_S", default=5)
REPORT_WEBHOOK_MAX_RETRIES = env.int("REPORT_WEBHOOK_MAX_RETRIES", default=5)
REPORT_WEBHOOK_RETRY_BACKOFF_S = env.int("REPORT_WEBHOOK_RETRY_BACKOFF_S", default=30)
REPORT_PIVOTAL_OPINION_DELTA = env.float("REPORT_PIVOTAL_OPINION_DELTA", default=0.2)

# --- Django plumbing -----------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Serve the admin's assets from the installed apps: no collectstatic step for `make run`.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Production hardening; `manage.py check --deploy` passes with the values the README gives.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env.bool("BEHIND_TLS_PROXY", default=False) else None
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Reverse proxies in front of the service that append to X-Forwarded-For; 0: REMOTE_ADDR is the client. Used by
# the feedback and learning-token limits (guardian_app.learning.ratelimit.client_address) and by django-axes.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)

# Wrong admin passwords: django-axes locks a user name out from one client address after ADMIN_LOGIN_FAILURE_LIMIT
# failures, for ADMIN_LOGIN_COOLOFF_MIN minutes (429 and a page saying what to do); `manage.py axes_reset` unlocks.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_ENABLED = env.bool("ADMIN_LOGIN_THROTTLE_ENABLED", default=True)
AXES_FAILURE_LIMIT = env.int("ADMIN_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = dt.timedelta(minutes=env.float("ADMIN_LOGIN_COOLOFF_MIN", default=15))
# A user name from one address: a guesser elsewhere cannot lock the real operator out.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "guardian_app.learning.ratelimit.admin_lockout_response"  # 429, Retry-After, what to do
AXES_CLIENT_IP_CALLABLE = "guardian_app.learning.ratelimit.client_address"
AXES_VERBOSE = False
# Lockouts are listed and lifted with `manage.py axes_list_attempts` / `axes_reset_username`, not in the admin.
AXES_ENABLE_ADMIN = False


# Content-Security-Policy on every page (the admin, the API docs): scripts, styles, images and fonts from our own
# origin only. An inline <script> or <style> element runs only with the request's nonce (our templates carry it),
# or, for the one inline <style> of Django's change list, by its hash. Style attributes stay allowed
# (style-src-attr): the admin's and our templates use them, and they can neither run code nor load anything
# (url() in them is bound by img-src and font-src).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [csp_constants.SELF],
        "script-src": [csp_constants.SELF, csp_constants.NONCE],
        "style-src": [
            csp_constants.SELF,
            csp_constants.NONCE,
            *inline_style_hashes("contrib/admin/templates/admin/change_list.html"),
        ],
        "style-src-attr": [csp_constants.UNSAFE_INLINE],
        "img-src": [csp_constants.SELF, "data:"],
        "font-src": [csp_constants.SELF],
        "connect-src": [csp_constants.SELF],
        "object-src": [csp_constants.NONE],
        "base-uri": [csp_constants.SELF],
        "form-action": [csp_constants.SELF],
        "frame-ancestors": [csp_constants.NONE],
    }
}

# INFO for the web server and the worker; a manage.py command prints only its own output and warnings (issue 16).
LOG_LEVEL = env.str("LOG_LEVEL", default="WARNING" if Path(sys.argv[0]).name == "manage.py" else "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # No key, token or secret reaches a log line (reflection_site.privacy.RedactingFilter).
    "filters": {"redact": {"()": "reflection_site.logfilter.RedactSecrets"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact"]},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
