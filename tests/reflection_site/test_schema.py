"""Every model change has its migration; and only the indexes the queries need (issue 9): no foreign key keeps an
index of its own beside one that leads with its column, in the models and in the migrated database;
``DropForeignKeyIndex`` drops and restores such an index without remaking the table. Re-run on PostgreSQL by the
integration suite."""

from __future__ import annotations

import io

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection, models
from django.db.migrations.executor import MigrationExecutor

APPS = ("sessions_app", "guardian_app", "dataset_app", "reflection_site")


@pytest.mark.django_db
def test_every_model_change_has_its_migration() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out)
    except SystemExit:
        pytest.fail(f"a model change has no migration (manage.py makemigrations):\n{out.getvalue()}")


def _leading_columns(model: type[models.Model]) -> dict[str, list[str]]:
    """First field name -> names of the declared indexes and unconditional unique constraints that lead with it."""
    leading: dict[str, list[str]] = {}
    for index in model._meta.indexes:
        if index.fields and index.condition is None:
            leading.setdefault(index.fields[0].lstrip("-"), []).append(index.name)
    for constraint in model._meta.constraints:
        fields = getattr(constraint, "fields", ())
        if fields and getattr(constraint, "condition", None) is None:
            leading.setdefault(fields[0], []).append(constraint.name)
    return leading


def _doubled_keys() -> list[tuple[str, str, list[str]]]:
    doubled = []
    for model in apps.get_models():
        if model._meta.app_label not in APPS:
            continue
        leading = _leading_columns(model)
        for field in model._meta.fields:
            if field.is_relation and field.db_index and not field.unique and field.name in leading:
                doubled.append((model._meta.db_table, field.name, leading[field.name]))
    return doubled


def test_no_foreign_key_has_an_index_of_its_own_beside_one_that_leads_with_its_column() -> None:
    assert _doubled_keys() == []


def _single_column_indexes(table: str, column: str) -> set[str]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    return {
        name
        for name, info in found.items()
        if info["index"] and not info["unique"] and not info["primary_key"] and info["columns"] == [column]
    }


# (table, column, the declared index on that column alone, if any): the keys 0005/0012/0006 stopped indexing alone.
KEYS = [
    ("conversation_turns", "session_id", None),
    ("conversation_contexts", "turn_id", None),
    ("memory_gate_decisions", "session_id", None),
    ("memory_gate_decisions", "turn_id", "gate_decisions_turn"),
    ("write_guardian_audit", "decision_id", "wga_decision"),
    ("write_guardian_audit", "session_id", None),
    ("opinion_evidence", "opinion_id", None),
    ("dataset_samples", "session_id", "dataset_samples_session"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("table", "column", "declared"), KEYS)
def test_the_migrated_database_indexes_each_key_once(table: str, column: str, declared: str | None) -> None:
    assert _single_column_indexes(table, column) == ({declared} if declared else set())


def _index_names(table: str) -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.get_constraints(cursor, table))


def _migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_the_migrations_drop_and_restore_the_keys_own_indexes_and_keep_the_rows() -> None:
    from sessions_app.models import ConversationSession, ConversationTurn

    session = ConversationSession.objects.create(id="channel:schema:alice", channel_id="schema")
    ConversationTurn.objects.create(
        session=session, turn_number=1, user_message_content="hi", agent_message_content="hello"
    )
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    before = [
        ("dataset_app", "0005_dataset_samples_status_quality"),
        ("guardian_app", "0011_file_versions_file_seq_desc"),
        ("sessions_app", "0004_memory_gate_stats_week_session_count"),
    ]
    try:
        _migrate(before)
        for table, column, declared in KEYS:
            own = _single_column_indexes(table, column) - {declared}
            assert own, f"{table}.{column} has no index of its own before the migration"
        assert "turns_session_turn" in _index_names("conversation_turns")
    finally:
        _migrate(latest)
    for table, column, declared in KEYS:
        assert _single_column_indexes(table, column) == ({declared} if declared else set())
    assert "turns_session_turn" not in _index_names("conversation_turns")
    assert ConversationTurn.objects.get(session=session).user_message_content == "hi"  # No row lost either way.


@pytest.mark.parametrize("router", __import__("reflection_site.api", fromlist=["ROUTERS"]).ROUTERS)
def test_each_api_module_imports_first_in_a_fresh_process(router):
    """The apps' API modules import reflection_site.api; it mounts them only when the URLs ask (issue 20: mounted at
    its import, an API module imported before it met itself half loaded)."""
    import subprocess
    import sys

    module = router.rsplit(".", 1)[0]
    code = f"import django; django.setup(); import {module}; print({module}.router)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
