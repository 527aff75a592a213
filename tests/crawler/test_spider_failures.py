"""Failures are recorded with Heritrix's codes and retried a bounded number of times, never
fatal: connection refused (-2), timeout (-4), unsupported scheme and bad URLs (-7)."""

from __future__ import annotations

import socket

import pytest

from tests.support.crawl import FETCH_CLIENTS, make_job, run_crawl


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("fetch_client", FETCH_CLIENTS)
def test_failures_are_logged_and_the_crawl_goes_on(site, tmp_path, fetch_client):
    dead = f"http://dead.example-a.test:{closed_port()}/"
    # far slower than the 1-s timeout: a crawler starved of CPU by a loaded machine sees the
    # timeout fire late, and with 3 s it once read the answer first (200, timeTrunc)
    slow = site.url("www.example-a.test", "/slow?ms=10000")
    ok = site.url("example-b.test", "/")
    job = make_job(
        site,
        [dead, slow, ok, "ftp://files.example-a.test/x"],
        {"retries": 2, "download_timeout_s": 1, "max_hops": 0, "fetch_client": fetch_client},
    )
    job["resolve"]["dead.example-a.test"] = "127.0.0.1"
    result = run_crawl(job, tmp_path / "job")
    assert result.summary["status"] == "complete"
    line = result.line_for(dead)
    assert line[1] == "-2" and line[11].startswith("3t,")  # 1 try + 2 retries
    line = result.line_for(slow)
    assert line[1] == "-4" and "err=timeout" in line[11]
    assert result.line_for(ok)[1] == "200"
    assert result.line_for("ftp://files.example-a.test/x")[1] == "-7"
    report = (result.out / "reports" / "crawl-report.txt").read_text()
    assert "URI failures: 2" in report
    # the crawl's counters (crawler.stats) in the last progress tick: URLs fetched, failures
    ticks = (result.out / "logs" / "progress-statistics.log").read_text().splitlines()[1:-1]
    last = ticks[-1].split()
    fetched = [f for f in result.log_fields() if int(f[1]) > 0]
    assert (int(last[3]), int(last[6])) == (len(fetched), 2) and len(fetched) >= 2
