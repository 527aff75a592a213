"""Fixtures for crawler tests: the sample site on a free loopback port and a helper that runs a
crawl job in a child process (Twisted's reactor runs once per process)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.demo.samplesite import SampleSite, start

REPO = Path(__file__).resolve().parents[2]
ORACLE_BIN = REPO / ".oracle-venv" / "bin"

FAST_TEMPLATE = {
    "delay_factor": 0.0,
    "min_delay_ms": 0,
    "max_delay_ms": 0,
    "connections_per_host": 4,
    "retries": 1,
    "download_timeout_s": 10,
    "dedup_mime_exclude": "^text/",
}


@dataclass
class CrawlResult:
    out: Path
    summary: dict[str, Any]
    proc: subprocess.CompletedProcess[str]

    @property
    def crawl_log(self) -> list[str]:
        return (self.out / "logs" / "crawl.log").read_text().splitlines()

    def log_fields(self) -> list[list[str]]:
        return [line.split() for line in self.crawl_log]

    def data_warcs(self) -> list[Path]:
        return sorted(p for p in (self.out / "warcs").glob("*.warc.gz") if "metadata" not in p.name)

    def line_for(self, url: str) -> list[str]:
        found = [f for f in self.log_fields() if f[3] == url]
        assert found, f"{url} not in crawl.log"
        return found[-1]


def make_job(
    site: SampleSite, seeds: list[str], template: dict | None = None, **extra: Any
) -> dict:
    job = {
        "job_id": extra.pop("job_id", 7),
        "harvest_id": extra.pop("harvest_id", 2),
        "seeds": seeds,
        "template": {**FAST_TEMPLATE, **(template or {})},
        "resolve": site.resolve_map(),
    }
    job.update(extra)
    return job


def run_crawl(job: dict, out: Path, *, check: bool = True, timeout: float = 120) -> CrawlResult:
    """Run ``python -m crawler --job`` on ``job`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    job_path = out.parent / f"{out.name}-job.json"
    job_path.write_text(json.dumps(job))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "crawler",
            "--job",
            str(job_path),
            "--out",
            str(out),
            "--progress-interval",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return CrawlResult(out, summary, proc)


@pytest.fixture(scope="module")
def site() -> Iterator[SampleSite]:
    s = start()
    yield s
    s.stop()


@pytest.fixture()
def fresh_site() -> Iterator[SampleSite]:
    """A site of its own, for tests that measure the requests it served."""
    s = start()
    yield s
    s.stop()
