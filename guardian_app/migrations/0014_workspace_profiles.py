"""Workspace profiles (issue 19): AGENTS.md is a memory file (the openclaw profile's home of tool facts), and a
file version can be an agent edit (a change OpenClaw made to MEMORY.md or memory/ itself)."""

import importlib

from django.db import migrations, models

# SQLite rebuilds a table to change its CHECK constraint, which fails while a view names it: 0006's helpers
# drop those views first and create them again after (the same five tables).
_views = importlib.import_module("guardian_app.migrations.0006_reflect")


class Migration(migrations.Migration):
    dependencies = [
        ("guardian_app", "0013_workspace_files_unsafe"),
    ]

    operations = [
        migrations.RunPython(_views.stash_views, _views.restore_views),
        migrations.RemoveConstraint(
            model_name="behaviorcorrection",
            name="behavior_corrections_target_file_valid",
        ),
        migrations.RemoveConstraint(
            model_name="filesnapshot",
            name="file_snapshots_file_name_valid",
        ),
        migrations.RemoveConstraint(
            model_name="fileversion",
            name="file_versions_kind_valid",
        ),
        migrations.RemoveConstraint(
            model_name="fileversion",
            name="file_versions_file_name_valid",
        ),
        migrations.RemoveConstraint(
            model_name="workspacefile",
            name="workspace_files_file_name_valid",
        ),
        migrations.RemoveConstraint(
            model_name="writeguardianaudit",
            name="write_guardian_audit_target_file_valid",
        ),
        migrations.AlterField(
            model_name="behaviorcorrection",
            name="corrected_target_file",
            field=models.CharField(
                blank=True,
                choices=[
                    ("MEMORY.md", "MEMORY.md"),
                    ("USER.md", "USER.md"),
                    ("SOUL.md", "SOUL.md"),
                    ("IDENTITY.md", "IDENTITY.md"),
                    ("TOOLS.md", "TOOLS.md"),
                    ("AGENTS.md", "AGENTS.md"),
                ],
                max_length=32,
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="filesnapshot",
            name="file_name",
            field=models.CharField(
                choices=[
                    ("MEMORY.md", "MEMORY.md"),
                    ("USER.md", "USER.md"),
                    ("SOUL.md", "SOUL.md"),
                    ("IDENTITY.md", "IDENTITY.md"),
                    ("TOOLS.md", "TOOLS.md"),
                    ("AGENTS.md", "AGENTS.md"),
                ],
                max_length=96,
            ),
        ),
        migrations.AlterField(
            model_name="fileversion",
            name="file_name",
            field=models.CharField(
                choices=[
                    ("MEMORY.md", "MEMORY.md"),
                    ("USER.md", "USER.md"),
                    ("SOUL.md", "SOUL.md"),
                    ("IDENTITY.md", "IDENTITY.md"),
                    ("TOOLS.md", "TOOLS.md"),
                    ("AGENTS.md", "AGENTS.md"),
                ],
                max_length=96,
            ),
        ),
        migrations.AlterField(
            model_name="fileversion",
            name="kind",
            field=models.CharField(
                choices=[
                    ("initial", "first seen"),
                    ("write", "Write"),
                    ("rollback", "Rollback"),
                    ("hand_edit", "hand edit"),
                    ("agent_edit", "agent edit"),
                ],
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="workspacefile",
            name="file_name",
            field=models.CharField(
                choices=[
                    ("MEMORY.md", "MEMORY.md"),
                    ("USER.md", "USER.md"),
                    ("SOUL.md", "SOUL.md"),
                    ("IDENTITY.md", "IDENTITY.md"),
                    ("TOOLS.md", "TOOLS.md"),
                    ("AGENTS.md", "AGENTS.md"),
                ],
                max_length=96,
                primary_key=True,
                serialize=False,
            ),
        ),
        migrations.AlterField(
            model_name="writeguardianaudit",
            name="target_file",
            field=models.CharField(
                choices=[
                    ("MEMORY.md", "MEMORY.md"),
                    ("USER.md", "USER.md"),
                    ("SOUL.md", "SOUL.md"),
                    ("IDENTITY.md", "IDENTITY.md"),
                    ("TOOLS.md", "TOOLS.md"),
                    ("AGENTS.md", "AGENTS.md"),
                ],
                max_length=96,
            ),
        ),
        migrations.AddConstraint(
            model_name="behaviorcorrection",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("corrected_target_file__isnull", True),
                    (
                        "corrected_target_file__in",
                        ("MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "AGENTS.md"),
                    ),
                    _connector="OR",
                ),
                name="behavior_corrections_target_file_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="filesnapshot",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("file_name__in", ("MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "AGENTS.md")),
                    (
                        "file_name__regex",
                        "^bank/(entities/[A-Za-z0-9][A-Za-z0-9_-]{0,63}|opinions|world|experience)\\.md$",
                    ),
                    _connector="OR",
                ),
                name="file_snapshots_file_name_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="fileversion",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("file_name__in", ("MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "AGENTS.md")),
                    (
                        "file_name__regex",
                        "^bank/(entities/[A-Za-z0-9][A-Za-z0-9_-]{0,63}|opinions|world|experience)\\.md$",
                    ),
                    _connector="OR",
                ),
                name="file_versions_file_name_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="fileversion",
            constraint=models.CheckConstraint(
                condition=models.Q(("kind__in", ["initial", "write", "rollback", "hand_edit", "agent_edit"])),
                name="file_versions_kind_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="workspacefile",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("file_name__in", ("MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "AGENTS.md")),
                    (
                        "file_name__regex",
                        "^bank/(entities/[A-Za-z0-9][A-Za-z0-9_-]{0,63}|opinions|world|experience)\\.md$",
                    ),
                    _connector="OR",
                ),
                name="workspace_files_file_name_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="writeguardianaudit",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("target_file__in", ("MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "AGENTS.md")),
                    (
                        "target_file__regex",
                        "^bank/(entities/[A-Za-z0-9][A-Za-z0-9_-]{0,63}|opinions|world|experience)\\.md$",
                    ),
                    _connector="OR",
                ),
                name="write_guardian_audit_target_file_valid",
            ),
        ),
        migrations.RunPython(_views.restore_views, _views.stash_views),
    ]
