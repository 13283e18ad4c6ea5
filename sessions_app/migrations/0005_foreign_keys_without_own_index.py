# Issue 9: only the indexes the queries need. Each foreign key below is served by an index that leads with its
# column; its own index (and the seed's idx_session_turn, which repeats the unique (session_id, turn_number)) was
# written on every ingest for nothing.

import django.db.models.deletion
from django.db import migrations, models

from reflection_site.schema import DropForeignKeyIndex


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0004_memory_gate_stats_week_session_count"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="conversationturn",
            name="turns_session_turn",
        ),
        DropForeignKeyIndex(
            model_name="conversationcontext",
            name="turn",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="context",
                to="sessions_app.conversationturn",
            ),
        ),
        DropForeignKeyIndex(
            model_name="conversationturn",
            name="session",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="turns",
                to="sessions_app.conversationsession",
            ),
        ),
        DropForeignKeyIndex(
            model_name="memorygatedecision",
            name="session",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="decisions",
                to="sessions_app.conversationsession",
            ),
        ),
        DropForeignKeyIndex(
            model_name="memorygatedecision",
            name="turn",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="decisions",
                to="sessions_app.conversationturn",
            ),
        ),
    ]
