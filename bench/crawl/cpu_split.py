"""Split a crawl's CPU by component from a py-spy profile: where the ms per URL go.

Why a script: the crawl benchmarks give ours' CPU per URL and bare Scrapy's (``crawl-scrapy``)
and each side's fixed cost (``crawl-1url``); this says which parts of ours spend the rest, by
the same rules every time, so two profiles (before and after a change) compare. Record one crawl
of the benchmark site with py-spy's raw (collapsed) output, then split it::

    py-spy record -r 250 -f raw -o crawl.txt -- python -m crawler --out <out> <crawl-1proc's args>
    python bench/crawl/cpu_split.py crawl.txt [--cpu-s CPU_S --urls N]

Each sample goes to the component of the deepest frame of our code (``crawler/``,
``harvestflow/``) below the reactor — the code that asked for the work — else to the library of
its deepest frame (Scrapy's engine, Twisted's HTTP client, asyncio's loop…); samples outside the
reactor are the fixed cost (start-up and imports; the end's reports and metadata WARC). Samples
waiting (a thread pool's idle worker, the loop's ``select``) are dropped. Shares are of the
samples; with ``--cpu-s`` and ``--urls`` (a measured crawl's CPU-seconds) also ms per URL.
A sampling profile's shares are rough under load: a runnable process waiting for a core is
sampled as busy.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

IDLE = ("Condition.wait", "EpollSelector.select", "select (selectors.py", "poll (")
# frames above the reactor, or wrappers that only pass the work on: never "the code that asked"
PASS_THROUGH = (
    "(crawler/runner.py",
    "(crawler/command_line.py",
    "(crawler/__main__.py",
    "ArchivalHTTPDownloadHandler.download_request",
    "parse (crawler/spider.py",
    "ScheduleOutputMiddleware.process_spider_output_async",
)
# (our module or function, component): the first that a frame's text holds, from the leaf up
OURS = [
    ("crawler/warc/records.py", "WARC records built (warcio builder, digests, ids)"),
    ("crawler/warc/files.py", "WARC write (warcio writer, gzip)"),
    ("crawler/warc/job_writer.py", "CDX line"),
    ("harvestflow/formats/cdx", "CDX line"),
    ("crawler/crawllog_writer.py", "crawl.log"),
    ("harvestflow/formats/crawllog", "crawl.log"),
    ("crawler/state.py", "frontier SQLite"),
    ("crawler/scope.py", "scope and SURT"),
    ("harvestflow/formats/surt", "scope and SURT"),
    ("crawler/request_builder.py", "Request building"),
    ("crawler/links.py", "link extraction"),
    ("crawler/jsextract.py", "link extraction"),
    ("links_of (crawler/spider.py", "link extraction"),
    ("crawler/frontier.py", "frontier decisions"),
    ("crawler/budget.py", "frontier decisions"),
    ("harvestflow/formats/urls.py", "frontier decisions"),
    ("crawler/context.py", "capture finishing (crawler/context.py)"),
    ("crawler/capture_middleware.py", "capture middleware"),
    ("crawler/internals.py", "HTTP client"),
    ("crawler/asyncio_fetch.py", "HTTP client"),
    ("crawler/slot_queue.py", "Scrapy scheduler"),
    ("crawler/statslog.py", "stats and progress"),
    ("crawler/spider.py", "spider"),
    ("crawler/", "other crawler/*"),
    ("harvestflow/", "other harvestflow/*"),
]
LIBRARIES = [
    ("scrapy/core/downloader/handlers", "HTTP client"),
    ("twisted/web", "HTTP client"),
    ("twisted/protocols", "HTTP client"),
    ("httptools", "HTTP client"),
    ("scrapy/statscollectors", "stats and progress"),
    ("pydispatch", "Scrapy signals"),
    ("scrapy/utils/signal", "Scrapy signals"),
    ("scrapy/signalmanager", "Scrapy signals"),
    ("logging/", "logging"),
    ("scrapy/core/scheduler", "Scrapy scheduler"),
    ("scrapy/pqueues", "Scrapy scheduler"),
    ("scrapy/squeues", "Scrapy scheduler"),
    ("queuelib", "Scrapy scheduler"),
    ("scrapy/http", "Scrapy Request/Response/Headers"),
    ("w3lib", "Scrapy Request/Response/Headers"),
    ("scrapy/core/downloader/middleware", "Scrapy middleware chains"),
    ("scrapy/middleware", "Scrapy middleware chains"),
    ("scrapy/core/spidermw", "Scrapy middleware chains"),
    ("scrapy/spidermiddlewares", "Scrapy middleware chains"),
    ("scrapy/downloadermiddlewares", "Scrapy middleware chains"),
    ("scrapy/core", "Scrapy engine, downloader, scraper"),
    ("scrapy/", "Scrapy other"),
    ("twisted/internet/defer", "Twisted Deferreds"),
    ("twisted/", "Twisted reactor, other"),
    ("asyncio/", "asyncio loop"),
    ("selectors", "asyncio loop"),
    ("lxml", "link extraction"),
    ("sqlite3", "frontier SQLite"),
]
_SOURCE = re.compile(r"\(([^()]*?):\d+\)$")


def _source(frame: str) -> str:
    m = _SOURCE.search(frame)
    return m.group(1) if m else ""


def component(frames: list[str]) -> str:
    """The component one sample's stack (root first) is counted to."""
    if not any("CrawlerProcess.start" in f for f in frames):
        if any("finish (crawler/runner.py" in f for f in frames):
            return "fixed: end (reports, metadata WARC)"
        return "fixed: start-up and imports"
    for frame in reversed(frames):
        if any(p in frame for p in PASS_THROUGH):
            continue
        source = _source(frame)
        for prefix, name in OURS:
            if source.startswith(prefix) or prefix in frame:
                return name
    for frame in reversed(frames):
        source = _source(frame)
        for prefix, name in LIBRARIES:
            if prefix in source:
                return name
    return "other"


def split(lines: list[str]) -> tuple[Counter[str], int]:
    """Samples per component of py-spy's raw lines (``frame;frame;… COUNT``), and the idle
    samples dropped."""
    counts: Counter[str] = Counter()
    idle = 0
    for line in lines:
        if not line.strip():
            continue
        stack, n = line.rstrip().rsplit(" ", 1)
        frames = stack.split(";")
        if any(marker in frames[-1] for marker in IDLE):
            idle += int(n)
            continue
        counts[component(frames)] += int(n)
    return counts, idle


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", type=Path, help="py-spy record -f raw output")
    ap.add_argument("--cpu-s", type=float, help="the crawl's measured CPU-seconds")
    ap.add_argument("--urls", type=int, help="URLs the crawl archived")
    args = ap.parse_args(argv)
    counts, idle = split(args.profile.read_text().splitlines())
    total = sum(counts.values())
    rows = []
    for name, n in counts.most_common():
        row: dict[str, object] = {"component": name, "share": round(n / total, 4)}
        if args.cpu_s and args.urls:
            row["ms_per_url"] = round(n / total * args.cpu_s * 1000 / args.urls, 3)
        rows.append(row)
    json.dump({"samples": total, "idle_dropped": idle, "components": rows}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
