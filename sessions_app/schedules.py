"""This app's default beat entries: name -> (task, crontab). Created once; timing is the operator's."""

SCHEDULES: dict[str, tuple[str, str]] = {
    # https://crontab.guru/#*_*_*_*_*
    "gate-sweep": ("sessions_app.tasks.run_gate_sweep", "* * * * *"),
    # https://crontab.guru/#7_*_*_*_*
    "gate-stats-rollup": ("sessions_app.tasks.run_gate_stats_rollup", "7 * * * *"),
}
