"""Benchmark: the daily QA computation on a 10,000,000-line crawl.log against one awk pass.

Why a ratio: timings on a shared 2-core machine are noisy; awk counting status codes and MIME
types in a single pass over the same (page-cached) file, measured in the same run, is the
peer. The QA side runs the whole daily computation without the DB (crawl-log pass, host →
domain/TLD mapping, every metric family, text/CSV/HTML/PNG report) in a child process, so its
peak RSS (child + its worker processes) is measured too. QA's status and MIME counts and its
number of rejected lines are compared with what the generator wrote (``<log>.truth.json``), so
a fast but wrong parse cannot pass; awk must have read every line. The figures are medians over
the rounds (each round: awk, then QA, back to back), not the best round.

    .venv/bin/python bench/qa/bench_qa.py [--lines 10000000] [--rounds 2] [--workdir DIR]

Targets: <= 60 s, <= 4 GiB, and no slower than 2 x the awk pass.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
AWK_PROG = (
    '{s[$2]++; m[$7]++} END {for (k in s) print "S", k, s[k]; for (k in m) print "M", k, m[k]}'
)


def run_awk(log: Path) -> tuple[float, dict[str, dict[str, int]]]:
    started = time.perf_counter()
    out = subprocess.run(
        ["awk", AWK_PROG, str(log)], capture_output=True, text=True, check=True,
        env={**os.environ, "LC_ALL": "C"},
    ).stdout  # fmt: skip
    elapsed = time.perf_counter() - started
    counts: dict[str, dict[str, int]] = {"S": {}, "M": {}}
    for line in out.splitlines():
        kind, key, n = line.split(" ")
        counts[kind][key] = int(n)
    return elapsed, counts


def child(log: Path, out: Path) -> None:
    """Run the daily computation on one job whose crawl.log is ``log``; print JSON."""
    import logging
    from datetime import UTC, date, datetime

    import polars as pl

    from qa.daily import compute_day
    from qa.inputs import JobInfo
    from qa.report import write_report

    logging.basicConfig(level=logging.WARNING)
    job_dir = out / "job"
    (job_dir / "logs").mkdir(parents=True, exist_ok=True)
    link = job_dir / "logs" / "crawl.log"
    if not link.exists():
        link.symlink_to(log)
    job = JobInfo(1, 1, "bench", "full", 1, 3, datetime(2026, 11, 22, 0, tzinfo=UTC),
                  datetime(2026, 11, 22, 3, tzinfo=UTC), str(job_dir))  # fmt: skip
    started = time.perf_counter()
    comp = compute_day(date(2026, 11, 22), [job], out)
    computed = time.perf_counter()
    write_report(comp, out / "report")
    elapsed = time.perf_counter() - started
    groups = comp.outcomes[0].aggregate.groups  # type: ignore[union-attr]
    status = groups.group_by("status").agg(pl.col("lines").sum())
    mime = groups.group_by("mime").agg(pl.col("lines").sum())
    print(
        json.dumps(
            {
                "elapsed": elapsed,
                "crawl_log_pass": comp.outcomes[0].aggregate.elapsed_s,  # type: ignore[union-attr]
                "report": time.perf_counter() - computed,
                "self_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                "worker_rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                "workers": os.cpu_count(),
                "engine": _engine(),
                "lines": comp.outcomes[0].aggregate.lines,  # type: ignore[union-attr]
                "bad": comp.outcomes[0].aggregate.bad_lines,  # type: ignore[union-attr]
                "S": {str(k): int(v) for k, v in status.iter_rows()},
                "M": {str(k): int(v) for k, v in mime.iter_rows()},
            }
        )
    )


def _engine() -> str:
    """Which crawl.log path the QA side took (the C scanner unless absent or disabled)."""
    from qa import crawlscan

    if os.environ.get("HARVESTFLOW_QA_ENGINE") == "polars" or not crawlscan.available():
        return "polars (worker processes)"
    return "C scanner qa._crawlscan (threads)"


def run_qa(log: Path, work: Path) -> dict:
    out = work / "qa-out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(log), str(out)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - started  # includes interpreter start and imports
    return result


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hf-qa-bench")
    ap.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    sys.path.insert(0, str(HERE))
    from gen_crawllog import generate, truth_path

    args.workdir.mkdir(parents=True, exist_ok=True)
    # v2: odd lines, MIME parameters and non-ASCII URLs (a v1 log in the cache has none);
    # v3: the same bytes, the 13-field lines counted as rejected in the truth file
    log = args.workdir / f"crawl-{args.lines}-v3.log"
    if not log.exists() or not truth_path(log).exists():
        print(f"generating {args.lines:,} lines into {log} ...", flush=True)
        generate(log, args.lines)
    truth = json.loads(truth_path(log).read_text(encoding="utf-8"))
    size = log.stat().st_size
    with log.open("rb") as fh:  # warm the page cache for both sides
        while fh.read(1 << 24):
            pass
    awk_times: list[float] = []
    qa_runs: list[dict] = []
    loads: list[str] = []
    failures: list[str] = []
    for n in range(args.rounds):
        t, awk_counts = run_awk(log)
        if sum(awk_counts["S"].values()) != truth["lines"]:
            failures.append(f"round {n + 1}: awk counted {sum(awk_counts['S'].values())} lines")
        awk_times.append(t)
        qa = run_qa(log, args.workdir)
        qa_runs.append(qa)
        loads.append(_loadavg())
        print(f"round {n + 1}: awk {t:.2f} s, QA daily {qa['elapsed']:.2f} s "
              f"(crawl.log pass {qa['crawl_log_pass']:.2f} s, report files {qa['report']:.2f} s;"
              f" wall with start-up {qa['wall']:.2f} s; ratio {qa['wall'] / t:.2f};"
              f" load {loads[-1]})", flush=True)  # fmt: skip
        for what, got, want in (
            ("status counts", qa["S"], truth["S"]),
            ("MIME counts", qa["M"], truth["M"]),
            ("lines", qa["lines"], truth["lines"]),
            ("rejected lines", qa["bad"], truth["rejected"]),
        ):
            if got != want:
                diff = (
                    {k: (got.get(k), want.get(k)) for k in set(got) | set(want)
                     if got.get(k) != want.get(k)}
                    if isinstance(got, dict) else (got, want)
                )  # fmt: skip
                failures.append(
                    f"round {n + 1}: QA {what} differ from the log's (QA, truth): {diff}"
                )
    # the ratio of each round (awk and QA run back to back) is less exposed to load changes
    ratios = [q["wall"] / a for q, a in zip(qa_runs, awk_times, strict=True)]
    # worker processes only on the polars path (the C scanner runs in threads)
    rss_gib = max((q["self_rss_kb"] + q["worker_rss_kb"] * q["workers"]) / 1024**2 for q in qa_runs)
    awk_name = os.path.realpath(shutil.which("awk") or "awk")
    med = statistics.median
    shares = ", ".join(f"{k} {v / truth['lines']:.3%}" for k, v in truth["shares"].items())
    odd = ", ".join(f"{k} {v}" for k, v in truth["odd"].items())
    print(f"crawl.log: {truth['lines']:,} lines, {size / 1e9:.2f} GB; lines with {shares};"
          f" odd lines {odd} ({truth['rejected']} to reject; QA rejected {qa_runs[-1]['bad']})")  # fmt: skip
    print(f"awk ({awk_name}) median: {med(awk_times):.2f} s")
    print(
        f"QA crawl.log engine: {qa_runs[-1]['engine']}; load average per round: {'; '.join(loads)}"
    )
    print(f"QA daily median: {med(q['wall'] for q in qa_runs):.2f} s wall (computation"
          f" {med(q['elapsed'] for q in qa_runs):.2f} s, crawl.log pass"
          f" {med(q['crawl_log_pass'] for q in qa_runs):.2f} s)")  # fmt: skip
    print(f"peak RSS (parent + {qa_runs[-1]['workers']} workers, upper bound, max of rounds):"
          f" {rss_gib:.2f} GiB")  # fmt: skip
    print("per-round ratios: " + ", ".join(f"{r:.2f}" for r in ratios))
    print(f"RATIO QA/awk = {med(ratios):.2f} (median of {len(ratios)} rounds; target <= 2.0)")
    if failures:
        print("benchmark FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("QA's status and MIME counts and rejected lines equal the generated log's in every round")
    return 0


if __name__ == "__main__":
    sys.exit(main())
