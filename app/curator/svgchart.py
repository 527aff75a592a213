"""The overview's growth charts, drawn in the page itself as inline SVG.

Why not matplotlib here: the overview must answer fast at any size, and a matplotlib figure
costs hundreds of milliseconds to draw (seconds on a loaded machine) where a few polylines
written as text (harvestflow.formats.svgchart) cost well under one; inline, they need no second
request and no script. The data are the CSV download's, so the chart and its CSV cannot disagree.
"""

from __future__ import annotations

from typing import Any

from harvestflow.formats.svgchart import Series, line_chart


def growth_charts(rows: list[dict[str, Any]]) -> list[str]:
    """Captures per day and bytes per day, one line per channel kind (harvest.growth's rows)."""
    days = list(dict.fromkeys(str(r["day"]) for r in rows))
    kinds = list(dict.fromkeys(r["channel"] for r in rows))
    charts = []
    for key, title in (("captures", "captures"), ("bytes", "bytes")):
        series = [
            Series(kind, [float(r[key]) for r in rows if r["channel"] == kind]) for kind in kinds
        ]
        charts.append(line_chart(title, days, series))
    return charts
