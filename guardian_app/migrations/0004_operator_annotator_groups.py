"""The console's two groups: ``operator`` rolls back and retries memory writes (and runs exports, which the
dataset app adds); ``annotator`` adds behaviour corrections (and reviews samples) but cannot roll back.

Other apps add their permissions to the same groups with ``get_or_create``; this migration only adds.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUPS = {
    "operator": [
        ("guardian_app", "rollback_writeguardianaudit"),
        ("guardian_app", "retry_writeguardianaudit"),
        ("guardian_app", "view_writeguardianaudit"),
        ("guardian_app", "view_filesnapshot"),
        ("guardian_app", "view_fileversion"),
        ("guardian_app", "view_rollback"),
        ("guardian_app", "view_behaviorcorrection"),
        ("guardian_app", "add_behaviorcorrection"),
        ("guardian_app", "change_behaviorcorrection"),
        ("sessions_app", "view_conversationsession"),
        ("sessions_app", "view_conversationturn"),
        ("sessions_app", "view_memorygatedecision"),
    ],
    "annotator": [
        ("guardian_app", "view_writeguardianaudit"),
        ("guardian_app", "view_fileversion"),
        ("guardian_app", "view_behaviorcorrection"),
        ("guardian_app", "add_behaviorcorrection"),
        ("sessions_app", "view_conversationsession"),
        ("sessions_app", "view_conversationturn"),
        ("sessions_app", "view_memorygatedecision"),
    ],
}


def create_groups(apps, schema_editor):
    # Permissions are normally created after all migrations (post_migrate); make them exist now.
    for app_label in {label for perms in GROUPS.values() for label, _ in perms}:
        app_config = apps.get_app_config(app_label)
        app_config.models_module = True  # create_permissions skips an app without it.
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        for app_label, codename in perms:
            permission = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
            if permission is not None:
                group.permissions.add(permission)


def remove_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in GROUPS.items():
        group = Group.objects.filter(name=name).first()
        if group is None:
            continue
        for app_label, codename in perms:
            group.permissions.remove(*Permission.objects.filter(content_type__app_label=app_label, codename=codename))


class Migration(migrations.Migration):
    dependencies = [
        ("guardian_app", "0003_recall_index"),
        ("sessions_app", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
