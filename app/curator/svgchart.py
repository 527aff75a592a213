"""Line charts as inline SVG: the overview's growth charts drawn in the page itself.

Why not matplotlib here: the overview must answer fast at any size, and a matplotlib figure
costs hundreds of milliseconds to draw (seconds on a loaded machine) where a few polylines
written as text cost well under one; inline, they need no second request and no script. The
data are the CSV download's, so the chart and its CSV cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

WIDTH, HEIGHT = 720, 170
LEFT, RIGHT, TOP, BOTTOM = 70, 110, 12, 26
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float]


def short(value: float) -> str:
    """A figure for an axis: 950, 12k, 3.4M, 1.2G."""
    for size, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def line_chart(title: str, labels: list[str], series: list[Series]) -> str:
    """An SVG line chart: one line per series over ``labels`` (the x axis, first and last
    shown), y from 0 to the largest value, a legend on the right."""
    top = max((v for s in series for v in s.values), default=0) or 1
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = inner_w / max(len(labels) - 1, 1)
    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}"'
        f' height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<rect x="{LEFT}" y="{TOP}" width="{inner_w}" height="{inner_h}" fill="#fff"'
        ' stroke="#c9d1db"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end">{short(top)}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + inner_h}" text-anchor="end">0</text>',
        f'<text x="{LEFT - 6}" y="{TOP + inner_h / 2}" text-anchor="end">{escape(title)}</text>',
    ]
    if labels:
        y = HEIGHT - 8
        out.append(f'<text x="{LEFT}" y="{y}">{escape(labels[0])}</text>')
        out.append(
            f'<text x="{LEFT + inner_w}" y="{y}" text-anchor="end">{escape(labels[-1])}</text>'
        )
    for n, s in enumerate(series):
        colour = COLOURS[n % len(COLOURS)]
        points = " ".join(
            f"{LEFT + i * step:.1f},{TOP + inner_h - v / top * inner_h:.1f}"
            for i, v in enumerate(s.values)
        )
        out.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>'
        )
        ly = TOP + 12 + 16 * n
        out.append(f'<line x1="{WIDTH - RIGHT + 8}" y1="{ly - 4}" x2="{WIDTH - RIGHT + 24}"'
                   f' y2="{ly - 4}" stroke="{colour}" stroke-width="2"/>')  # fmt: skip
        out.append(f'<text x="{WIDTH - RIGHT + 28}" y="{ly}">{escape(s.name)}</text>')
    out.append("</svg>")
    return "".join(out)


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
