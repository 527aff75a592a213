"""Benchmark: the curators' crawl.log search against awk applying the same filters.

Why: the curator pages search a job's crawl.log line by line (RE2 pattern, status, MIME type),
through the one crawl.log parser's checks so that a forged or shifted line is named, never
shown. A search that reads the whole log (few or no matches) is the slow case. The peer, in
the same run over the same page-cached file, is mawk counting the lines with 12 fields (or a
13th ``{...}`` object) that pass the same filters; the counts must be equal, else the run
fails. Ratio = our search's CPU time / awk's (user + system; on a shared machine CPU time
moves much less with the neighbours' load than wall time, which is printed beside it), per
query shape; the median of the rounds.

    .venv/bin/python bench/qa/bench_logsearch.py [--lines 1000000] [--rounds 3] [--workdir DIR]

The log is bench/qa/gen_crawllog.py's (odd lines, non-ASCII URLs, MIME parameters included).
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_crawllog import generate  # noqa: E402

# (label, search arguments, awk condition on a line that has crawl.log's field count)
QUERIES = [
    ("pattern", {"pattern": "actualit"}, "/actualit/"),
    ("status", {"status": "-61"}, "$2 == -61"),
    ("MIME prefix", {"mime": "audio/"}, 'index($7, "audio/") == 1'),
    (
        "all three",
        {"pattern": "site1\\.", "status": "404", "mime": "text/html"},
        '$2 == 404 && $7 == "text/html" && /site1\\./',
    ),
]
FIELD_COUNT = "NF == 12 || (NF == 13 && $13 ~ /^\\{.*\\}$/)"


def search_module() -> ModuleType:
    """The search, under its name before the module renames too (to measure older commits)."""
    try:
        return importlib.import_module("app.curator.crawllog_search")
    except ImportError:
        return importlib.import_module("app.curator.crawllog")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_awk(log: Path, condition: str) -> tuple[float, float, int]:
    prog = f"({FIELD_COUNT}) && ({condition}) {{n++}} END {{print n + 0}}"
    cpu = _children_cpu()
    started = time.perf_counter()
    out = subprocess.run(
        ["awk", prog, str(log)], capture_output=True, text=True, check=True,
        env={**os.environ, "LC_ALL": "C"},
    ).stdout  # fmt: skip
    return time.perf_counter() - started, _children_cpu() - cpu, int(out)


def run_ours(log: Path, args: dict[str, str]) -> tuple[float, float, int, int]:
    search = search_module().search_crawl_log
    started, cpu = time.perf_counter(), time.process_time()
    result = search(log, **args, limit=10**9, max_scan=10**12, time_budget_s=1e9)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return elapsed, cpu, result.matched, result.scanned


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hf-logsearch-bench"
    )
    opts = ap.parse_args()
    opts.workdir.mkdir(parents=True, exist_ok=True)
    log = opts.workdir / f"crawl-{opts.lines}-v3.log"
    if not log.exists():
        print(f"generating {opts.lines:,} lines in {log} ...", flush=True)
        generate(log, opts.lines)
    log.read_bytes()  # page cache
    print(f"search module: {search_module().__name__}; {log.stat().st_size / 1e6:.0f} MB")
    failed = False
    ratios: dict[str, list[float]] = {label: [] for label, _, _ in QUERIES}
    for rnd in range(1, opts.rounds + 1):
        load = os.getloadavg()[0]
        for label, args, condition in QUERIES:
            if rnd % 2:
                ours_s, ours_cpu, matched, scanned = run_ours(log, args)
                awk_s, awk_cpu, awk_n = run_awk(log, condition)
            else:
                awk_s, awk_cpu, awk_n = run_awk(log, condition)
                ours_s, ours_cpu, matched, scanned = run_ours(log, args)
            if matched != awk_n:
                print(f"FAILED {label}: ours matched {matched:,} lines, awk {awk_n:,}")
                failed = True
            ratios[label].append(ours_cpu / awk_cpu)
            print(
                f"round {rnd} (load {load:.1f}) {label:12s} ours {ours_cpu:5.2f} CPU-s"
                f" ({ours_s:5.2f} s wall; {scanned:,} lines, {matched:,} matched)"
                f"  awk {awk_cpu:5.2f} CPU-s ({awk_s:5.2f} s)  CPU ratio {ours_cpu / awk_cpu:5.2f}",
                flush=True,
            )
    for label, values in ratios.items():
        rounds = ", ".join(f"{v:.2f}" for v in values)
        print(
            f"{label:12s} median CPU ratio ours / awk {statistics.median(values):5.2f} ({rounds})"
        )
    if failed:
        print("benchmark FAILED: a count differs from awk's")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
