"""This app's default beat entries: name -> (task, crontab). Created once; timing is the operator's."""

from django.conf import settings

SCHEDULES: dict[str, tuple[str, str]] = {}
# Write guardian: re-enqueue UPDATE_* decisions still without an audit after GUARDIAN_SWEEP_GRACE_S.
SCHEDULES["guardian-sweep"] = ("guardian_app.tasks.run_guardian_sweep", "* * * * *")  # https://crontab.guru/#*_*_*_*_*
# Workspace drift check: a memory file changed by hand gets a version (and snapshot) of its own.
SCHEDULES["workspace-drift-check"] = (
    "guardian_app.tasks.run_drift_check",
    "*/10 * * * *",
)  # https://crontab.guru/#*/10_*_*_*_*
# Learning guardrails (seed 002 §4.5): decay, expiry and caps, daily at 03:00.
SCHEDULES["learning-decay"] = ("guardian_app.tasks.run_learning_decay", "0 3 * * *")  # https://crontab.guru/#0_3_*_*_*
# Recall index (seed 003): pick up daily logs and bank pages dropped into the workspace; a no-op run only stats files.
SCHEDULES["memory-index"] = ("guardian_app.tasks.run_memory_index", "* * * * *")  # https://crontab.guru/#*_*_*_*_*
# Embedding cache (seed 003): kept to EMBEDDING_CACHE_MAX_ENTRIES rows, least recently used out, daily at 03:30.
SCHEDULES["embedding-cache-prune"] = (
    "guardian_app.tasks.run_embedding_cache_prune",
    "30 3 * * *",
)  # https://crontab.guru/#30_3_*_*_*
# Reflect (seed 001): entity pages and opinions from the facts since the last run, daily at 01:00.
SCHEDULES["reflect-daily"] = ("guardian_app.tasks.run_daily_reflect", "0 1 * * *")  # https://crontab.guru/#0_1_*_*_*
# Daily projection (seed 004 P1-002) under PROJECTION_DIR, late enough that "new today" covers the day.
SCHEDULES["projection-daily"] = (
    "guardian_app.tasks.run_daily_projection",
    "50 23 * * *",
)  # https://crontab.guru/#50_23_*_*_*
# Daily change report (seed 004 P2-001) of yesterday, posted to REPORT_WEBHOOK_URL when it has pivotal changes.
SCHEDULES["report-daily"] = ("guardian_app.tasks.run_daily_report", "10 0 * * *")  # https://crontab.guru/#10_0_*_*_*
# Resumable jobs (seed 004 P2-002): finish reflect runs and imports whose process died; re-enqueue stuck runs.
SCHEDULES["resume-jobs"] = ("guardian_app.tasks.run_resume_jobs", "*/5 * * * *")  # https://crontab.guru/#*/5_*_*_*_*
# consolidation.schedule (CONSOLIDATION_SCHEDULE, owned by the setting): https://crontab.guru/#0_2_*_*_*
SCHEDULES["consolidation"] = ("guardian_app.tasks.run_consolidation", settings.CONSOLIDATION_SCHEDULE)
