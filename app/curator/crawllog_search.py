"""crawl.log search for curators: regular expression, status code and MIME type filters.

Why RE2: a curator's pattern runs on the api-server, and Python's backtracking engine can spend
minutes on a pattern like ``(a+)+b``. RE2 matches in time linear in the line, so no pattern
can stall the server; the file is streamed (never loaded whole), lines are cut at
``MAX_LINE_CHARS``, and a scan stops after ``max_scan`` lines or ``time_budget_s`` seconds,
saying so in the result. Lines the one crawl.log parser refuses (not exactly 12 fields, a time,
status or size that does not read) are never matched: they are counted and the first is named
(harvestflow.formats.crawllog).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvestflow.errors import HarvestflowError
from harvestflow.formats.crawllog import CrawlLogLine, check_fields
from harvestflow.formats.integers import NumberError, parse_int
from harvestflow.regex import PatternError, compile_linear

log = logging.getLogger(__name__)

MAX_PATTERN_CHARS = 300
MAX_LINE_CHARS = 8192
# crawl.log columns (Heritrix): timestamp, status, size, URL, hop path, via, MIME, thread,
# fetch time, digest, source, annotations
COLUMNS = ("timestamp", "status", "size", "url", "hops", "via", "mime", "thread", "fetch")


class CrawlLogSearchError(HarvestflowError, ValueError):
    """A search the server refuses (bad or too long pattern, bad status), said plainly."""


@dataclass
class SearchResult:
    """One page of matching lines and how much of the file was read to find them."""

    lines: list[list[str]] = field(default_factory=list)
    matched: int = 0  # matches seen so far (offset + len(lines), or more if counted on)
    scanned: int = 0
    more: bool = False  # another page exists
    stopped: str = ""  # why the scan stopped early ('' = end of file)
    bad_lines: int = 0  # lines scanned that are not crawl.log lines (wrong field count)
    first_bad: int = 0  # the line number of the first of them
    bad_reason: str = ""


def compile_pattern(pattern: str) -> Any:
    """RE2-compile a curator's pattern, or None when empty; CrawlLogSearchError when refused."""
    if not pattern:
        return None
    if len(pattern) > MAX_PATTERN_CHARS:
        raise CrawlLogSearchError(f"pattern longer than {MAX_PATTERN_CHARS} characters")
    try:
        return compile_linear(pattern)
    except PatternError as exc:
        raise CrawlLogSearchError(f"invalid regular expression: {exc}") from exc


def parse_status(raw: str) -> int | None:
    """The status filter (an integer, maybe negative: Heritrix's -6, -9998), or None."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        return parse_int(raw, "status", minimum=-99_999, maximum=99_999)  # Heritrix: -9998..999
    except NumberError as exc:
        raise CrawlLogSearchError(str(exc)) from None


def search_crawl_log(
    path: Path,
    pattern: str = "",
    status: str = "",
    mime: str = "",
    *,
    offset: int = 0,
    limit: int = 100,
    max_scan: int = 5_000_000,
    time_budget_s: float = 10.0,
) -> SearchResult:
    """Lines of ``path`` matching every given filter, ``limit`` of them after ``offset``.

    ``mime`` matches the MIME column exactly, or as a prefix when it ends with ``/``
    (``image/``). ``pattern`` is searched anywhere in the line.
    """
    regex = compile_pattern(pattern)
    want_status = parse_status(status)
    mime = mime.strip()
    result = SearchResult()
    deadline = time.monotonic() + time_budget_s
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            result.scanned += 1
            if result.scanned % 10_000 == 0 and time.monotonic() > deadline:
                result.stopped = f"time budget of {time_budget_s:g}s spent"
                break
            if result.scanned > max_scan:
                result.stopped = f"{max_scan:,} lines scanned"
                break
            line = line.rstrip("\n")
            # the one parser's checks on every line, the line itself built only for those shown
            # (building one for each of millions of lines made the search ~2 x slower)
            parts = line.split()
            why, line_status, _ = check_fields(parts)
            if why:
                # a shifted or forged line would show a server's own columns: named, not shown
                result.bad_lines += 1
                if result.bad_lines == 1:
                    result.first_bad, result.bad_reason = result.scanned, why
                continue
            if want_status is not None and line_status != want_status:
                continue
            if mime and not (parts[6].startswith(mime) if mime.endswith("/") else parts[6] == mime):
                continue
            if regex is not None and not regex.search(line[:MAX_LINE_CHARS]):
                continue
            result.matched += 1
            if result.matched <= offset:
                continue
            if len(result.lines) >= limit:
                result.more = True
                break
            entry, _ = CrawlLogLine.read(line)
            assert entry is not None  # check_fields accepted it
            result.lines.append(entry.fields())
    log.debug("crawl.log search %s: %d lines scanned", path, result.scanned)
    return result
