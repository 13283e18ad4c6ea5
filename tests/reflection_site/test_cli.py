"""What the management commands share (reflection_site.cli): times, days, tables and one-line cuts."""

from __future__ import annotations

import argparse
import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from reflection_site.cli import parse_day, parse_time, short, table, time_argument

BERLIN = ZoneInfo("Europe/Berlin")
NOW = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("30d", NOW - dt.timedelta(days=30)),
        (" 12H ", NOW - dt.timedelta(hours=12)),
        ("2w", NOW - dt.timedelta(days=14)),
        ("6m", NOW - dt.timedelta(days=180)),
        ("1y", NOW - dt.timedelta(days=365)),
        ("2026-03-01", dt.datetime(2026, 3, 1, tzinfo=BERLIN)),
        ("20260301", dt.datetime(2026, 3, 1, tzinfo=BERLIN)),  # eight digits are a date, not epoch ms
        ("2026-03-01T09:00", dt.datetime(2026, 3, 1, 9, tzinfo=BERLIN)),
        ("2026-03-01T09:00Z", dt.datetime(2026, 3, 1, 9, tzinfo=dt.UTC)),
        ("2026-03-01T09:00+02:00", dt.datetime(2026, 3, 1, 7, tzinfo=dt.UTC)),
        ("1772352000000", dt.datetime(2026, 3, 1, 8, tzinfo=dt.UTC)),  # epoch milliseconds
    ],
)
def test_every_command_reads_the_same_times(value, expected):
    parsed = parse_time(value, tz=BERLIN, now=NOW)
    assert parsed == expected and parsed.tzinfo is not None


def test_a_bare_date_as_an_upper_bound_includes_the_day():
    assert parse_time("2026-03-01", tz=BERLIN, now=NOW, end_of_day=True) == dt.datetime(2026, 3, 2, tzinfo=BERLIN)
    assert parse_time(dt.date(2026, 3, 1), tz=BERLIN, now=NOW, end_of_day=True) == dt.datetime(
        2026, 3, 2, tzinfo=BERLIN
    )
    assert parse_time("2026-03-01T00:00", tz=BERLIN, now=NOW, end_of_day=True) == dt.datetime(2026, 3, 1, tzinfo=BERLIN)


def test_datetimes_pass_through_and_naive_ones_get_the_zone():
    aware = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert parse_time(aware, tz=BERLIN, now=NOW) is aware
    assert parse_time(dt.datetime(2026, 1, 1), tz=BERLIN, now=NOW) == dt.datetime(2026, 1, 1, tzinfo=BERLIN)


@pytest.mark.parametrize("value", ["soon", "yesterday-ish", "30x", "2026-13-01", "123456789", "99999999999999999999"])
def test_anything_else_is_not_a_time(value):
    with pytest.raises(ValueError, match="is not a time: use 30d"):
        parse_time(value, tz=BERLIN, now=NOW)


def test_time_argument_reports_a_bad_value_as_argparse_does():
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--since", type=time_argument(tz=lambda: BERLIN, now=lambda: NOW))
    assert parser.parse_args(["--since", "7d"]).since == NOW - dt.timedelta(days=7)
    with pytest.raises(argparse.ArgumentError, match="'soon' is not a time"):
        parser.parse_args(["--since", "soon"])


def test_days():
    today = dt.date(2026, 3, 10)
    assert parse_day(None, today=today) == today
    assert parse_day("today", today=today) == today
    assert parse_day("yesterday", today=today) == dt.date(2026, 3, 9)
    assert parse_day("2026-02-28", today=today) == dt.date(2026, 2, 28)
    with pytest.raises(ValueError, match="is not a date"):
        parse_day("someday", today=today)


def test_short_puts_text_on_one_line_and_cuts_it_with_an_ellipsis():
    assert short("  one\n two  ", 20) == "one two"
    assert short("abcdefghij", 10) == "abcdefghij"
    assert short("abcdefghijk", 10) == "abcdefghi…"
    assert short(None, 5) == ""


def test_table_columns_are_as_wide_as_their_widest_cell():
    rendered = table([["01J", 3, None], ["01JABC", 12, "x"]], ["ID", "N", "NOTE"], right={1})
    assert rendered.splitlines() == [
        "ID       N  NOTE",
        "------  --  ----",
        "01J      3",
        "01JABC  12  x",
    ]
    assert table([], ["ID", "STATUS"]) == "ID  STATUS\n--  ------"
