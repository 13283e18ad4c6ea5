# Issue 9: only the indexes the queries need. Each foreign key below is served by an index that leads with its
# column (wga_decision, wga_session_time, the opinion's evidence indexes); its own index was written for nothing.

import django.db.models.deletion
from django.db import migrations, models

from reflection_site.schema import DropForeignKeyIndex


class Migration(migrations.Migration):
    dependencies = [
        ("guardian_app", "0011_file_versions_file_seq_desc"),
        ("sessions_app", "0005_foreign_keys_without_own_index"),
    ]

    operations = [
        DropForeignKeyIndex(
            model_name="opinionevidence",
            name="opinion",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="evidence",
                to="guardian_app.opinion",
            ),
        ),
        DropForeignKeyIndex(
            model_name="writeguardianaudit",
            name="decision",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="audits",
                to="sessions_app.memorygatedecision",
            ),
        ),
        DropForeignKeyIndex(
            model_name="writeguardianaudit",
            name="session",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="audits",
                to="sessions_app.conversationsession",
            ),
        ),
    ]
