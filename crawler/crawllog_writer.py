"""crawl.log in Heritrix 3's 12 fields, and its negative fetch status codes.

Why Heritrix's format: NetarchiveSuite's post-processing, curators' scripts and every tool of the
field read it (stop reasons from ``-5003``/``Q:`` lines, duplicate counts from
``duplicate:digest``). One line per URI, written when the URI is finished, flushed at once so a
crash loses at most the line being written (a torn last line is cut on restart).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path

from harvestflow.formats.crawllog import parse_line
from harvestflow.formats.fields import MAX_MIME_CHARS, clean_field

__all__ = ["parse_line"]  # re-exported: the reports and the continuous crawl read with it

# Heritrix FetchStatusCodes used by the crawler
DNS_FAILED = -6
DNS_UNRESOLVABLE = -1
CONNECT_FAILED = -2
CONNECT_LOST = -3
TIMEOUT = -4
RUNTIME_ERROR = -5
UNFETCHABLE = -7
TOO_MANY_RETRIES = -8
TRAP = -4000
TOO_MANY_LINK_HOPS = -4001
TOO_MANY_EMBED_HOPS = -4002
OUT_OF_SCOPE = -5000
BLOCKED_BY_OPERATOR = -5001
BLOCKED_BY_PROCESSOR = -5002
BLOCKED_BY_QUOTA = -5003
BLOCKED_BY_RUNTIME_LIMIT = -5004
ROBOTS_PRECLUDED = -9998

# one annotation (an error message is part of some)
MAX_ANNOTATION_CHARS = 200


@dataclass
class LogEntry:
    status: int
    url: str
    hops: str = ""
    via: str | None = None
    mime: str = "-"
    size: int | None = None
    fetch_start: dt.datetime | None = None
    duration_ms: int | None = None
    digest: str | None = None
    seed: str | None = None
    annotations: list[str] = field(default_factory=list)
    thread: int = 0
    when: dt.datetime | None = None


def iso_ms(when: dt.datetime) -> str:
    when = when.astimezone(dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def format_line(e: LogEntry) -> str:
    """One crawl.log line (12 space-separated fields).

    Every value a server or a link could choose (URL, via, seed, MIME type, annotations built
    from error messages) goes through the one sanitiser, so no value can add, shift or forge a
    field or a line (harvestflow.formats.fields).
    """
    when = e.when or dt.datetime.now(dt.UTC)
    size = "-" if e.size is None else str(e.size)
    if e.fetch_start is not None:
        start = e.fetch_start.astimezone(dt.UTC)
        fetch = start.strftime("%Y%m%d%H%M%S") + f"{start.microsecond // 1000:03d}"
        fetch += f"+{e.duration_ms or 0}"
    else:
        fetch = "-"
    fields = [
        iso_ms(when),
        f"{e.status:>5}",
        f"{size:>10}",
        clean_field(e.url),
        e.hops or "-",
        clean_field(e.via),
        clean_field(e.mime, MAX_MIME_CHARS),
        f"#{e.thread:03d}",
        fetch,
        clean_field(e.digest),
        clean_field(e.seed),
        ",".join(clean_field(a, MAX_ANNOTATION_CHARS, extra=",") for a in e.annotations)
        if e.annotations
        else "-",
    ]
    return " ".join(fields)


def cut_torn_line(path: Path) -> None:
    """Remove a partial last line left by a crash (everything before it is kept)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("r+b") as fh:
        fh.seek(0, os.SEEK_END)
        end = fh.tell()
        pos = end
        while pos > 0:
            step = min(4096, pos)
            fh.seek(pos - step)
            chunk = fh.read(step)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                cut = pos - step + idx + 1
                if cut != end:
                    fh.truncate(cut)
                return
            pos -= step
        fh.truncate(0)


class CrawlLog:
    """Appends lines to logs/crawl.log."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cut_torn_line(self.path)
        self._fh = self.path.open("a", encoding="utf-8", buffering=1)

    def write(self, entry: LogEntry) -> None:
        self._fh.write(format_line(entry) + "\n")

    def close(self) -> None:
        self._fh.close()


# the header line of progress-statistics.log (Heritrix's columns)
PROGRESS_HEADER = (
    "           timestamp  discovered      queued  downloaded       doc/s(avg)  KB/s(avg)"
    "   dl-failures   busy-thread   mem-use-KB  heap-size-KB   congestion   max-depth"
    "   avg-depth"
)
