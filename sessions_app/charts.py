"""Server-rendered SVG charts for the admin: no script, nothing loaded from a CDN.

Every text that reaches the SVG goes through ``format_html``, so labels are escaped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

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


def _n(value: float) -> str:
    return f"{value:.1f}"


def _nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 5 × 10^n that is at least ``value`` (so the axis reads well)."""
    if value <= 0:
        return 1
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def daily_decisions_svg(rows: Sequence[dict[str, Any]], *, width: int = 960, height: int = 280) -> SafeString:
    """Stacked bars, one per day (``rows`` as ``stats.daily_stats`` returns them), one colour per decision,
    with a y axis, a date every few bars, a legend and a tooltip (``<title>``) on every segment."""
    left, right, top, bottom = 44, 12, 16, 62
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(len(rows), 1)
    slot = plot_w / n
    bar_w = max(slot * 0.72, 1.0)
    peak = _nice_ceiling(max((row["total_decisions"] for row in rows), default=0))
    scale = plot_h / peak
    parts: list[str] = []
    parts.append(
        format_html(
            '<svg xmlns="http://www.w3.org/2000/svg" class="gate-chart" viewBox="0 0 {} {}" width="100%" '
            'role="img" aria-label="{}"><title>{}</title>',
            width,
            height,
            "Gate decisions per day, stacked by decision",
            "Gate decisions per day",
        )
    )
    # Horizontal grid lines and y labels at 0, 1/2 and the top.
    for fraction in (0, 0.5, 1):
        value = peak * fraction
        if value != int(value):
            continue  # Whole decisions only: a top of 1 gets no 0.5 line.
        y = top + plot_h - fraction * plot_h
        label = str(int(value))
        parts.append(
            format_html(
                '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="currentColor" stroke-opacity="0.18"/>'
                '<text x="{}" y="{}" font-size="11" text-anchor="end" fill="currentColor">{}</text>',
                left,
                _n(y),
                left + plot_w,
                _n(y),
                left - 6,
                _n(y + 4),
                label,
            )
        )
    label_every = max(1, round(n / 10))
    for index, row in enumerate(rows):
        x = left + index * slot + (slot - bar_w) / 2
        y = top + plot_h
        day = row.get("date")
        day_text = day.isoformat() if isinstance(day, dt.date) else str(day)
        for decision, field in COUNT_FIELDS.items():
            count = row.get(field) or 0
            if not count:
                continue
            h = count * scale
            y -= h
            parts.append(
                format_html(
                    '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {} {}</title></rect>',
                    _n(x),
                    _n(y),
                    _n(bar_w),
                    _n(h),
                    DECISION_COLOURS[decision],
                    day_text,
                    count,
                    decision,
                )
            )
        if index % label_every == 0 or index == n - 1:
            short = day.strftime("%b %d") if isinstance(day, dt.date) else day_text
            parts.append(
                format_html(
                    '<text x="{}" y="{}" font-size="10" text-anchor="middle" fill="currentColor">{}</text>',
                    _n(x + bar_w / 2),
                    top + plot_h + 14,
                    short,
                )
            )
    # Legend.
    legend_y = height - 18
    x = left
    for decision in COUNT_FIELDS:
        parts.append(
            format_html(
                '<rect x="{}" y="{}" width="10" height="10" fill="{}"/>'
                '<text x="{}" y="{}" font-size="11" fill="currentColor">{}</text>',
                x,
                legend_y - 9,
                DECISION_COLOURS[decision],
                x + 14,
                legend_y,
                decision,
            )
        )
        x += 14 + 8 * len(decision) + 18
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every part above was built by format_html.
