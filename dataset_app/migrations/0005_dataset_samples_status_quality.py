# Issue 9: the samples admin's "review (N)" count read the whole (type, status) index (285 ms at 1M on SQLite with
# its pages not in the OS cache).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dataset_app", "0004_quality_factor_columns"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="datasetsample",
            index=models.Index(fields=["annotation_status", "quality_score"], name="dataset_samples_status_quality"),
        ),
    ]
