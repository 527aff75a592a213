"""PNG charts for the curator pages (matplotlib, Agg backend, rendered in memory).

Why PNG from the server: the pages stay plain HTML with no JavaScript library to ship, and
these charts need matplotlib's date axes (the daily QA report's bar charts are plain SVG,
harvestflow.formats.svgchart). Figures are built with the object API (``Figure``), not pyplot,
because pages are served from several threads at once.
"""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from typing import Any

import matplotlib.dates as mdates
from matplotlib.figure import Figure

from harvestflow.formats.stop_reasons import StopReason


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _time_axis(ax: Any, times: list[Any], min_span: timedelta) -> None:
    """Readable time ticks; a span shorter than ``min_span`` (one point, a short crawl) is
    widened around its middle, else matplotlib shows years around a single instant."""
    if times:
        first, last = min(times), max(times)
        if last - first < min_span:
            middle = first + (last - first) / 2
            ax.set_xlim(middle - min_span / 2, middle + min_span / 2)
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def domain_size_chart(name: str, history: list[dict[str, Any]]) -> bytes:
    """Bytes and objects per harvest of a domain over time; unfinished harvests in red."""
    fig = Figure(figsize=(8, 4.8))
    ax_bytes, ax_objects = fig.subplots(2, 1, sharex=True)
    times = [h["harvest_time"] for h in history]
    colors = [
        "tab:blue" if h["stopreason"] == StopReason.DOWNLOAD_COMPLETE else "tab:red"
        for h in history
    ]
    ax_bytes.plot(times, [h["bytecount"] for h in history], color="0.6", linewidth=1)
    ax_bytes.scatter(times, [h["bytecount"] for h in history], c=colors, zorder=3)
    ax_bytes.set_ylabel("bytes")
    ax_objects.plot(times, [h["objectcount"] for h in history], color="0.6", linewidth=1)
    ax_objects.scatter(times, [h["objectcount"] for h in history], c=colors, zorder=3)
    ax_objects.set_ylabel("objects")
    # a name is plain text: "$...$" in it must not be read as math text (which can fail)
    ax_bytes.set_title(
        f"{name}: size per harvest (red: stopped by a limit)", parse_math=False, usetex=False
    )
    if not history:
        ax_bytes.text(0.5, 0.5, "no harvest yet", ha="center", transform=ax_bytes.transAxes)
    ax_bytes.set_ylim(bottom=0)
    ax_objects.set_ylim(bottom=0)
    _time_axis(ax_objects, times, timedelta(days=2))
    fig.tight_layout()
    return _png(fig)


def progress_chart(job_id: int, samples: list[dict[str, Any]]) -> bytes:
    """Discovered, queued and downloaded URLs over a job's crawl (progress-statistics)."""
    fig = Figure(figsize=(8, 3.2))
    ax = fig.subplots()
    times: list[Any] = [datetime.fromisoformat(s["time"].replace("Z", "+00:00")) for s in samples]
    few = len(samples) < 50  # a short crawl has one or two samples: show them as dots
    for key in ("discovered", "queued", "downloaded"):
        ax.plot(times, [s[key] for s in samples], marker="o" if few else None, ms=5, label=key)
    ax.set_title(f"job {job_id}: crawl progress", parse_math=False, usetex=False)
    ax.set_ylabel("URLs")
    ax.legend(loc="upper left")
    _time_axis(ax, times, timedelta(minutes=1))
    ax.set_ylim(bottom=0)
    fig.tight_layout()
    return _png(fig)
