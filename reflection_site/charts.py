"""Server-rendered SVG charts for the admin: stacked bars per day, horizontal bars, a histogram and lines.
No script, nothing from a CDN. Django-free: every text is escaped here and the result is an ``Svg``, a string
that templates and ``format_html`` take as safe (it has ``__html__``, the convention Django and Jinja share).

Decided (issue 20): the gate's and the learning guardrails' stacked-bar charts were one chart drawn twice with
drifted details; ``stacked_bars`` draws both as the gate's did (y labels only at whole counts, a date under
about every tenth bar, the legend 8 px a character), each caller naming its series, title and CSS class.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#417690", "#79aec8", "#e1a95f", "#8cb369", "#bc4b51", "#5b8e7d", "#9a8c98", "#f4a259")
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


class Svg(str):
    """SVG markup built from numbers and escaped text only: safe to put in a page as it is."""

    def __html__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Series:
    """One stacked series: ``key`` in each day's counts, ``label`` in the legend and tooltips, its colour."""

    key: str
    label: str
    colour: str


def nice_ceiling(value: float) -> int:
    """The smallest of 1, 2, 5 × 10^n that is at least ``value`` (so the axis reads well)."""
    if value <= 0:
        return 1
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def _n(value: float) -> str:
    return f"{value:.1f}"


def _number(value: float) -> str:
    return f"{value:.3f}" if isinstance(value, float) and not value.is_integer() else f"{int(value)}"


def _day_text(day: dt.date | str) -> str:
    return day.isoformat() if isinstance(day, dt.date) else str(day)


def stacked_bars(
    days: Sequence[tuple[dt.date | str, Mapping[str, int | None]]],
    series: Sequence[Series],
    *,
    title: str,
    description: str,
    css_class: str,
    width: int = 960,
    height: int = 280,
) -> Svg:
    """Stacked bars, one per ``(day, counts)``, one colour per series, with a y axis, a date under about every
    tenth bar (and the last), a legend and a tooltip (``<title>``) on every segment. ``description`` is the
    chart's accessible name (``aria-label``), ``title`` its tooltip."""
    left, right, top, bottom = 44, 12, 16, 62
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(len(days), 1)
    slot = plot_w / n
    bar_w = max(slot * 0.72, 1.0)
    peak = nice_ceiling(max((sum(counts.get(s.key) or 0 for s in series) for _, counts in days), default=0))
    scale = plot_h / peak
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{escape(css_class)}" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-label="{escape(description)}"><title>{escape(title)}</title>'
    ]
    for fraction in (0, 0.5, 1):
        value = peak * fraction
        if value != int(value):
            continue  # Whole counts only: a top of 1 gets no 0.5 line.
        y = top + plot_h - fraction * plot_h
        parts.append(
            f'<line x1="{left}" y1="{_n(y)}" x2="{left + plot_w}" y2="{_n(y)}" stroke="currentColor" '
            f'stroke-opacity="0.18"/><text x="{left - 6}" y="{_n(y + 4)}" font-size="11" text-anchor="end" '
            f'fill="currentColor">{int(value)}</text>'
        )
    label_every = max(1, round(n / 10))
    for index, (day, counts) in enumerate(days):
        x = left + index * slot + (slot - bar_w) / 2
        y = top + plot_h
        for s in series:
            count = counts.get(s.key) or 0
            if not count:
                continue
            h = count * scale
            y -= h
            parts.append(
                f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(bar_w)}" height="{_n(h)}" fill="{escape(s.colour)}">'
                f"<title>{escape(_day_text(day))}: {count} {escape(s.label)}</title></rect>"
            )
        if index % label_every == 0 or index == n - 1:
            label = day.strftime("%b %d") if isinstance(day, dt.date) else str(day)
            parts.append(
                f'<text x="{_n(x + bar_w / 2)}" y="{top + plot_h + 14}" font-size="10" text-anchor="middle" '
                f'fill="currentColor">{escape(label)}</text>'
            )
    legend_y, x = height - 18, left
    for s in series:
        parts.append(
            f'<rect x="{x}" y="{legend_y - 9}" width="10" height="10" fill="{escape(s.colour)}"/>'
            f'<text x="{x + 14}" y="{legend_y}" font-size="11" fill="currentColor">{escape(s.label)}</text>'
        )
        x += 14 + 8 * len(s.label) + 18
    parts.append("</svg>")
    return Svg("".join(parts))


def _svg(width: int, height: int, body: list[str], title: str) -> Svg:
    return Svg(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}" class="reflection-chart">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _heading(title: str) -> str:
    return f'<text x="0" y="14" {FONT} font-weight="bold">{escape(title)}</text>'


def bar_chart(rows: Sequence[tuple[str, float]], *, title: str, width: int = 420, bar_height: int = 18) -> Svg:
    """Horizontal bars, one per (label, value), with the value at the end of the bar."""
    label_w, gap, top = 150, 6, 22
    height = top + len(rows) * (bar_height + gap) + 4
    peak = max([value for _, value in rows] + [1])
    span = width - label_w - 50
    body = [_heading(title)]
    for i, (label, value) in enumerate(rows):
        y = top + i * (bar_height + gap)
        w = 0 if not value else max(1, round(span * value / peak))
        color = PALETTE[i % len(PALETTE)]
        body.append(f'<text x="{label_w - 6}" y="{y + bar_height - 5}" {FONT} text-anchor="end">{escape(label)}</text>')
        body.append(f'<rect x="{label_w}" y="{y}" width="{w}" height="{bar_height}" fill="{color}" rx="2"/>')
        body.append(f'<text x="{label_w + w + 4}" y="{y + bar_height - 5}" {FONT}>{escape(_number(value))}</text>')
    return _svg(width, height, body, title)


def histogram(buckets: Sequence[tuple[str, int]], *, title: str, width: int = 420, height: int = 170) -> Svg:
    """Vertical bars for ordered buckets (label under each bar, count above)."""
    left, bottom, top = 8, 30, 24
    n = max(1, len(buckets))
    slot = (width - 2 * left) / n
    peak = max([count for _, count in buckets] + [1])
    plot_h = height - bottom - top
    body = [_heading(title)]
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
) -> Svg:
    """One line per series over time (y from 0 to ``y_max``), with a legend; points are marked."""
    left, right, top, bottom = 40, 10, 26, 40
    points = [t for values in series.values() for t, _ in values]
    body = [_heading(title)]
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
