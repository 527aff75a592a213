"""What one day's QA computation holds: the jobs' crawl-log outcomes and the figures built
from them. Its own module because the computation (qa.daily), the comparisons
(qa.daily_compare) and the report files (qa.report) all read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from qa import metrics
from qa.crawllog_aggregate import LogAggregate
from qa.inputs import JobInfo


@dataclass
class JobOutcome:
    """What happened to one job's crawl log."""

    job: JobInfo
    log_path: Path | None
    state: str = "ok"  # ok, missing, unreadable, corrupt (some bad lines), empty
    message: str = ""
    aggregate: LogAggregate | None = None


@dataclass
class DayComputation:
    day: date
    outcomes: list[JobOutcome]
    tables: metrics.ScopeTables
    scopes: dict[str, metrics.Families] = field(default_factory=dict)
    jobs_table: pd.DataFrame | None = None
    problems: list[str] = field(default_factory=list)
    dns_counts: dict[str, int] = field(default_factory=dict)
    # qa.daily_compare.DayComparisons, set by run_daily (needs the DB); the report falls back
    # to the comparisons the day's own figures allow (selective vs broad)
    comparisons: Any = None
    # full-text extraction of the WARCs finished that day (search backend's day_counts)
    fulltext: dict[str, int] | None = None
    documents: list[dict[str, Any]] | None = None  # per watched target (qa.documents)
    # capture-vs-replay QA of rendered pages per definition (qa.page_scores; needs the DB)
    page_qa: list[Any] | None = None
