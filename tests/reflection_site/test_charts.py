"""The admin's SVG charts (reflection_site.charts): escaped, safe in a template, one stacked-bar chart."""

from __future__ import annotations

import datetime as dt

from django.template import Context, Template
from django.utils.html import format_html

from reflection_site.charts import Series, Svg, bar_chart, histogram, line_chart, nice_ceiling, stacked_bars

SERIES = [Series("accepted", "accepted", "#10b981"), Series("rejected", "rejected <b>", "#9aa5b1")]


def _stacked(days):
    return stacked_bars(days, SERIES, title="Per day", description="Per day, stacked", css_class="learning-chart")


def test_nice_ceilings():
    assert [nice_ceiling(v) for v in (0, 1, 3, 7, 10, 11, 99, 101)] == [1, 1, 5, 10, 10, 20, 100, 200]


def test_stacked_bars_draw_a_segment_per_count_with_a_tooltip():
    svg = _stacked([(dt.date(2026, 6, 29), {"accepted": 1}), (dt.date(2026, 6, 30), {"accepted": 3, "rejected": 2})])
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" class="learning-chart"') and svg.endswith("</svg>")
    assert "2026-06-30: 3 accepted" in svg and "2026-06-30: 2 rejected &lt;b&gt;" in svg
    assert svg.count("<rect") == 3 + len(SERIES)  # segments and the legend's swatches
    assert ">Jun 30</text>" in svg


def test_stacked_bars_label_whole_counts_only_and_escape_odd_days():
    svg = _stacked([('<b onload="x">', {"accepted": 1})])
    assert "&lt;b onload=&quot;x&quot;&gt;" in svg and "<b " not in svg
    assert ">0.5<" not in svg and ">1</text>" in svg  # a top of 1 gets no 0.5 line


def test_no_days_is_still_a_chart():
    svg = _stacked([])
    assert svg.count("<rect") == len(SERIES)


def test_a_chart_is_safe_in_a_template_and_in_format_html():
    svg = bar_chart([("<script>", 2.5), ("b", 1)], title="T & U")
    assert isinstance(svg, Svg) and "&lt;script&gt;" in svg and "T &amp; U" in svg
    assert Template("{{ chart }}").render(Context({"chart": svg})) == svg
    assert format_html("<div>{}</div>", svg) == f"<div>{svg}</div>"


def test_histogram_and_line_chart():
    assert histogram([("0.0", 2), ("0.5", 0)], title="Quality").count("<rect") == 2
    empty = line_chart({}, title="Accuracy over time")
    assert "No runs yet." in empty
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    lines = line_chart({"gate-v1": [(t0, 0.5), (t0 + dt.timedelta(days=1), 0.75)]}, title="Accuracy")
    assert "<polyline" in lines and lines.count("<circle") == 2 and "2026-01-02 00:00" in lines
