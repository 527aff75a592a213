"""Charts as SVG text: line charts (the curator overview's growth) and horizontal bar charts
(the daily QA report's figures), written directly, without a plotting library.

Why not matplotlib: importing it and laying out one figure costs ~0.1-0.3 CPU-second (seconds
on a loaded machine), more than the daily QA's whole figures; a few rectangles and polylines
written as text cost well under a millisecond, scale in the browser, and can be checked by
parsing them (each bar carries its figure in ``data-value``). Every text is escaped and freed
of the characters XML forbids, so a hostile host name can neither inject markup nor make the
file unreadable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 720, 170
LEFT, RIGHT, TOP, BOTTOM = 70, 110, 12, 26
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")
SVG_NS = "http://www.w3.org/2000/svg"

# bar charts: one row per bar, labels on the left (cut to LABEL_CHARS), value after the bar
BAR_WIDTH, BAR_ROW, BAR_TOP, BAR_BOTTOM = 640, 18, 30, 34
LABEL_CHARS = 40
CHAR_PX = 6.5  # ~width of one character at the 11px font the charts use
BAR_COLOUR = "#4a7ab5"

# code points XML 1.0 does not allow in a document (a browser refuses the whole file)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float]


def text(value: object) -> str:
    """``value`` as SVG/XML character data or attribute value: escaped, XML-legal."""
    return escape(_NOT_XML.sub("\ufffd", str(value)))


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
        f' height="{HEIGHT}" xmlns="{SVG_NS}"><title>{text(title)}</title>',
        f'<rect x="{LEFT}" y="{TOP}" width="{inner_w}" height="{inner_h}" fill="#fff"'
        ' stroke="#c9d1db"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end">{short(top)}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + inner_h}" text-anchor="end">0</text>',
        f'<text x="{LEFT - 6}" y="{TOP + inner_h / 2}" text-anchor="end">{text(title)}</text>',
    ]
    if labels:
        y = HEIGHT - 8
        out.append(f'<text x="{LEFT}" y="{y}">{text(labels[0])}</text>')
        out.append(
            f'<text x="{LEFT + inner_w}" y="{y}" text-anchor="end">{text(labels[-1])}</text>'
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
        out.append(f'<text x="{WIDTH - RIGHT + 28}" y="{ly}">{text(s.name)}</text>')
    out.append("</svg>")
    return "".join(out)


def _figure(value: float, digits: int = 4) -> str:
    """A bar's figure: integers as integers, others to ``digits`` significant digits (beside
    the bar) or exactly (``digits`` 17: ``data-value``, read back as the same float)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.{digits}g}"


def bar_chart(title: str, labels: list[str], values: list[float], unit: str) -> str:
    """A standalone SVG document: one horizontal bar per label, top to bottom in the given
    order, lengths proportional to ``values`` (from 0 to the largest), each bar's figure
    written after it (4 significant digits) and kept exactly in its ``data-value`` attribute;
    ``unit`` names the axis.
    """
    if len(labels) != len(values):
        raise ValueError(f"bar chart {title!r}: {len(labels)} labels for {len(values)} values")
    shown = [lab if len(lab) <= LABEL_CHARS else lab[: LABEL_CHARS - 1] + "…" for lab in labels]
    left = 12 + int(CHAR_PX * max((len(s) for s in shown), default=0))
    right = 12 + int(CHAR_PX * max((len(_figure(v)) for v in values), default=1))
    inner = max(BAR_WIDTH - left - right, 80)
    width = left + inner + right
    height = BAR_TOP + BAR_ROW * max(len(values), 1) + BAR_BOTTOM
    top = max((float(v) for v in values), default=0.0)
    scale = inner / top if top > 0 else 0.0
    out = [
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<svg xmlns="{SVG_NS}" class="chart" role="img" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f"<title>{text(title)}</title>",
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" font-size="13">{text(title)}'
        "</text>",
    ]
    for i, (label, full, value) in enumerate(zip(shown, labels, values, strict=True)):
        y = BAR_TOP + i * BAR_ROW
        figure = _figure(value)
        w = max(float(value), 0.0) * scale
        out.append(
            f"<g><title>{text(full)}: {figure} {text(unit)}</title>"
            f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{text(label)}</text>'
            f'<rect class="bar" x="{left}" y="{y + 2}" width="{w:.2f}" height="{BAR_ROW - 4}"'
            f' fill="{BAR_COLOUR}" data-label="{text(full)}" data-value="{_figure(value, 17)}"/>'
            f'<text x="{left + w + 4:.2f}" y="{y + 12}">{figure}</text></g>'
        )
    if not values:
        out.append(f'<text x="{left}" y="{BAR_TOP + 12}">no data</text>')
    axis_y = height - BAR_BOTTOM + 4
    out.append(
        f'<line x1="{left}" y1="{axis_y}" x2="{left + inner}" y2="{axis_y}" stroke="#888"/>'
        f'<text x="{left}" y="{axis_y + 14}">0</text>'
        f'<text x="{left + inner}" y="{axis_y + 14}" text-anchor="end">{short(top)}</text>'
        f'<text x="{left + inner / 2:.0f}" y="{axis_y + 26}" text-anchor="middle">{text(unit)}'
        "</text></svg>\n"
    )
    return "".join(out)
