"""Sorted merges of index files: the daily merge and the big merge.

Why streaming k-way merges: the big CDX grows without bound, so a merge must never hold it in
memory. The merge is coreutils' ``sort -m -u`` run with ``LC_ALL=C`` (byte order whatever the
machine's locale; bounded memory; faster than the plain ``sort -m`` it is measured against, by
merging all inputs in one batch), after which ``sort -c -u`` reads the merged file and checks
that it is strictly increasing (an unsorted input always shows up as a descent in the output).
Without ``sort``, a ``heapq.merge`` over byte strings does the same with the same check. Exact duplicate lines are dropped: a capture has one line, so a
duplicate can only be the same line merged twice after a crash, and dropping it makes merges
idempotent.

Restart: outputs are written under a temporary name and renamed. The big merge records which
daily files (name, size, mtime) it has included in a small JSON state file written after the
rename; a crash in between makes the next run merge those files again, which the duplicate
dropping absorbs.
"""

from __future__ import annotations

import heapq
import json
import logging
import operator
import os
import shutil
import subprocess
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from harvestflow.atomic import atomic_write_text, commit, tmp_path
from harvestflow.settings import Settings, get_settings
from indexing.cdx import SUFFIX
from indexing.crashpoints import crashpoint
from indexing.errors import IndexingError
from indexing.files import Lock, single_instance
from indexing.layout import Layout

log = logging.getLogger(__name__)
_STRIP_NL = operator.methodcaller("removesuffix", b"\n")


class UnsortedIndexError(IndexingError, ValueError):
    """An index file that is not in byte order (named with the line where it breaks)."""


@dataclass
class MergeStats:
    output: Path
    inputs: int
    lines: int
    duplicates: int  # -1 unless counted (count_duplicates=True)


def _count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            n += block.count(b"\n")
    return n


def _count_lines_wc(path: Path) -> int:
    """``wc -l`` (a third of the CPU time of counting in Python), else :func:`_count_lines`."""
    wc = shutil.which("wc")
    if wc is None:
        return _count_lines(path)
    with open(path, "rb") as fh:
        out = subprocess.run([wc, "-l"], stdin=fh, capture_output=True, check=True).stdout
    return int(out.split()[0])


def _c_sort_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
    env["LC_ALL"] = "C"  # byte order, whatever the machine's locale
    return env


def _merge_with_sort(inputs: list[Path], tmp: Path, sort: str) -> int:
    """``sort -m -u -o tmp``, then ``sort -c -u tmp`` on the written file, in the C locale.

    The check (strictly increasing output) reads the merged file once the merge is done, while
    ``wc -l`` counts its lines from the same cached pages; an unsorted input always leaves a
    descent in the merged output, which it finds. All inputs are merged in one batch (sort's
    default of 16 makes it merge through temporary files, ~2 x slower here). Measured against
    the earlier ``sort -m -u | tee tmp | sort -c -u`` pipeline (bench/README.md, index): a third
    less CPU (the pipe copies cost more than the second read of a cached file) and faster on
    wall-clock time as well, on a loaded machine and an idle one.
    """
    env = _c_sort_env()
    batch = str(max(2, min(len(inputs), 1000)))
    merge_cmd = [sort, "-m", "-u", f"--batch-size={batch}", "-o", str(tmp), "--", *map(str, inputs)]
    subprocess.run(merge_cmd, env=env, check=True)
    checker = subprocess.Popen([sort, "-c", "-u", "--", str(tmp)], env=env, stderr=subprocess.PIPE)
    try:
        lines = _count_lines_wc(tmp)
    finally:
        _, check_err = checker.communicate()
    if checker.returncode != 0:
        raise UnsortedIndexError(
            f"merged output not in strictly increasing byte order "
            f"({check_err.decode(errors='replace').strip()}); "
            f"an input is not byte-order sorted: {find_unsorted(inputs)}"
        )
    return lines


def _merge_in_python(inputs: list[Path], tmp: Path, output: Path) -> int:
    with ExitStack() as stack, open(tmp, "wb", buffering=1 << 20) as out:
        # compare lines without their newline, as sort(1) does ("a" < "a\tb" although "\t" < "\n")
        files = [
            map(_STRIP_NL, stack.enter_context(open(p, "rb", buffering=1 << 20))) for p in inputs
        ]
        prev: bytes | None = None
        write = out.write
        n = 0
        for line in heapq.merge(*files):
            if prev is not None and line <= prev:
                if line == prev:
                    continue
                raise UnsortedIndexError(
                    f"merging into {output}: line {n + 1} {line[:120]!r} sorts before the line"
                    f" above it; one of the inputs is not byte-order sorted: {find_unsorted(inputs)}"
                )
            write(line + b"\n")
            prev = line
            n += 1
    return n


