"""Small server-rendered SVG charts for the admin: bars, a histogram and lines. Nothing from a CDN.

Every label is escaped; the SVG is built from numbers and escaped text only, so it is safe to mark safe.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ("#417690", "#79aec8", "#e1a95f", "#8cb369", "#bc4b51", "#5b8e7d", "#9a8c98", "#f4a259")
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def _svg(width: int, height: int, body: list[str], title: str) -> SafeString:
    return mark_safe(  # noqa: S308 - numbers and escaped text only
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}" class="reflection-chart">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def bar_chart(rows: Sequence[tuple[str, float]], *, title: str, width: int = 420, bar_height: int = 18) -> SafeString:
    """Horizontal bars, one per (label, value), with the value at the end of the bar."""
    label_w, gap, top = 150, 6, 22
    height = top + len(rows) * (bar_height + gap) + 4
    peak = max([value for _, value in rows] + [1])
    span = width - label_w - 50
    body = [f'<text x="0" y="14" {FONT} font-weight="bold">{escape(title)}</text>']
    for i, (label, value) in enumerate(rows):
        y = top + i * (bar_height + gap)
        w = 0 if not value else max(1, round(span * value / peak))
        color = PALETTE[i % len(PALETTE)]
        body.append(f'<text x="{label_w - 6}" y="{y + bar_height - 5}" {FONT} text-anchor="end">{escape(label)}</text>')
        body.append(f'<rect x="{label_w}" y="{y}" width="{w}" height="{bar_height}" fill="{color}" rx="2"/>')
        body.append(f'<text x="{label_w + w + 4}" y="{y + bar_height - 5}" {FONT}>{escape(_number(value))}</text>')
    return _svg(width, height, body, title)


def histogram(buckets: Sequence[tuple[str, int]], *, title: str, width: int = 420, height: int = 170) -> SafeString:
    """Vertical bars for ordered buckets (label under each bar, count above)."""
    left, bottom, top = 8, 30, 24
    n = max(1, len(buckets))
    slot = (width - 2 * left) / n
    peak = max([count for _, count in buckets] + [1])
    plot_h = height - bottom - top
    body = [f'<text x="0" y="14" {FONT} font-weight="bold">{escape(title)}</text>']
    body.append(f'<line x1="{left}" y1="{height - bottom}" x2="{width - left}" y2="{height - bottom}" stroke="#999"/>')
    for i, (label, count) in enumerate(buckets):
        h = 0 if not count else max(1, round(plot_h * count / peak))
        x = left + i * slot
        body.append(
            f'<rect x="{x + 2:.1f}" y="{height - bottom - h}" width="{slot - 4:.1f}" height="{h}" fill="{PALETTE[0]}"/>'
        )
        body.append(
            f'<text x="{x + slot / 2:.1f}" y="{height - bottom - h - 3}" {FONT} text-anchor="middle">{count}</text>'
        )
        body.append(
            f'<text x="{x + slot / 2:.1f}" y="{height - bottom + 14}" {FONT} text-anchor="middle">{escape(label)}</text>'
        )
    return _svg(width, height, body, title)


def line_chart(
    series: dict[str, Sequence[tuple[dt.datetime, float]]],
    *,
    title: str,
    width: int = 640,
    height: int = 220,
    y_max: float = 1.0,
) -> SafeString:
    """One line per series over time (y from 0 to ``y_max``), with a legend; points are marked."""
    left, right, top, bottom = 40, 10, 26, 40
    points = [t for values in series.values() for t, _ in values]
    body = [f'<text x="0" y="14" {FONT} font-weight="bold">{escape(title)}</text>']
    plot_w, plot_h = width - left - right, height - top - bottom
    for frac in (0, 0.25, 0.5, 0.75, 1):
        y = top + plot_h * (1 - frac)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#ddd"/>')
        body.append(f'<text x="{left - 4}" y="{y + 4:.1f}" {FONT} text-anchor="end">{frac * y_max:.2f}</text>')
    if not points:
        body.append(f'<text x="{left + 8}" y="{top + plot_h / 2:.1f}" {FONT}>No runs yet.</text>')
        return _svg(width, height, body, title)
    start, end = min(points), max(points)
    seconds = max((end - start).total_seconds(), 1.0)

    def xy(t: dt.datetime, v: float) -> tuple[float, float]:
        x = left + plot_w * ((t - start).total_seconds() / seconds if end != start else 0.5)
        y = top + plot_h * (1 - max(0.0, min(v, y_max)) / y_max)
        return x, y

    for i, (name, values) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        coords = [xy(t, v) for t, v in sorted(values)]
        if len(coords) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
            body.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in coords:
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')
        legend_y = height - 8
        legend_x = left + i * 160
        body.append(f'<rect x="{legend_x}" y="{legend_y - 9}" width="10" height="10" fill="{color}"/>')
        body.append(f'<text x="{legend_x + 14}" y="{legend_y}" {FONT}>{escape(name[:24])}</text>')
    body.append(f'<text x="{left}" y="{height - bottom + 14}" {FONT}>{start:%Y-%m-%d %H:%M}</text>')
    if end != start:
        body.append(
            f'<text x="{width - right}" y="{height - bottom + 14}" {FONT} text-anchor="end">{end:%Y-%m-%d %H:%M}</text>'
        )
    return _svg(width, height, body, title)


def _number(value: float) -> str:
    return f"{value:.3f}" if isinstance(value, float) and not value.is_integer() else f"{int(value)}"
