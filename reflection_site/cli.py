"""What the management commands share: reading a time or a day, plain-text tables, one-line cuts. Django-free:
the caller passes the time zone and the clock (``timezone.get_current_timezone``, ``timezone.now``).

Decided (issue 20): one time syntax for every command and for recall's API. The copies accepted ISO 8601 only
(``gate``, ``guardian``), ISO or epoch milliseconds (``dataset``), or ISO and ``30d`` (recall, ``memory``);
now each accepts all of them. Eight digits are a date (``20260301``, as ``fromisoformat`` reads it), ten or
more are epoch milliseconds. A bare date as an upper bound can mean the end of that day (``end_of_day``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

# 30d, 12h, 2w, 6m (months of 30 days), 1y (365 days) before now.
RELATIVE = re.compile(r"^\s*(\d{1,6})\s*([hdwmy])\s*$", re.IGNORECASE)
UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}
TIME_HELP = (
    "30d, 12h, 2w, 6m, 1y, an ISO 8601 date or time such as 2026-02-03 or 2026-02-03T09:00, or epoch milliseconds"
)


def parse_time(
    value: str | dt.date | dt.datetime, *, tz: dt.tzinfo, now: dt.datetime, end_of_day: bool = False
) -> dt.datetime:
    """An aware time from ``30d`` / ``12h`` / ``2w`` / ``6m`` / ``1y`` (before ``now``), an ISO date or time
    (``Z`` allowed; without a zone it is in ``tz``), or epoch milliseconds. A bare date is its midnight, or
    with ``end_of_day`` the next midnight (``until=2026-02-03`` includes the 3rd). ValueError otherwise."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=tz)
    text = value.isoformat() if isinstance(value, dt.date) else str(value).strip()
    relative = RELATIVE.match(text)
    if relative:
        return now - dt.timedelta(days=int(relative.group(1)) * UNIT_DAYS[relative.group(2).lower()])
    try:
        if text.isdigit() and len(text) >= 10:
            return dt.datetime.fromtimestamp(int(text) / 1000, tz=dt.UTC)
        try:
            day = dt.date.fromisoformat(text)
        except ValueError:
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        else:
            moment = dt.datetime.combine(day + dt.timedelta(days=1) if end_of_day else day, dt.time())
    except (ValueError, OverflowError, OSError) as exc:
        raise ValueError(f"{text[:40]!r} is not a time: use {TIME_HELP}.") from exc
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=tz)


def parse_day(value: str | None, *, today: dt.date) -> dt.date:
    """``today`` (also for no value), ``yesterday`` or an ISO date; ValueError otherwise."""
    if not value or value == "today":
        return today
    if value == "yesterday":
        return today - dt.timedelta(days=1)
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a date: use YYYY-MM-DD, today or yesterday.") from exc


def time_argument(
    *, tz: Callable[[], dt.tzinfo], now: Callable[[], dt.datetime], end_of_day: bool = False
) -> Callable[[str], dt.datetime]:
    """An argparse ``type=`` that reads a time with ``parse_time`` when the command line is parsed; a bad value
    is reported with the option's name (a ``CommandError`` under ``call_command``)."""

    def time(value: str) -> dt.datetime:
        try:
            return parse_time(value, tz=tz(), now=now(), end_of_day=end_of_day)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    return time


def short(text: str | None, width: int) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``width`` characters with an ellipsis."""
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], *, right: Collection[int] = ()) -> str:
    """A plain-text table: headers, a rule, one line per row, columns as wide as their widest cell and two
    spaces apart; ``None`` is blank; the columns numbered in ``right`` (numbers) are right-aligned."""
    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *(line(row) for row in cells)])
