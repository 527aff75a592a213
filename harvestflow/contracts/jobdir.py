"""The layout of one job's directory, in one object.

Why one object: the crawler writes this directory and harvest, indexing, QA, preservation and
the curator pages read it; each used to spell the paths itself. ``JobDir(path)`` names every
file and folder (job.json, summary.json, warcs/, logs/, reports/, state/, partitions); it
creates nothing (the writers ``mkdir`` what they write).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

JOB_JSON = "job.json"
SUMMARY_JSON = "summary.json"


@dataclass(frozen=True)
class JobDir:
    """The files of a job directory; ``JobDir(path)`` accepts a str or a Path."""

    path: Path

    def __init__(self, path: str | os.PathLike[str]) -> None:
        object.__setattr__(self, "path", Path(path))

    def __fspath__(self) -> str:
        return str(self.path)

    @classmethod
    def of_spec(cls, job_json: str | os.PathLike[str]) -> JobDir:
        """The job directory holding the job spec ``job_json``."""
        return cls(Path(job_json).parent)

    @property
    def job_json(self) -> Path:
        return self.path / JOB_JSON

    @property
    def summary_json(self) -> Path:
        return self.path / SUMMARY_JSON

    @property
    def warcs(self) -> Path:
        return self.path / "warcs"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def crawl_log(self) -> Path:
        return self.logs / "crawl.log"

    @property
    def crawl_log_gz(self) -> Path:
        return self.logs / "crawl.log.gz"

    @property
    def crawler_log(self) -> Path:
        return self.logs / "crawler.log"

    @property
    def progress_log(self) -> Path:
        return self.logs / "progress-statistics.log"

    @property
    def actions_log(self) -> Path:
        return self.logs / "operator-actions.log"

    @property
    def leases_held(self) -> Path:
        return self.path / "host-leases-held.json"

    @property
    def reports(self) -> Path:
        return self.path / "reports"

    @property
    def state(self) -> Path:
        return self.path / "state"

    @property
    def crawl_state(self) -> Path:
        return self.state / "crawl.sqlite"

    @property
    def render_ca(self) -> Path:
        return self.state / "render-ca"

    @property
    def recorded_cdx(self) -> Path:
        return self.state / "cdx.unsorted"

    @property
    def partitions(self) -> Path:
        """Where the parent of a partitioned crawl and its children coordinate."""
        return self.state / "partitions"

    def part(self, index: int) -> JobDir:
        """Partition child ``index``'s own directory (the same layout)."""
        return JobDir(self.state / f"part-{index}")

    def report(self, name: str) -> Path:
        return self.reports / name

    def report_files(self) -> list[Path]:
        """The text reports, sorted by name ([] before the crawl wrote any)."""
        return sorted(self.reports.glob("*.txt")) if self.reports.is_dir() else []

    def crawl_log_file(self) -> Path | None:
        """crawl.log, else its gzipped copy, else None."""
        if self.crawl_log.exists():
            return self.crawl_log
        if self.crawl_log_gz.exists():
            return self.crawl_log_gz
        return None
