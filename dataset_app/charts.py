"""The dataset admin's charts (a histogram of quality, bars of types and statuses, accuracy over time): drawn by
``reflection_site.charts``, the one chart module, under the names the dataset admin calls."""

from __future__ import annotations

from reflection_site.charts import bar_chart, histogram, line_chart

__all__ = ["bar_chart", "histogram", "line_chart"]
