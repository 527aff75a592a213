"""``/metrics`` exposes each named metric, and its value moves when the work it counts happens:
a crawl's URLs done, queue, rate and rendered pages (pushed by the crawler), preservation's
packages and fixity coverage, the daily QA's figures (read from the harvest DB). Index lag,
disk free and Airflow's own metrics are shown moving in test_alerts.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from app.runtime.monitor_service import stage_probes
from harvestflow.monitoring.config import MonitorConfig
from harvestflow.monitoring.exporter import MetricsService
from harvestflow.settings import Settings, get_settings
from tests.support.crawl import REPO
from tests.support.crawl import make_job as make_crawl_job
from tests.support.monitoring import matching, scrape
from tests.support.preservation_jobs import make_job, pres_settings  # noqa: F401 - fixtures
from tests.support.renderjobs import crawl_scriptsite

MiB = 1024 * 1024


def test_a_rendered_crawl_moves_its_urls_queue_rate_and_pages_rendered(
    monitor_ports: None, tmp_path: Path
) -> None:
    svc = MetricsService(MonitorConfig.from_settings(), {})
    svc.start()
    seen: dict[str, float] = {}
    done = threading.Event()

    def poll() -> None:  # the crawl's live gauges, highest value seen of each
        while not done.is_set():
            for key, value in scrape(svc.url).items():
                if key.startswith("harvestflow_crawl_"):
                    seen[key] = max(seen.get(key, 0.0), value)
            time.sleep(0.2)

    try:
        assert not [k for k in scrape(svc.url) if k.startswith("harvestflow_crawl_")]
        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        result, _, _ = crawl_scriptsite(tmp_path, "rendered", "seeds")
        done.set()
        watcher.join(timeout=10)
        final = scrape(svc.url)
    finally:
        svc.stop()
    assert result.summary["status"] == "complete"
    progress = (result.out / "logs" / "progress-statistics.log").read_text().splitlines()
    downloaded = int(progress[-2].split()[3])  # the crawl's own last count, before CRAWL ENDED
    assert downloaded > 0
    assert matching(final, "harvestflow_crawl_urls_done", job="9") == downloaded
    assert matching(final, "harvestflow_crawl_pages_rendered", job="9") == 1  # the seed
    assert matching(final, "harvestflow_crawl_running", job="9") == 0  # ended
    assert matching(final, "harvestflow_crawl_urls_queued", job="9") == 0
    assert matching(seen, "harvestflow_crawl_running", job="9") == 1  # while it ran
    assert matching(seen, "harvestflow_crawl_urls_per_second", job="9") > 0


def test_preservation_fixity_and_qa_metrics_move_when_their_work_happens(
    pres_settings: Settings,  # noqa: F811 - the fixture
    make_job: Any,  # noqa: F811
    db_engine: sa.Engine,
    monitor_ports: None,
    tmp_path: Path,
) -> None:
    from preservation.ingest import ingest_job
    from qa.store import save_day

    svc = MetricsService(MonitorConfig.from_settings(get_settings()), stage_probes(pres_settings))
    svc.start()
    day = date(2099, 1, 1)  # after any day another test reports on: the newest
    try:
        before = scrape(svc.url)
        job = make_job((1 * MiB, 2 * MiB))
        assert ingest_job(job.job_id, pres_settings)["status"] == "preserved"
        save_day(db_engine, day, [("day", "general", "urls", 42.0)], tmp_path, {})
        after = scrape(svc.url)
    finally:
        svc.stop()
        with db_engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM qa_stats WHERE day = :d"), {"d": day})
            conn.execute(sa.text("DELETE FROM qa_reports WHERE day = :d"), {"d": day})

    def moved(name: str, **labels: str) -> float:
        return matching(after, name, **labels) - matching(before, name, **labels)

    files = len(job.files) + 6  # the WARCs and the bag's tag files
    assert moved("harvestflow_preservation_packages", status="preserved") == 1
    assert moved("harvestflow_fixity_files") == files
    assert moved("harvestflow_fixity_verified_in_period_files") == files
    assert matching(after, "harvestflow_qa_day_figure", figure="urls") == 42.0
    stamp = matching(after, "harvestflow_qa_day_timestamp_seconds")
    assert time.strftime("%Y-%m-%d", time.gmtime(stamp)) == "2099-01-01"
    assert all(matching(after, "harvestflow_probe_up", probe=p) == 1 for p in ("indexing", "qa"))


def test_each_process_of_a_partitioned_crawl_reports_under_its_own_part_label(
    monitor_ports: None,
    site: Any,
    tmp_path: Path,
) -> None:
    """Two crawler processes of one job: two series (``part="0"``, ``part="1"``), never one
    overwritten by the other (which would hide a stalled process behind its sibling)."""
    job = make_crawl_job(site, [site.url("www.example-a.test", "/")], job_id=23)
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job))
    svc = MetricsService(MonitorConfig.from_settings(), {})
    svc.start()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "crawler",
                "--job",
                str(job_path),
                "--out",
                str(tmp_path / "out"),
                "--processes",
                "2",
                "--progress-interval",
                "0.5",
            ],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=REPO,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        scraped = scrape(svc.url)
    finally:
        svc.stop()
    done = [matching(scraped, "harvestflow_crawl_urls_done", job="23", part=p) for p in "01"]
    assert sum(done) > 0
    assert [matching(scraped, "harvestflow_crawl_running", job="23", part=p) for p in "01"] == [
        0,
        0,
    ]


@pytest.mark.parametrize("line", ["x:1|q", "no-colon", "y:abc|c", "z:1"])
def test_malformed_statsd_lines_are_counted_as_dropped_never_exposed(
    monitor_ports: None, line: str
) -> None:
    svc = MetricsService(MonitorConfig.from_settings(), {})
    try:
        svc.store.feed(f"{line}\nok.count,dag_id=d:2|c\nok.count,dag_id=d:3|c")
        scraped = scrape_of(svc)
    finally:
        svc.stop()
    assert matching(scraped, "harvestflow_statsd_dropped_lines") == 1
    assert matching(scraped, "ok_count_total", dag_id="d") == 5


def scrape_of(svc: MetricsService) -> dict[str, float]:
    svc.start()
    return scrape(svc.url)
