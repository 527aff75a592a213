"""Fast aggregation of one Heritrix crawl.log into a small grouped table.

Why this shape: a broad crawl's daily logs hold tens of millions of lines. Every metric of the
daily QA derives from one table grouped by (authority, status, MIME, flags), so each line is
touched once, by polars' vectorised kernels in bounded chunks; per-value work runs afterwards
on the few distinct values. Lines off Heritrix's fixed-column layout take a tolerant Python
path, unparsable ones are counted and named. This polars path is the reference; the C scanner
(:mod:`qa.crawlscan`), when built, takes the plain lines ~4 x faster.
"""

from __future__ import annotations

import gzip
import itertools
import logging
import mmap
import multiprocessing
import os
import shutil
import tempfile
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import polars as pl

from harvestflow.progress import Progress
from qa import crawlscan
from qa.crawlchunk import (
    MAX_BAD_LINES_KEPT,
    BadLine,
    LogAggregate,
    _aggregate_chunk,
    piece_bounds,
)
from qa.crawlline import parse_line_slow as parse_line_slow  # the tolerant path, for callers
from qa.crawltable import PACKED, empty_groups, merge, unpack
from qa.errors import QaError

log = logging.getLogger(__name__)

CHUNK_BYTES = 64 * 1024 * 1024


class CrawlLogError(QaError, RuntimeError):
    """A crawl log that cannot be read at all (missing, unreadable), with the path."""


