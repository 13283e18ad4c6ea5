"""RowWriter (ingest's and the scale seed's inserts) writes the column values the ORM writes, RowReader (the lookups of
the gate and the guardian) reads rows as the ORM reads them, and the API-key lookup reads a key back as the ORM reads
it. The integration suite runs these again on PostgreSQL."""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any

import pytest
from django.db import connection, models
from django.test.utils import isolate_apps

from reflection_site.models import ApiKey
from reflection_site.rows import RowReader, RowUpdate, RowWriter
from sessions_app.models import ConversationContext, ConversationSession, ConversationTurn, GateStatus

pytestmark = pytest.mark.django_db

AWARE = dt.datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=dt.timezone(dt.timedelta(hours=2)))


def _stored(model: type[models.Model], pk: Any) -> list[Any]:
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {table} WHERE {connection.ops.quote_name('id')} = %s", [pk])
        return list(cursor.fetchone())


def test_a_written_turn_is_stored_as_the_orm_stores_it() -> None:
    ConversationSession.objects.create(id="channel:rows:1", channel_id="rows", metadata={"a": [1, 2.5, None]})
    values: dict[str, Any] = {
        "session_id": "channel:rows:1",
        "turn_number": 1,
        "user_message_id": "m-1",
        "user_message_content": "I prefer tea. ✓",
        "user_from": None,
        "user_metadata": {"nested": {"ok": True}, "list": ["x"]},
        "agent_message_id": None,
        "agent_message_content": "Noted.",
        "agent_metadata": None,
        "created_at": AWARE,
        "gate_status": GateStatus.PENDING,
        "gate_enqueued_at": AWARE + dt.timedelta(seconds=1),
    }
    by_orm = ConversationTurn.objects.create(**values)
    writer = RowWriter.of(ConversationTurn)
    second = {"id": "01ROWWRITER000000000000000", "turn_number": 2, "user_message_id": "m-2"}
    writer.insert([writer.prepare_mapping({**values, **second})])
    orm_row, written_row = _stored(ConversationTurn, by_orm.id), _stored(ConversationTurn, second["id"])
    names = [f.attname for f in ConversationTurn._meta.concrete_fields if not f.primary_key]
    for name in ("turn_number", "user_message_id"):  # The key must differ; every other column is compared.
        assert written_row[names.index(name)] == second[name]
        written_row[names.index(name)] = values[name]
    assert written_row == orm_row  # Defaults (gate_run, gate_attempts, …) filled as the ORM fills them.
    read = ConversationTurn.objects.get(id=second["id"])
    assert read.created_at == AWARE and read.user_metadata == values["user_metadata"]

    context = RowWriter.of(ConversationContext)
    context.insert(
        [
            context.prepare_mapping(
                {"turn_id": by_orm.id, "role": "user", "message": f"m{n}", "timestamp": AWARE, "sequence_number": n}
            )
            for n in range(3)
        ]
    )
    assert [(c.sequence_number, c.timestamp) for c in by_orm.context.all()] == [(n, AWARE) for n in range(3)]


def test_a_key_looked_up_by_prefix_reads_as_the_orm_reads_it() -> None:
    key, _ = ApiKey.generate("rows-key", ["ingest", "read"])
    ApiKey.objects.filter(id=key.id).update(last_used_at=AWARE)
    found = ApiKey.objects.active_with_prefix(key.prefix)
    by_orm = ApiKey.objects.get(id=key.id)
    assert found is not None and found._state.adding is False
    names = [f.attname for f in ApiKey._meta.concrete_fields]
    assert [getattr(found, n) for n in names] == [getattr(by_orm, n) for n in names]
    assert found.scopes == ["ingest", "read"] and found.last_used_at == AWARE
    ApiKey.objects.filter(id=key.id).update(revoked_at=AWARE)
    assert ApiKey.objects.active_with_prefix(key.prefix) is None


