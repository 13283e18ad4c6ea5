"""The dataset's permissions for the console's groups (created by guardian_app 0004):

* ``operator`` runs and downloads exports, runs evaluations, and sees samples and runs;
* ``annotator`` reviews samples (approve, reject, needs review, import an annotated batch) and sees runs.

Neither group sees the unredacted text of samples: grant "Can see the unredacted text of dataset samples"
(``view_raw_datasetsample``) to the people who need it. This migration only adds permissions.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUPS = {
    "operator": [
        "view_datasetsample",
        "view_datasetexport",
        "add_datasetexport",
        "download_datasetexport",
        "view_evaluationrun",
        "run_evaluationrun",
    ],
    "annotator": [
        "view_datasetsample",
        "change_datasetsample",
        "annotate_datasetsample",
        "view_evaluationrun",
    ],
}


def add_permissions(apps, schema_editor):
    # Permissions are normally created after all migrations (post_migrate); make ours exist now.
    app_config = apps.get_app_config("dataset_app")
    app_config.models_module = True  # create_permissions skips an app without it.
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(*Permission.objects.filter(content_type__app_label="dataset_app", codename__in=codenames))


def remove_permissions(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group = Group.objects.filter(name=name).first()
        if group is not None:
            group.permissions.remove(
                *Permission.objects.filter(content_type__app_label="dataset_app", codename__in=codenames)
            )


class Migration(migrations.Migration):
    dependencies = [
        ("dataset_app", "0002_pending_review_samples_view"),
        ("guardian_app", "0004_operator_annotator_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(add_permissions, remove_permissions)]
