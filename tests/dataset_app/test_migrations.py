"""What the dataset's migrations leave in the database: the groups' permissions, a reversible view."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db


def perms(group: str) -> set[str]:
    return set(
        Group.objects.get(name=group)
        .permissions.filter(content_type__app_label="dataset_app")
        .values_list("codename", flat=True)
    )


def test_operators_run_exports_and_annotators_review_samples():
    assert {"add_datasetexport", "download_datasetexport", "view_datasetexport", "run_evaluationrun"} <= perms(
        "operator"
    )
    assert {"annotate_datasetsample", "change_datasetsample", "view_datasetsample"} <= perms("annotator")
    assert "annotate_datasetsample" not in perms("operator")
    assert "add_datasetexport" not in perms("annotator")
    assert "view_raw_datasetsample" not in perms("operator") | perms("annotator")


def test_an_annotator_cannot_roll_back_but_can_review():
    from django.contrib.auth.models import User

    user = User.objects.create_user("ann", is_staff=True)
    user.groups.add(Group.objects.get(name="annotator"))
    user = User.objects.get(id=user.id)
    assert user.has_perm("dataset_app.annotate_datasetsample")
    assert not user.has_perm("guardian_app.rollback_writeguardianaudit")


@pytest.mark.django_db(transaction=True)
def test_the_view_migration_reverses_and_reapplies():
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("dataset_app", "0001_initial")])
        with connection.cursor() as cursor:
            tables = connection.introspection.table_names(cursor, include_views=True)
        assert "pending_review_samples" not in tables
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    with connection.cursor() as cursor:
        assert "pending_review_samples" in connection.introspection.table_names(cursor, include_views=True)
