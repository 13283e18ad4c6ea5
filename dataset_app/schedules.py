"""This app's default beat entries: name -> (task, crontab). Created once; timing is the operator's."""

from django.conf import settings

SCHEDULES: dict[str, tuple[str, str]] = {
    # datasetCollection.autoCollect, hourly: https://crontab.guru/#23_*_*_*_*
    "dataset-auto-collect": ("dataset_app.tasks.run_auto_collect", "23 * * * *"),
    # Exports a dead worker left behind: https://crontab.guru/#*/5_*_*_*_*
    "dataset-export-sweep": ("dataset_app.tasks.run_export_sweep", "*/5 * * * *"),
    # storage.jsonlExport.schedule (JSONL_EXPORT_SCHEDULE), default https://crontab.guru/#0_0_*_*_*
    "conversation-jsonl-export": ("dataset_app.tasks.run_conversation_export", settings.JSONL_EXPORT_SCHEDULE),
    # storage.jsonlExport.retentionDays: https://crontab.guru/#30_0_*_*_*
    "conversation-export-retention": ("dataset_app.tasks.run_export_file_retention", "30 0 * * *"),
    # storage.retentionDays: https://crontab.guru/#45_3_*_*_*
    "retention": ("dataset_app.tasks.run_retention", "45 3 * * *"),
}
