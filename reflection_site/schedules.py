"""The site's default beat entries: name -> (task, crontab). Created once; timing is the operator's."""

SCHEDULES: dict[str, tuple[str, str]] = {
    # https://crontab.guru/#*/4_*_*_*_* : inside the dashboards' 5-minute cache (reflection_site.admin.DASHBOARD_TTL).
    "admin-dashboards-refresh": ("reflection_site.tasks.run_dashboard_refresh", "*/4 * * * *"),
}
