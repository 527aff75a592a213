"""The QA side of ``bench/run qa``: the whole daily computation on one crawl.log, figures as JSON.

Why a child process of its own: the runner measures the CPU, wall time and peak RSS of this
command's whole process tree, interpreter start and imports included, as a user pays them.
It runs the daily computation without the DB (crawl-log pass, host → domain/TLD mapping, every
metric family, text/CSV/HTML/SVG report into OUT) and prints one JSON line: status counts, MIME
counts, lines read and rejected (compared by the runner with awk's and with the generator's
truth file), plus timings of its phases. The comparison with awk is bench/qa/spec.py's.

    .venv/bin/python bench/qa/bench_qa.py --child LOG OUT
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--child", nargs=2, type=Path, metavar=("LOG", "OUT"), required=True)
    args = ap.parse_args(argv)
    child(*args.child)
    return 0


if __name__ == "__main__":
    sys.exit(main())