def merge_sorted(
    inputs: list[Path], output: Path, *, engine: str = "auto", count_duplicates: bool = False
) -> MergeStats:
    """Merge byte-order-sorted ``inputs`` into ``output`` (atomically), checking the order.

    Exact duplicate lines are written once. ``engine``: "sort" (coreutils ``sort -m``, C locale,
    streaming with bounded memory), "python" (``heapq.merge``) or "auto" (sort when installed).
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(output)  # written by sort(1) or in Python, then committed
    sort = shutil.which("sort") if engine in ("auto", "sort") else None
    if engine == "sort" and sort is None:
        raise FileNotFoundError("sort(1) not found")
    try:
        if sort is not None:
            lines = _merge_with_sort(inputs, tmp, sort)
        else:
            lines = _merge_in_python(inputs, tmp, output)
        crashpoint("merge.written")
        commit(tmp, output)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dups = sum(_count_lines(p) for p in inputs) - lines if count_duplicates else -1
    return MergeStats(output, len(inputs), lines, dups)


def check_sorted(path: Path) -> int:
    """Number of lines of ``path``; raises :class:`UnsortedIndexError` at the first descent."""
    prev = b""
    n = 0
    with open(path, "rb", buffering=1 << 20) as fh:
        for n, line in enumerate(map(_STRIP_NL, fh), 1):
            if line < prev:
                raise UnsortedIndexError(
                    f"{path}: line {n} sorts before line {n - 1}; sort it in byte order"
                    " (LC_ALL=C sort) before merging"
                )
            prev = line
    return n


def find_unsorted(paths: list[Path]) -> str:
    for p in paths:
        try:
            check_sorted(p)
        except UnsortedIndexError as exc:
            return str(exc)
    return "(none found)"


def _day_kinds(layout: Layout, day: date, collection: str) -> list[tuple[Path, str, Path]]:
    """(input dir, suffix, output file) of each index kind for one day."""
    kinds = [
        (
            layout.cdx_daily(day, collection),
            SUFFIX[fmt],
            layout.cdx_merged(collection) / (day.isoformat() + SUFFIX[fmt]),
        )
        for fmt in layout.formats
    ]
    kinds.append(
        (
            layout.path_daily(day, collection),
            ".path",
            layout.path_merged(collection) / (day.isoformat() + ".path"),
        )
    )
    return kinds


def _inputs_record(out: Path) -> Path:
    return out.with_name(out.name + ".inputs.json")


def _read_record(record: Path) -> dict[str, Any]:
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_record(record: Path, data: dict[str, Any]) -> None:
    atomic_write_text(record, json.dumps(data))


def _merge_day(layout: Layout, day: date, result: dict[str, Any], *, only_changed: bool) -> None:
    """Merge one day; ``only_changed``: only the kinds whose per-file files changed since.

    A change is seen first from the directory's mtime (every file arrives by a rename into it),
    so that the earlier days cost one ``stat`` each, not a listing of their thousands of files;
    then from the listing (names and sizes) recorded with the last merge.
    """
    for collection in layout.all_collections():
        for in_dir, suffix, out in _day_kinds(layout, day, collection):
            if not in_dir.is_dir():
                continue
            dir_mtime: int | None = in_dir.stat().st_mtime_ns  # before listing (see above)
            if time.time_ns() - (dir_mtime or 0) < 2_000_000_000:
                dir_mtime = None  # too recent to trust on a coarse-clock file system: list again
            record = _inputs_record(out)
            known = _read_record(record) if only_changed and out.exists() else {}
            if dir_mtime is not None and known.get("dir_mtime_ns") == dir_mtime:
                continue
            inputs = sorted(in_dir.glob("*" + suffix))
            if not inputs:
                continue
            listing = [[p.name, p.stat().st_size] for p in inputs]
            if known.get("inputs") == listing:  # e.g. a file rewritten identically
                _write_record(record, {"dir_mtime_ns": dir_mtime, "inputs": listing})
                continue
            stats = merge_sorted(inputs, out)  # checks the byte order of what it wrote
            _write_record(record, {"dir_mtime_ns": dir_mtime, "inputs": listing})
            result["files"][str(out)] = {"inputs": stats.inputs, "lines": stats.lines}
            if only_changed and day.isoformat() not in result["caught_up"]:
                result["caught_up"].append(day.isoformat())
            log.info(
                "daily merge %s%s: %d files, %d lines -> %s",
                day,
                " (files that came after its merge)" if only_changed else "",
                stats.inputs,
                stats.lines,
                out,
            )


def _earlier_days(layout: Layout, day: date) -> list[date]:
    days: set[date] = set()
    for collection in layout.all_collections():
        root = layout.index_root(collection)
        for daily in (root / "cdx" / "daily", root / "path" / "daily"):
            for d in daily.iterdir() if daily.is_dir() else []:
                try:
                    found = date.fromisoformat(d.name)
                except ValueError:
                    continue
                if found < day:
                    days.add(found)
    return sorted(days)


def daily_merge(day: date, settings: Settings | None = None) -> dict[str, Any]:
    """Merge the day's per-file CDX and PATH files into one sorted file per kind.

    Backfillable and repeatable: it is a pure function of the day's per-file files (which stay in
    place), so running it again for a day, or later for a past day, gives the complete result.

    Late files: a file's lines go to the day it was first indexed (fixed in the manifest), but
    its PATH line comes only with its transfer, which waits while no repository has room, and an
    index write can straddle midnight. So each run also re-merges every earlier day whose
    per-file files changed since that day's merge (the inputs of each merge are recorded beside
    its output, ``<day>.<ext>.inputs.json``); bigmerge then takes the re-merged day again, its
    duplicate lines dropped. No line waits more than a day to reach the big files.
    """
    settings = settings or get_settings()
    layout = Layout.from_settings(settings)
    result: dict[str, Any] = {"day": day.isoformat(), "files": {}, "caught_up": []}
    _merge_day(layout, day, result, only_changed=False)
    for earlier in _earlier_days(layout, day):
        _merge_day(layout, earlier, result, only_changed=True)
    return result


def _state_path(big: Path) -> Path:
    return big.with_name(big.name + ".state.json")


def _signature(p: Path) -> list[int]:
    st = p.stat()
    return [st.st_size, st.st_mtime_ns]


def _bigmerge_one(big: Path, merged_dir: Path, suffix: str) -> dict[str, Any] | None:
    state_file = _state_path(big)
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    dailies = sorted(merged_dir.glob("*" + suffix)) if merged_dir.is_dir() else []
    new = [p for p in dailies if state.get(p.name) != _signature(p)]
    if not new:
        return None
    inputs = ([big] if big.exists() else []) + new
    stats = merge_sorted(inputs, big)  # checks byte order line by line as it writes
    crashpoint("bigmerge.renamed")
    state.update({p.name: _signature(p) for p in new})
    atomic_write_text(state_file, json.dumps(state, indent=0, sort_keys=True))
    log.info("bigmerge %s: +%d daily files, %d lines", big, len(new), stats.lines)
    return {"added": [p.name for p in new], "lines": stats.lines}


def bigmerge(settings: Settings | None = None) -> dict[str, Any]:
    """Merge the daily merged files not yet included into the big sorted CDX and PATH files."""
    settings = settings or get_settings()
    layout = Layout.from_settings(settings)
    with single_instance(layout.lock_dir(), Lock.BIGMERGE):
        return _bigmerge_all(layout)


def _bigmerge_all(layout: Layout) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for collection in layout.all_collections():
        for fmt in layout.formats:
            done = _bigmerge_one(
                layout.big_cdx(fmt, collection), layout.cdx_merged(collection), SUFFIX[fmt]
            )
            if done:
                result[str(layout.big_cdx(fmt, collection))] = done
        done = _bigmerge_one(layout.big_path(collection), layout.path_merged(collection), ".path")
        if done:
            result[str(layout.big_path(collection))] = done
    return result


def index_files(layout: Layout, fmt: str, collection: str = "") -> list[Path]:
    """The sorted files that hold together every indexed capture of one index root, in ``fmt``.

    The big file, the merged daily files it does not hold yet (or holds in an older state: late
    files re-merged them), and the per-file files no merged file of their day holds yet. For
    readers that binary-search them (the dedup index of a job): a capture may be in two of them
    (a merged day re-merged since the big merge), never in none.
    """
    suffix = SUFFIX[fmt]
    big = layout.big_cdx(fmt, collection)
    state = _read_record(_state_path(big)) if big.exists() else {}
    files = [big] if big.exists() else []
    merged_dir = layout.cdx_merged(collection)
    for merged in sorted(merged_dir.glob("*" + suffix)) if merged_dir.is_dir() else []:
        if state.get(merged.name) != _signature(merged):
            files.append(merged)
    daily = layout.index_root(collection) / "cdx" / "daily"
    for day_dir in sorted(daily.iterdir()) if daily.is_dir() else []:
        merged = merged_dir / (day_dir.name + suffix)
        record = _read_record(_inputs_record(merged)) if merged.exists() else {}
        held = {name for name, _size in record.get("inputs", [])}
        files += [p for p in sorted(day_dir.glob("*" + suffix)) if p.name not in held]
    return files