def test_a_naive_datetime_takes_the_fields_own_path_with_its_warning() -> None:
    ConversationSession.objects.create(id="channel:rows:2", channel_id="rows")
    writer = RowWriter.of(ConversationTurn)
    naive = dt.datetime(2026, 3, 4, 5, 6, 7)
    values = {"session_id": "channel:rows:2", "user_message_content": "u", "agent_message_content": "a"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer.insert([writer.prepare_mapping({**values, "id": "01NAIVE", "turn_number": 1, "created_at": naive})])
        by_orm = ConversationTurn.objects.create(**values, turn_number=2, created_at=naive)
    assert sum("naive datetime" in str(w.message) for w in caught) == 2
    assert (
        ConversationTurn.objects.get(id="01NAIVE").created_at == ConversationTurn.objects.get(id=by_orm.id).created_at
    )


def test_a_row_without_a_required_value_or_a_model_with_auto_now_is_refused() -> None:
    with pytest.raises(ValueError, match="channel_id has no value"):
        RowWriter.of(ConversationSession).prepare_mapping({"id": "channel:rows:3"})

    with isolate_apps("sessions_app"):  # Not in the project's registry (makemigrations would see it).

        class Stamped(models.Model):  # noqa: DJ008
            touched = models.DateTimeField(auto_now=True)

            class Meta:
                app_label = "sessions_app"

        with pytest.raises(ValueError, match="auto_now"):
            RowWriter(Stamped)


def test_generated_columns_are_left_to_the_database() -> None:
    from dataset_app.models import DatasetSample

    generated = [f.attname for f in DatasetSample._meta.concrete_fields if f.generated]
    assert generated  # The quality factors, read from quality_factors by the database.
    writer = RowWriter.of(DatasetSample)
    assert not set(generated) & set(writer.attnames)
    assert all(
        connection.ops.quote_name(f.column) not in writer.columns
        for f in DatasetSample._meta.concrete_fields
        if f.generated
    )


def test_a_row_read_by_a_reader_is_the_row_the_orm_reads() -> None:
    ConversationSession.objects.create(id="channel:rows:4", channel_id="rows", metadata={"a": [1, 2.5, None]})
    turn = ConversationTurn.objects.create(
        session_id="channel:rows:4",
        turn_number=1,
        user_message_content="I prefer tea. ✓",
        user_metadata={"nested": {"ok": True}},
        agent_message_content="Noted.",
        created_at=AWARE,
        gate_enqueued_at=AWARE,
    )
    found = RowReader.of(ConversationTurn, "WHERE {id} = %s").first([turn.id])
    by_orm = ConversationTurn.objects.get(id=turn.id)
    names = [f.attname for f in ConversationTurn._meta.concrete_fields]
    assert found is not None and found._state.adding is False and found._state.db == by_orm._state.db
    assert [getattr(found, n) for n in names] == [getattr(by_orm, n) for n in names]
    assert found.created_at == AWARE and found.user_metadata == {"nested": {"ok": True}}
    assert found.session.metadata == {"a": [1, 2.5, None]}  # A relation still loads as the ORM loads it.
    assert RowReader.of(ConversationTurn, "WHERE {id} = %s").first(["no such turn"]) is None


def test_a_reader_of_some_fields_leaves_the_others_deferred_and_orders_as_asked() -> None:
    ConversationSession.objects.create(id="channel:rows:5", channel_id="rows")
    for number in (1, 2, 3):
        ConversationTurn.objects.create(
            session_id="channel:rows:5", turn_number=number, user_message_content=f"u{number}", agent_message_content=""
        )
    clause = "WHERE {session_id} = %s AND {turn_number} < %s ORDER BY {turn_number} DESC LIMIT %s"
    rows = RowReader.of(ConversationTurn, clause, ("user_message_content",)).rows(["channel:rows:5", 3, 5])
    assert [row.user_message_content for row in rows] == ["u2", "u1"]
    assert rows[0].get_deferred_fields() >= {"turn_number", "agent_message_content"}
    by_orm = (
        ConversationTurn.objects.filter(session_id="channel:rows:5", turn_number__lt=3)
        .order_by("-turn_number")
        .values_list("user_message_content", flat=True)[:5]
    )
    assert [row.user_message_content for row in rows] == list(by_orm)


def test_an_instance_inserted_and_a_row_updated_are_stored_as_the_orm_stores_them() -> None:
    """The guardian's snapshot, file version and file-row updates (``guardian_app.write.history``)."""
    from guardian_app.models import FileSnapshot, FileVersion, WorkspaceFile

    snapshot = FileSnapshot(file_name="USER.md", content="- Prefers tea. ✓\n", content_hash="h1", created_at=AWARE)
    RowWriter.of(FileSnapshot).insert_instance(snapshot)
    assert snapshot._state.adding is False and snapshot._state.db == connection.alias
    twin = FileSnapshot.objects.create(
        file_name="USER.md", content="- Prefers tea. ✓\n", content_hash="h2", created_at=AWARE
    )
    assert _stored(FileSnapshot, snapshot.id)[:-2] == _stored(FileSnapshot, twin.id)[:-2]  # (Only the hash differs.)
    assert FileSnapshot.objects.get(id=snapshot.id).created_at == AWARE

    written = FileVersion(file_name="USER.md", seq=1, snapshot=snapshot, kind="write", diff="+x", lines_added=1)
    RowWriter.of(FileVersion).insert_instance(written)
    by_orm = FileVersion.objects.create(
        file_name="USER.md",
        seq=2,
        snapshot=snapshot,
        kind="write",
        diff="+x",
        lines_added=1,
        created_at=written.created_at,
    )
    names = [f.attname for f in FileVersion._meta.concrete_fields if not f.primary_key]
    row, orm_row = _stored(FileVersion, written.id), _stored(FileVersion, by_orm.id)
    row[names.index("seq")] = 2
    assert row == orm_row

    WorkspaceFile.objects.create(file_name="USER.md")
    WorkspaceFile.objects.create(file_name="TOOLS.md")
    fields = ("current_version_id", "pending_audit_id", "updated_at")
    update = RowUpdate.of(WorkspaceFile, fields, "WHERE {file_name} = %s")
    assert update.run([written.id, None, AWARE], ["USER.md"]) == 1
    WorkspaceFile.objects.filter(file_name="TOOLS.md").update(
        current_version=written, pending_audit=None, updated_at=AWARE
    )
    pair = [list(WorkspaceFile.objects.filter(file_name=n).values_list(*fields).get()) for n in ("USER.md", "TOOLS.md")]
    assert pair[0] == pair[1] == [written.id, None, AWARE]
    assert update.run([written.id, None, AWARE], ["no such file"]) == 0


def test_an_update_counts_up_as_f_plus_one_does() -> None:
    """The gate's claim (``sessions_app.gate``): the offline gate counts its attempt in it."""
    ConversationSession.objects.create(id="channel:rows:6", channel_id="rows")
    turns = [
        ConversationTurn.objects.create(
            session_id="channel:rows:6",
            turn_number=n,
            user_message_content="u",
            agent_message_content="",
            gate_attempts=2,
        )
        for n in (1, 2)
    ]
    fields = ("gate_status", "gate_finished_at")
    claim = RowUpdate.of(
        ConversationTurn, fields, "WHERE {id} = %s AND {gate_status} = %s", plus_one=("gate_attempts",)
    )
    assert claim.run([GateStatus.DONE, AWARE], [turns[0].id, GateStatus.PENDING]) == 1
    assert claim.run([GateStatus.DONE, AWARE], [turns[0].id, GateStatus.PENDING]) == 0  # Claimed already.
    ConversationTurn.objects.filter(id=turns[1].id).update(
        gate_status=GateStatus.DONE, gate_finished_at=AWARE, gate_attempts=models.F("gate_attempts") + 1
    )
    stored = [ConversationTurn.objects.values_list(*fields, "gate_attempts").get(id=t.id) for t in turns]
    assert stored[0] == stored[1] == (GateStatus.DONE, AWARE, 3)
