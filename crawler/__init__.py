"""The archival crawler: Scrapy-based, writing WARC 1.1 files, Heritrix-compatible logs and
reports, with scope, traps, budgets, politeness, deduplication and resume after a crash.

Entry points: :func:`crawler.runner.run_job` (in this process, once per process) and
:func:`crawler.launch.crawl_in_subprocess` (what a DAG task calls); ``python -m crawler``.
This package's own module holds only the base error: every crawler module imports it, so it
imports none of them (no import cycle through the package).
"""

from __future__ import annotations

from harvestflow.errors import HarvestflowError


class CrawlerError(HarvestflowError):
    """A failure raised on purpose by the crawler (bad job spec, a crawl that failed, a lease
    held by another crawler...), not a bug. Defined here rather than in crawler/errors.py,
    whose fetch-stopping exceptions need Scrapy: this base imports nothing heavy."""


# ``python -m crawler``'s exit status when it refuses its input (a seed that is no URL, a job
# spec that breaks the contract): nothing was crawled, and the same input is refused again, so a
# caller does not retry it (crawler.launch.CrawlRefused). argparse's usage errors exit 2 as well.
EXIT_REFUSED = 2

__all__ = ["EXIT_REFUSED", "CrawlerError"]