def split_ranges(path: Path, parts: int) -> list[tuple[int, int]]:
    """Cut the file into ``parts`` byte ranges that start at line starts."""
    size = path.stat().st_size
    bounds = [0]
    with path.open("rb") as fh:
        for k in range(1, parts):
            fh.seek(max(size * k // parts, bounds[-1]))
            fh.readline()
            pos = fh.tell()
            if pos >= size:
                break
            bounds.append(pos)
    bounds.append(size)
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _chunks(path: Path, start: int, end: int, chunk_bytes: int) -> Iterator[bytes]:
    """Yield pieces of [start, end) that end on a line boundary (the last may not).

    mmap + one slice per piece: the only copy of the data is the one polars parses.
    """
    if end <= start:
        return
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for pos, stop in piece_bounds(mm, start, end, chunk_bytes):
            yield mm[pos:stop]


def aggregate_crawl_log(
    path: Path,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    workers: int | None = None,
    progress_interval_s: float = 10.0,
    bar: bool = False,
    engine: str | None = None,
) -> LogAggregate:
    """Read one crawl.log (or .gz) once and return its grouped table and error counts.

    ``workers`` > 1 splits a large log into byte ranges parsed by that many processes (the
    vectorised kernels are mostly single-threaded; two processes use both cores). Default: the
    machine's cores, capped at 4, and 1 for logs under four chunks. Raises CrawlLogError when
    the file is missing or unreadable; bad lines never raise.

    ``engine``: "c" (the compiled scanner of qa.crawlscan, in threads), "polars" (the
    reference), or None = $HARVESTFLOW_QA_ENGINE, else "c" when built. Both give the same table.
    """
    path = Path(path)
    if not path.is_file():
        raise CrawlLogError(f"{path}: crawl log missing (was the job's output directory moved?)")
    if path.suffix == ".gz":
        with tempfile.TemporaryDirectory(prefix="qa-crawllog-") as tmp:
            plain = Path(tmp) / "crawl.log"
            try:
                with gzip.open(path, "rb") as src, plain.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except (OSError, EOFError, zlib.error) as exc:
                raise CrawlLogError(f"{path}: cannot decompress: {exc}") from exc
            result = aggregate_crawl_log(
                plain,
                chunk_bytes=chunk_bytes,
                workers=workers,
                progress_interval_s=progress_interval_s,
                bar=bar,
                engine=engine,
            )
            result.path = path
            return result
    started = time.monotonic()
    try:
        total = path.stat().st_size
    except OSError as exc:
        raise CrawlLogError(f"{path}: {exc}") from exc
    if workers is None:
        workers = min(os.cpu_count() or 1, 4) if total >= 4 * chunk_bytes else 1
    use_c = crawlscan.wanted(engine)
    # polars path: several ranges per worker, so the progress line moves while the pool works;
    # C scanner: one range per thread (its threads report progress per piece themselves, and
    # every further range's table costs a merge of ~10^5-10^6 groups: 0.1 s CPU each, measured)
    parts_wanted = 1 if workers <= 1 else workers if use_c else workers * 4
    ranges = split_ranges(path, parts_wanted) if total else []
    progress = Progress(
        f"crawl.log {path}", total, unit="bytes", interval_s=progress_interval_s, bar=bar
    )
    try:
        if use_c:
            pieces = crawlscan.aggregate_ranges(path, ranges, chunk_bytes, workers, progress)
        elif len(ranges) <= 1:
            pieces = [_aggregate_range(path, 0, total, chunk_bytes, progress)]
        else:
            try:
                pieces = _aggregate_in_pool(path, ranges, chunk_bytes, workers, progress)
            except BrokenProcessPool as exc:
                # a worker died (out of memory, killed): do the work here rather than fail
                log.warning("%s: worker pool failed (%s); parsing in-process", path, exc)
                progress.done = 0
                pieces = [_aggregate_range(path, a, b, chunk_bytes, progress) for a, b in ranges]
    except OSError as exc:
        raise CrawlLogError(f"{path}: read error: {exc}") from exc
    finally:
        progress.close()
    result = _combine(path, pieces)
    result.elapsed_s = time.monotonic() - started
    if result.bad_lines:
        log.warning(
            "%s: %d of %d lines could not be parsed (first at line %s)",
            path,
            result.bad_lines,
            result.lines,
            result.bad_examples[0].line if result.bad_examples else "?",
        )
    return result


def _aggregate_in_pool(
    path: Path, ranges: list[tuple[int, int]], chunk_bytes: int, workers: int, progress: Progress
) -> list[LogAggregate]:
    """Parse the ranges in ``workers`` spawned processes; results in file order."""
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {
            pool.submit(_aggregate_range, path, a, b, chunk_bytes, None): b - a for a, b in ranges
        }
        for fut in as_completed(futures):
            progress.advance(futures[fut])
        return [fut.result() for fut in futures]  # dicts keep insertion (file) order


def _combine(path: Path, pieces: list[LogAggregate]) -> LogAggregate:
    """Join range results in file order; line numbers become absolute."""
    result = LogAggregate(path=path, groups=empty_groups())
    frames = []
    for piece in pieces:
        for bad in piece.bad_examples:
            if len(result.bad_examples) < MAX_BAD_LINES_KEPT:
                shifted = BadLine(bad.line + result.lines, bad.reason, bad.excerpt)
                result.bad_examples.append(shifted)
        result.lines += piece.lines
        result.bad_lines += piece.bad_lines
        if piece.groups.height:
            frames.append(piece.groups)
        if piece.first_ts and (result.first_ts is None or piece.first_ts < result.first_ts):
            result.first_ts = piece.first_ts
        if piece.last_ts and (result.last_ts is None or piece.last_ts > result.last_ts):
            result.last_ts = piece.last_ts
    if frames:
        # one frame (the C scanner's summed table, or one range) has unique keys already
        if len(frames) == 1 and any(p.unpacked for p in pieces):
            result.groups = frames[0]
        else:
            result.groups = unpack(frames[0] if len(frames) == 1 else merge(frames))
    return result


def _aggregate_range(
    path: Path, start: int, end: int, chunk_bytes: int, progress: Progress | None
) -> LogAggregate:
    """One byte range of a log; line numbers relative to the range's first line."""
    result = LogAggregate(path=path, groups=pl.DataFrame(schema=PACKED))
    parts: list[pl.DataFrame] = []
    next_line = 1
    for chunk in _chunks(path, start, end, chunk_bytes):
        nlines = chunk.count(b"\n") + (0 if chunk.endswith(b"\n") else 1)
        part = _aggregate_chunk(chunk, next_line, result)
        if part is not None:
            parts.append(part)
        next_line += nlines
        result.lines += nlines
        if progress is not None:
            progress.advance(len(chunk))
        if len(parts) > 16:  # keep memory flat on huge logs
            parts = [merge(parts)]
    if parts:
        result.groups = merge(parts)
    return result
