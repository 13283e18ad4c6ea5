"""The gate's chart for the admin: decisions per day, stacked by decision, drawn by ``reflection_site.charts``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reflection_site.charts import Series, Svg, stacked_bars
from sessions_app.stats import COUNT_FIELDS

# One colour per decision, readable on white and in the admin's dark mode.
DECISION_COLOURS: dict[str, str] = {
    "NO_WRITE": "#9aa5b1",
    "UPDATE_MEMORY": "#3b82f6",
    "UPDATE_USER": "#10b981",
    "UPDATE_SOUL": "#f59e0b",
    "UPDATE_IDENTITY": "#8b5cf6",
    "UPDATE_TOOLS": "#ef4444",
}


def daily_decisions_svg(rows: Sequence[dict[str, Any]], *, width: int = 960, height: int = 280) -> Svg:
    """Stacked bars, one per day (``rows`` as ``stats.daily_stats`` returns them), one colour per decision,
    with a y axis, a date every few bars, a legend and a tooltip (``<title>``) on every segment."""
    days = [
        (row.get("date"), {str(decision): row.get(field) for decision, field in COUNT_FIELDS.items()}) for row in rows
    ]
    series = [Series(str(decision), str(decision), DECISION_COLOURS[decision]) for decision in COUNT_FIELDS]
    return stacked_bars(
        days,
        series,
        title="Gate decisions per day",
        description="Gate decisions per day, stacked by decision",
        css_class="gate-chart",
        width=width,
        height=height,
    )
