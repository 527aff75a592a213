"""Near-real-time index: each closed WARC of a continuous run, replayable minutes after the fetch.

Why a small live collection: the nightly merge makes captures findable the next day; a news
archive wants them at once. While a bounded run crawls, a :class:`LiveWatcher` thread picks up
each data WARC as soon as the crawler closes it (the writer renames ``*.warc.gz.open`` to its
final name only once the file is complete, so a final name is the close event, seen across the
crawler's process boundary; in-process writers can use ``RotatingWarcWriter(on_close=...)``
with :func:`index_closed_warcs` directly); every closed data WARC is linked into
``<live>/warcs/`` and indexed with the chain's own CDX code into ``<live>/index/<file>.cdxj``
(sorted in byte order, written through a temporary name). pywb reads a directory of CDXJ files
as one index, so a capture is replayable as soon as its file's CDXJ lands. The WARCs still go
through the regular indexing chain later; the live index is a cache that can be rebuilt.

The continuous crawl (harvest/continuous/run.py) is handed :class:`LiveWatcher` by its callers
(the continuous-crawl DAG, ``harvestflow continuous crawl``): harvest sits below indexing.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from harvestflow.atomic import atomic_write_text, place
from indexing.cdx import index_warc, sorted_lines, write_lines_atomic

log = logging.getLogger(__name__)


@dataclass
class LiveIndexResult:
    files: list[str] = field(default_factory=list)
    lines: int = 0
    damaged: list[str] = field(default_factory=list)


def _place(src: Path, dest: Path) -> None:
    """Hard link (same file system) or copy through a temporary name; kept if there."""
    if dest.exists():
        return
    place(src, dest)


def index_closed_warcs(warcs: list[Path], live_dir: Path) -> LiveIndexResult:
    """Link each WARC into the live collection and write its CDXJ (already indexed: skipped)."""
    live_dir = Path(live_dir)
    (live_dir / "warcs").mkdir(parents=True, exist_ok=True)
    (live_dir / "index").mkdir(parents=True, exist_ok=True)
    result = LiveIndexResult()
    for path in warcs:
        cdxj = live_dir / "index" / (path.name + ".cdxj")
        if cdxj.exists():
            continue
        _place(path, live_dir / "warcs" / path.name)
        indexed = index_warc(path)
        if indexed.damage is not None:
            log.error("%s: damaged at %s; indexed up to there", path, indexed.damage)
            result.damaged.append(path.name)
        lines = sorted_lines(indexed.lines("cdxj"))
        write_lines_atomic(lines, cdxj)
        result.files.append(path.name)
        result.lines += len(lines)
    log.info("live index: %d file(s), %d line(s)", len(result.files), result.lines)
    return result


class LiveWatcher:
    """Indexes the closed data WARCs of a running crawl into the live collection as they appear.

    ``poll_once`` does one pass (tests call it directly); ``start``/``stop`` run it every
    ``interval_s`` in a daemon thread, and ``stop`` makes a last pass so nothing closed is left.
    ``indexed_at`` records when each file became replayable (for the fetch-to-replayable figure).
    """

    def __init__(self, warc_dir: Path, live_dir: Path, interval_s: float = 2.0) -> None:
        self.warc_dir = Path(warc_dir)
        self.live_dir = Path(live_dir)
        self.interval_s = interval_s
        self.indexed_at: dict[str, dt.datetime] = {}
        self.lines = 0
        self.damaged: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> list[str]:
        if not self.warc_dir.is_dir():
            return []
        closed = sorted(
            p
            for p in self.warc_dir.glob("*.warc.gz")
            if "-metadata-" not in p.name and p.name not in self.indexed_at
        )
        if not closed:
            return []
        result = index_closed_warcs(closed, self.live_dir)
        now = dt.datetime.now(dt.UTC)
        for path in closed:
            self.indexed_at.setdefault(path.name, now)
        self.lines += result.lines
        self.damaged += result.damaged
        return result.files

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll_once()
            except Exception:  # keep watching: the final pass after the run retries
                log.exception("live index pass over %s failed", self.warc_dir)

    def start(self) -> LiveWatcher:
        self._thread = threading.Thread(target=self._loop, name="live-index", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.poll_once()


def pywb_config(live_dir: Path, collection: str = "live") -> Path:
    """A pywb ``config.yaml`` serving the live collection (for a replay node or a test)."""
    live_dir = Path(live_dir)
    (live_dir / "index").mkdir(parents=True, exist_ok=True)
    (live_dir / "warcs").mkdir(parents=True, exist_ok=True)
    config = live_dir / "config.yaml"
    text = (
        "collections:\n"
        f"  {collection}:\n"
        f"    index_paths: {live_dir / 'index'}/\n"
        f"    archive_paths: {live_dir / 'warcs'}/\n"
    )
    atomic_write_text(config, text)
    return config
