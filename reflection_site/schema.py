"""Migration operations of the project's own."""

from __future__ import annotations

from typing import Any

from django.db import migrations


class DropForeignKeyIndex(migrations.AlterField):
    """``AlterField`` of a foreign key to ``db_index=False`` (an index that leads with the column serves it).

    On PostgreSQL this is Django's own: ``DROP INDEX`` of the key's index (and of its ``varchar_pattern_ops`` twin).
    Django's SQLite editor remakes the whole table to alter any column (a copy of every row: minutes at a million
    turns, and refused while a view reads the table); the key's index is all that changes, so on SQLite this drops
    the indexes SQLite has on that column alone that the model does not declare by name, and backwards creates the
    index Django would have created.
    """

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        connection = schema_editor.connection
        if connection.vendor != "sqlite":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
            return
        model = from_state.apps.get_model(app_label, self.model_name)
        column = model._meta.get_field(self.name).column
        declared = {index.name for index in model._meta.indexes} | {c.name for c in model._meta.constraints}
        with connection.cursor() as cursor:
            found = connection.introspection.get_constraints(cursor, model._meta.db_table)
        for name, info in found.items():
            if info["index"] and not info["unique"] and info["columns"] == [column] and name not in declared:
                schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(name)}")

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor != "sqlite":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
            return
        model = to_state.apps.get_model(app_label, self.model_name)
        schema_editor.execute(schema_editor._create_index_sql(model, fields=[model._meta.get_field(self.name)]))

    def describe(self) -> str:
        return f"Drop the index of its own of {self.model_name}.{self.name}"
