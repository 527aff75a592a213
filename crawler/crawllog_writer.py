"""crawl.log in Heritrix 3's 12 fields (its status codes: harvestflow/formats/fetch_status.py).

Why Heritrix's format: NetarchiveSuite's post-processing, curators' scripts and every tool of the
field read it (stop reasons from ``-5003``/``Q:`` lines, duplicate counts from
``duplicate:digest``). One line per URI, written when the URI is finished, one write each so a
crash loses at most the line being written (a torn last line is cut on restart, and the line of
a URL whose done mark was committed is written again: :mod:`crawler.context`).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path

from harvestflow.formats.crawllog import CrawlLogLine, fetch_field, iso_ms


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


def format_line(e: LogEntry) -> str:
    """One crawl.log line (12 space-separated fields), written by the one crawl.log model
    (:class:`harvestflow.formats.crawllog.CrawlLogLine`, which escapes every value)."""
    return CrawlLogLine(
        time=iso_ms(e.when or dt.datetime.now(dt.UTC)),
        status=e.status,
        size=e.size,
        url=e.url,
        hops=e.hops,
        via=e.via,
        mime=e.mime,
        thread=f"#{e.thread:03d}",
        fetch=fetch_field(e.fetch_start, e.duration_ms),
        digest=e.digest,
        seed=e.seed,
        annotations=tuple(e.annotations),
    ).format()


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
    """Appends lines to logs/crawl.log, one write per line, and knows the file's size.

    The size is what :meth:`missing` needs: a URL's done mark is committed with its line and the
    offset the line goes to, so that a resume can tell whether a kill fell between the two.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cut_torn_line(self.path)
        self._fh = self.path.open("ab", buffering=0)
        self.size = os.fstat(self._fh.fileno()).st_size
        self._held: list[str] | None = None  # lines kept back by hold()

    def write(self, entry: LogEntry) -> None:
        self.write_line(format_line(entry))

    def write_line(self, line: str) -> None:
        """Append ``line`` (or several, joined by newlines) in one write; kept back while held."""
        if self._held is not None:
            self._held.append(line)
            return
        data = line.encode("utf-8") + b"\n"
        self._fh.write(data)
        self.size += len(data)

    def hold(self) -> None:
        """Keep the lines written from now on until :meth:`release`.

        Why: the lines a page's links add (refusals: ``-5003``, out of scope…) belong to the
        transaction that marks the page done; written at once, a kill before its commit left
        them in the file and the resumed crawl, parsing the page again, wrote them twice.
        """
        if self._held is None:
            self._held = []

    def release(self) -> list[str]:
        """The lines kept back since :meth:`hold` (written from now on as they come)."""
        held, self._held = self._held or [], None
        return held

    def missing(self, offset: int, text: str) -> str | None:
        """The lines of ``text`` (newline-separated) the file lacks at byte ``offset``, or None.

        The file holds a first part of them when a kill tore the one write they went in (the
        torn line is cut when the file is opened); anything else there means none of them."""
        lines = text.split("\n")
        with self.path.open("rb") as fh:
            fh.seek(offset)
            there = fh.read(len(text.encode("utf-8")) + 1)
        done = 0
        for line in lines:
            data = line.encode("utf-8") + b"\n"
            if not there.startswith(data):
                break
            there = there[len(data) :]
            done += 1
        return None if done == len(lines) else "\n".join(lines[done:])

    def close(self) -> None:
        for line in self.release():  # a page's lines whose commit never came: as before
            self.write_line(line)
        self._fh.close()


# the header line of progress-statistics.log (Heritrix's columns)
PROGRESS_HEADER = (
    "           timestamp  discovered      queued  downloaded       doc/s(avg)  KB/s(avg)"
    "   dl-failures   busy-thread   mem-use-KB  heap-size-KB   congestion   max-depth"
    "   avg-depth"
)
