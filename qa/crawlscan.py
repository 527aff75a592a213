"""The crawl.log pass through the C scanner (qa/_crawlscan.c), with the polars path as reference.

Why: per-line field splitting is the daily QA's whole cost; polars' string kernels spend 3-4 x
what mawk does. The C scanner aggregates the lines in Heritrix's plain layout into the same
packed table as qa.crawllog_aggregate (``k`` = "authority MIME", ``code`` = status*8 + flags,
counts, byte sums) with the GIL released, so threads over one mmap use every core without spawning
worker processes. Every line it does not accept (blank, non-ASCII, CR, odd spacing, anything
unusual) comes back as bytes and goes through qa.crawllog_aggregate's own polars + slow path, so odd
lines, bad-line counts and their line numbers are exactly the reference's.

The extension is optional: ``available()`` says whether it was built (``pip install -e .``
compiles it; a machine without a C compiler gets the polars path and a warning).
"""

from __future__ import annotations

import importlib
import logging
import mmap
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import numpy as np
import polars as pl

from harvestflow.progress import Progress
from qa import crawlchunk, crawltable

log = logging.getLogger(__name__)

# the line rules of qa/_crawlscan.c this module expects: a build from an older C file (an
# install not rebuilt since) would accept lines the reference now rejects
LINE_RULES = 3

_ext: ModuleType | None
try:
    _ext = importlib.import_module("qa._crawlscan")
except ImportError:  # not compiled here: qa.crawllog_aggregate falls back to polars
    _ext = None
if _ext is not None and getattr(_ext, "LINE_RULES", 1) != LINE_RULES:
    log.warning(
        "qa._crawlscan is an old build (line rules %s, %d expected): rebuild it with"
        " pip install -e .; using the polars crawl.log path",
        getattr(_ext, "LINE_RULES", 1),
        LINE_RULES,
    )
    _ext = None


def available() -> bool:
    """True when the compiled scanner can be imported."""
    return _ext is not None


def _views(mm: mmap.mmap, start: int, end: int, chunk_bytes: int) -> Iterator[memoryview]:
    """Zero-copy pieces of [start, end) ending on line boundaries (the last may not)."""
    view = memoryview(mm)
    try:
        for pos, stop in crawlchunk.piece_bounds(mm, start, end, chunk_bytes):
            piece = view[pos:stop]
            try:
                yield piece
            finally:
                piece.release()
            # unmap the pages read (they stay in the page cache): RSS stays ~one piece
            lo = pos - pos % mmap.PAGESIZE
            hi = stop - stop % mmap.PAGESIZE
            if hi > lo:
                mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
    finally:
        view.release()


def aggregate_range(
    path: Path, start: int, end: int, chunk_bytes: int, progress: Progress | None
) -> crawlchunk.LogAggregate:
    """Same contract as ``qa.crawllog_aggregate._aggregate_range`` (line numbers relative to
    the range)."""
    assert _ext is not None, "qa._crawlscan is not built"
    scanner = _ext.Scanner()
    result = _scan_range(path, start, end, chunk_bytes, progress, scanner)
    _add_odd_groups(scanner, result)
    _take_columns(result, scanner)
    return result


def _scan_range(
    path: Path,
    start: int,
    end: int,
    chunk_bytes: int,
    progress: Progress | _LockedProgress | None,
    scanner: object,
) -> crawlchunk.LogAggregate:
    """Feed one range to ``scanner``; the result holds only the odd lines' table."""
    result = crawlchunk.LogAggregate(path=path, groups=pl.DataFrame(schema=crawltable.PACKED))
    parts: list[pl.DataFrame] = []
    base = 0  # lines before this piece, within the range
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for piece in _views(mm, start, end, chunk_bytes):
            size = len(piece)
            lines, odd = scanner.feed(piece)  # type: ignore[attr-defined]
            if odd:
                part = _odd_lines(odd, base, result)
                if part is not None:
                    parts.append(part)
            base += lines
            result.lines += lines
            if progress is not None:
                progress.advance(size)
            if len(parts) > 16:  # a log made of odd lines stays flat in memory
                parts = [crawltable.merge(parts)]
    if parts:
        result.groups = crawltable.merge(parts) if len(parts) > 1 else parts[0]
    return result


