"""The archival crawler: Scrapy-based, writing WARC 1.1 files, Heritrix-compatible logs and
reports, with scope, traps, budgets, politeness, deduplication and resume after a crash.

Entry points: :func:`run_job` (in this process, once per process) and
:func:`crawler.launch.crawl_in_subprocess` (what a DAG task calls); ``python -m crawler``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvestflow.contracts.summary import JobSummary

from harvestflow.errors import HarvestflowError


class CrawlerError(HarvestflowError):
    """A failure raised on purpose by the crawler (bad job spec, a crawl that failed, a lease
    held by another crawler...), not a bug. Defined here rather than in crawler/errors.py,
    whose fetch-stopping exceptions need Scrapy: this base imports nothing heavy."""


def run_job(job_path: Path, out_dir: Path, *, progress_interval_s: float = 10.0) -> JobSummary:
    """Run one job in this process; see :func:`crawler.runner.run_job`."""
    from crawler.runner import run_job as _run

    return _run(job_path, out_dir, progress_interval_s=progress_interval_s)


__all__ = ["CrawlerError", "run_job"]
