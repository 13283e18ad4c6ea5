# Issue 9: only the indexes the queries need. The seed's idx_session (dataset_samples_session) is the session's
# index; the foreign key's own repeated it.

import django.db.models.deletion
from django.db import migrations, models

from reflection_site.schema import DropForeignKeyIndex


class Migration(migrations.Migration):
    dependencies = [
        ("dataset_app", "0005_dataset_samples_status_quality"),
        ("sessions_app", "0005_foreign_keys_without_own_index"),
    ]

    operations = [
        DropForeignKeyIndex(
            model_name="datasetsample",
            name="session",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="dataset_samples",
                to="sessions_app.conversationsession",
            ),
        ),
    ]