def _add_odd_groups(scanner: object, piece: crawlchunk.LogAggregate) -> None:
    """Move the odd lines' (packed, small) table of ``piece`` into the scanner's table.

    Why: summed in C by interned ids, the scanner's ~10^6 groups never become "authority
    MIME" strings merged in polars (that cost ~1 CPU-second on 10^7 lines with a few thousand
    odd lines, measured); the odd lines' groups are a few thousand.
    """
    if not piece.groups.height:
        return
    for key, code, lines, size in piece.groups.iter_rows():
        auth, _, mime = key.partition(" ")  # as crawltable.unpack splits it
        scanner.add(auth.encode("utf-8"), mime.encode("utf-8"), code, lines, size)  # type: ignore[attr-defined]
    piece.groups = pl.DataFrame(schema=crawltable.PACKED)


def _take_columns(result: crawlchunk.LogAggregate, scanner: object) -> None:
    """The scanner's table (odd lines' groups added) straight into the unpacked layout.

    Why: splitting ~10^6 "authority MIME" keys into Python strings and again in polars cost
    ~0.3 s after the threads had finished (single-threaded); gathering from the ~10^4
    distinct strings by index costs milliseconds.
    """
    cols = scanner.columns()  # type: ignore[attr-defined]
    strings, auth_ids, mime_ids, codes, counts, sums, first, last = cols
    if codes:
        names = pl.Series("s", strings.decode("utf-8").split("\n"), dtype=pl.String)
        table = pl.DataFrame(
            {
                "a": np.frombuffer(auth_ids, dtype=np.uint32),
                "m": np.frombuffer(mime_ids, dtype=np.uint32),
                "code": np.frombuffer(codes, dtype=np.int64),
                "lines": np.frombuffer(counts, dtype=np.int64),
                "bytes": np.frombuffer(sums, dtype=np.int64),
            }
        )
        result.groups = crawltable.expand(
            table, pl.lit(names).gather(pl.col("a")), pl.lit(names).gather(pl.col("m"))
        )
    else:
        result.groups = crawltable.empty_groups()
    result.unpacked = True
    _take_ts(result, first, last)


def _take_ts(result: crawlchunk.LogAggregate, first: str | None, last: str | None) -> None:
    for ts in (first, last):
        if ts is not None and (result.first_ts is None or ts < result.first_ts):
            result.first_ts = ts
        if ts is not None and (result.last_ts is None or ts > result.last_ts):
            result.last_ts = ts


def _odd_lines(
    odd: list[tuple[int, bytes]], base: int, result: crawlchunk.LogAggregate
) -> pl.DataFrame | None:
    """The reference path over the lines the scanner left alone, with their own line numbers."""
    line_map = [base + n for n, _ in odd]
    chunk = b"\n".join(text for _, text in odd) + b"\n"
    return crawlchunk._aggregate_chunk(chunk, 0, result, line_map=line_map)


def wanted(engine: str | None) -> bool:
    """Whether to take the C scanner; warns (once per process) when it is wanted but absent."""
    global _warned_no_c
    engine = engine or os.environ.get("HARVESTFLOW_QA_ENGINE") or "auto"
    if engine == "polars":
        return False
    if _ext is not None:
        return True
    if not _warned_no_c:
        _warned_no_c = True
        log.warning(
            "qa._crawlscan is not built (pip install -e . compiles it); "
            "using the slower polars crawl.log path"
        )
    return False


_warned_no_c = False


class _LockedProgress:
    """A Progress the scanning threads share: ``advance`` under a lock (it is not atomic)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._lock = threading.Lock()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self._progress.advance(n)


def aggregate_ranges(
    path: Path,
    ranges: list[tuple[int, int]],
    chunk_bytes: int,
    workers: int,
    progress: Progress,
) -> list[crawlchunk.LogAggregate]:
    """Scan the ranges in ``workers`` threads (the scanner releases the GIL); file order.

    One scanner per range; their tables are summed in C into the first range's, so the
    (large) grouped table crosses into polars once and needs no group-by merge.
    """
    assert _ext is not None, "qa._crawlscan is not built"
    if len(ranges) <= 1:
        return [aggregate_range(path, a, b, chunk_bytes, progress) for a, b in ranges]
    scanners = [_ext.Scanner() for _ in ranges]
    shared = _LockedProgress(progress)
    with ThreadPoolExecutor(max_workers=max(1, min(len(ranges), workers))) as pool:
        futures = [
            pool.submit(_scan_range, path, a, b, chunk_bytes, shared, sc)
            for (a, b), sc in zip(ranges, scanners, strict=True)
        ]
        pieces = [fut.result() for fut in futures]
    for other in scanners[1:]:
        scanners[0].absorb(other)
    del scanners[1:]
    for piece in pieces:
        _add_odd_groups(scanners[0], piece)
    _take_columns(pieces[0], scanners[0])
    return pieces
