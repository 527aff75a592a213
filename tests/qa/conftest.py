"""Fixtures of the QA tests: the golden jobs (hand-written crawl logs) as JobInfo objects."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from qa.inputs import JobInfo

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def golden_jobs() -> list[JobInfo]:
    """Job 1: selective, clean log with one unpadded line; job 2: broad, two bad lines;
    job 3: broad, crawl log missing."""
    return [
        JobInfo(1, 1, "demo-daily", "partial", 1, 3,
                datetime(2026, 11, 22, 10, 0, tzinfo=UTC),
                datetime(2026, 11, 22, 10, 30, tzinfo=UTC), str(DATA / "jobs" / "1")),
        JobInfo(2, 2, "broad-2026", "full", 1, 3,
                datetime(2026, 11, 22, 9, 0, tzinfo=UTC),
                datetime(2026, 11, 22, 10, 0, tzinfo=UTC), str(DATA / "jobs" / "2")),
        JobInfo(3, 2, "broad-2026", "full", 1, 4, None, None, str(DATA / "jobs" / "3")),
    ]  # fmt: skip


@pytest.fixture
def golden_history() -> pd.DataFrame:
    rows = [
        (1, "example-a.test", 0, 6, 10100),
        (1, "example-b.test", 1, 3, 19000),
        (2, "site.fr", 0, 3, 54600),
        (2, "example.com", 4, 2, 1500),
    ]
    return pd.DataFrame(rows, columns=["job_id", "domain", "stopreason", "objects", "bytes"])
