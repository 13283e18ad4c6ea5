"""Issue 9: the nightly conversation export reads driver rows in keyset pages (``conversations._records_of``) and
writes them with orjson. Its records are those of the model-instance path (``turn_record`` over ``_turns_of``, the
export before issue 9), key order included, across page boundaries, turns of equal ``created_at`` included, on
SQLite and PostgreSQL; its lines hold the old lines' values (``json.dumps(record, ensure_ascii=False)``), written
without a space after ``,`` and ``:`` and with orjson's notation of floats (0.00001, not 1e-05)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import orjson
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchmarks.seed_scale import seed
from dataset_app.exporters import conversations
from sessions_app.models import ConversationContext, ConversationTurn, MemoryGateDecision

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 3, 11)


@pytest.fixture
def one_day() -> list[str]:
    """40 turns on DAY (with context, decisions and audits), three at each instant, plus turns either side."""
    seed(turns=46, turns_per_session=7, days=2, batch=100)
    start = dt.datetime.combine(DAY, dt.time(9), tzinfo=timezone.get_default_timezone())
    ids = list(ConversationTurn.objects.order_by("id").values_list("id", flat=True))
    for i, turn_id in enumerate(ids[:40]):
        ConversationTurn.objects.filter(id=turn_id).update(created_at=start + dt.timedelta(seconds=i // 3))
    ConversationTurn.objects.filter(id__in=ids[40:43]).update(created_at=start - dt.timedelta(hours=10))
    ConversationTurn.objects.filter(id__in=ids[43:]).update(created_at=start + dt.timedelta(hours=15))
    # JSON columns as ingest stores them: non-ASCII, nesting, key order, a JSON null apart from an SQL NULL.
    ConversationTurn.objects.filter(id=ids[1]).update(
        user_metadata={"zé": [1, 2.5, None, 1e-05], "nested": {"b": True, "a": 'line\nbreak \u2028 "q"'}},
        agent_metadata={"model": "gpt-4o-mini", "tokens": 12},
        feedback_json={"rating": "down", "reason": "Никогда emoji 👍"},
    )
    ConversationTurn.objects.filter(id=ids[2]).update(user_metadata=[], feedback_json={})
    # Fractions of a second that a database prints shorter (PostgreSQL drops trailing zeros): .5, .986, .00012,
    # none.
    for k, micro in enumerate((500_000, 986_000, 120, 0)):
        ConversationContext.objects.filter(turn_id=ids[6 + k]).update(timestamp=start.replace(microsecond=micro))
        MemoryGateDecision.objects.filter(turn_id=ids[6 + k]).update(created_at=start.replace(microsecond=micro))
    # A second gate run on one turn: both decisions, in run order.
    first = MemoryGateDecision.objects.filter(turn_id=ids[4]).get()
    MemoryGateDecision.objects.create(
        turn_id=first.turn_id,
        session_id=first.session_id,
        run_number=2,
        decision="NO_WRITE",
        reason="again",
        llm_model="gpt-4o-mini",
        created_at=first.created_at + dt.timedelta(minutes=5),
    )
    return ids[:40]


def _model_path() -> list[dict[str, Any]]:
    return [conversations.turn_record(turn) for turn in conversations._turns_of(DAY)]


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 20, 40, 2000])
def test_the_pages_give_the_same_records_as_the_model_instances(one_day: list[str], chunk_size: int) -> None:
    expected = _model_path()
    assert len(expected) == 40

    records = list(conversations._records_of(DAY, chunk_size=chunk_size))

    assert records == expected
    # Key order included: the lines are the same bytes.
    assert [json.dumps(r, ensure_ascii=False) for r in records] == [json.dumps(r, ensure_ascii=False) for r in expected]
    assert len({r["id"] for r in records}) == 40  # Ties at a page boundary are neither lost nor repeated.
    assert [len(r["decisions"]) for r in records if r["id"] == one_day[4]] == [2]


def test_a_page_costs_four_queries_whatever_its_rows(one_day: list[str]) -> None:
    with CaptureQueriesContext(connection) as queries:
        records = list(conversations._records_of(DAY, chunk_size=10))

    assert len(records) == 40
    # Four pages of turns, each with its context, decisions and audits, and the empty page that ends it (and on
    # SQLite the memory map turned off and on).
    selects = [q for q in queries.captured_queries if not q["sql"].startswith("PRAGMA")]
    assert len(selects) == 4 * 4 + 1


def test_the_export_file_holds_the_model_paths_lines(one_day: list[str], settings: Any, tmp_path: Any) -> None:
    settings.DATASET_EXPORT_DIR = str(tmp_path)
    before = [json.dumps(record, ensure_ascii=False) for record in _model_path()]

    result = conversations.export_conversations(DAY)

    assert result.turns == 40
    # Lines end at "\n" only (a U+2028 in a message stays raw, in both encoders).
    lines = result.path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 41
    assert lines[:-1] == [orjson.dumps(record) for record in _model_path()]
    # The lines before orjson, from these: the same values in the same key order. What differs is the form:
    # no space after "," and ":", and a float such as 1e-05 written 0.00001.
    assert [json.dumps(json.loads(line), ensure_ascii=False) for line in lines[:-1]] == before
    assert b'"metadata":{"z\xc3\xa9":[1,2.5,null,0.00001],' in lines[1]


def test_an_integer_orjson_cannot_encode_is_written_by_json(one_day: list[str], settings: Any, tmp_path: Any) -> None:
    settings.DATASET_EXPORT_DIR = str(tmp_path)
    ConversationTurn.objects.filter(id=one_day[0]).update(user_metadata={"big": 2**70})

    result = conversations.export_conversations(DAY)

    first = json.loads(result.path.read_bytes().split(b"\n")[0])
    assert first["user_message"]["metadata"] == {"big": 2**70}
    assert result.turns == 40


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("chunk_size", [3, 2000])
def test_the_pages_read_ahead_on_a_thread_give_the_same_records(one_day: list[str], chunk_size: int) -> None:
    expected = [json.dumps(r, ensure_ascii=False) for r in _model_path()]

    ahead = list(conversations._records_of(DAY, chunk_size=chunk_size, read_ahead=True))
    inline = list(conversations._records_of(DAY, chunk_size=chunk_size, read_ahead=False))

    assert [json.dumps(r, ensure_ascii=False) for r in ahead] == expected
    assert [json.dumps(r, ensure_ascii=False) for r in inline] == expected


@pytest.mark.django_db(transaction=True)
def test_an_error_on_the_read_ahead_thread_is_raised_to_the_reader(
    one_day: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(day: dt.date, chunk_size: int) -> Any:
        yield from conversations._keyset_pages(day, chunk_size)
        raise RuntimeError("database gone")

    monkeypatch.setattr(conversations, "_pages", broken)
    records = conversations._records_of(DAY, chunk_size=7, read_ahead=True)

    with pytest.raises(RuntimeError, match="database gone"):
        list(records)


@pytest.mark.django_db(transaction=True)
def test_a_reader_that_stops_early_stops_the_thread(one_day: list[str]) -> None:
    import threading

    records = conversations._records_of(DAY, chunk_size=1, read_ahead=True)
    assert next(records)["id"]
    records.close()

    assert not [t for t in threading.enumerate() if t.name == "conversation-export-read-ahead"]


def test_in_a_transaction_the_pages_are_read_inline(one_day: list[str]) -> None:
    # The test's transaction holds the rows: another connection would see none.
    assert len(list(conversations._records_of(DAY, chunk_size=7))) == 40
