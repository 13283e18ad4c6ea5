"""Time ranges in facts ("since March", "until 2025", "from May to July", "自三月起") become the recall index's
valid_from / valid_until, a missing year taken from the daily log's day."""

from __future__ import annotations

import datetime as dt

import pytest

from guardian_app.models import MemoryChunk
from guardian_app.recall.index import index_workspace
from guardian_app.recall.retain import parse_time_range

DAY = dt.date(2025, 11, 27)
D = dt.date


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Lives in Lisbon since March.", (D(2025, 3, 1), None)),
        ("Since December she works remotely.", (D(2024, 12, 1), None)),  # a start after the log's day: last year
        ("Works at Acme until 2025.", (None, D(2025, 12, 31))),
        ("The lease runs until 31 March 2026.", (None, D(2026, 3, 31))),
        ("Until February the office is closed.", (None, D(2026, 2, 28))),  # an end before the log's day: next year
        ("Was in Berlin from May to July.", (D(2025, 5, 1), D(2025, 7, 31))),
        ("From 2019 to 2021 at Google.", (D(2019, 1, 1), D(2021, 12, 31))),
        ("In Marrakech (Nov 27 - Dec 1) for Andy's birthday.", (D(2025, 11, 27), D(2025, 12, 1))),
        ("Rome, Nov 27-30.", (D(2025, 11, 27), D(2025, 11, 30))),
        ("On the team since 2023-04.", (D(2023, 4, 1), None)),
        ("自三月起在上海工作。", (D(2025, 3, 1), None)),
        ("从5月到7月在北京。", (D(2025, 5, 1), D(2025, 7, 31))),
        ("2025年11月27日至12月1日在马拉喀什。", (D(2025, 11, 27), D(2025, 12, 1))),
        ("直到2026年为止住在杭州。", (None, D(2026, 12, 31))),
        ("We may go to the park.", (None, None)),
        ("Fixed it in 10 minutes; version 1.2 - 3 changes.", (None, None)),
        ("Met Peter on the 2nd floor.", (None, None)),
    ],
)
def test_time_ranges_are_parsed(text, expected):
    assert parse_time_range(text, DAY) == expected


@pytest.mark.django_db
def test_the_index_stores_a_facts_range(reflect_log, workspace):
    day = dt.date(2025, 11, 27)
    reflect_log(
        "- W @Peter: Lives in Lisbon since March.",
        "- W @Peter: In Marrakech (Nov 27 - Dec 1) for Andy's birthday.",
        "- B @warelay: I fixed the Baileys crash.",
        day=day,
    )

    index_workspace()

    rows = {
        c.content: (c.valid_from, c.valid_until)
        for c in MemoryChunk.objects.filter(path="memory/2025-11-27.md", kind__isnull=False)
    }
    assert rows["Lives in Lisbon since March."] == (D(2025, 3, 1), None)
    assert rows["In Marrakech (Nov 27 - Dec 1) for Andy's birthday."] == (D(2025, 11, 27), D(2025, 12, 1))
    assert rows["I fixed the Baileys crash."] == (None, None)
