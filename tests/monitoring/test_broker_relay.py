"""With the celery executor a crawl's gauges reach ``/metrics`` through the broker, wherever the
crawl runs (a remote worker's loopback StatsD port reaches nobody); the relay list is capped
and a broker away never fails a crawler's send."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from harvestflow import settings as settings_mod
from harvestflow.monitoring import broker_relay
from harvestflow.monitoring.config import MonitorConfig
from harvestflow.monitoring.exporter import MetricsService
from harvestflow.monitoring.push import CrawlGauges
from harvestflow.services.redis import EmbeddedRedis
from tests.support.crawl import make_job, run_crawl
from tests.support.environment import free_port
from tests.support.monitoring import matching, scrape


@pytest.fixture()
def celery(broker: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch) -> Iterator[redis.Redis]:
    """The celery executor on this test's broker (for this process and the crawler child)."""
    monkeypatch.setenv("HARVESTFLOW_AIRFLOW__EXECUTOR", "celery")
    monkeypatch.setenv("HARVESTFLOW_BROKER__PORT", str(broker.port))
    settings_mod.reset()
    client = redis.Redis.from_url(broker.url)
    client.flushdb()
    yield client
    client.close()
    settings_mod.reset()


def test_a_crawl_whose_statsd_port_reaches_nobody_shows_in_metrics_through_the_broker(
    monitor_ports: None,
    celery: redis.Redis,
    site: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    svc = MetricsService(MonitorConfig.from_settings(), {})
    svc.start()
    # the crawler's StatsD port is one nobody listens on, as on a worker machine of its own
    monkeypatch.setenv("HARVESTFLOW_MONITORING__STATSD_PORT", str(free_port()))
    settings_mod.reset()
    try:
        assert svc.relay is not None
        assert not [k for k in scrape(svc.url) if k.startswith("harvestflow_crawl_")]
        job = make_job(site, [site.url("www.example-a.test", "/")], job_id=31)
        result = run_crawl(job, tmp_path / "out")
        progress = (result.out / "logs" / "progress-statistics.log").read_text().splitlines()
        downloaded = int(progress[-2].split()[3])  # the crawl's own last count
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # the drain runs every half second
            scraped = scrape(svc.url)
            if matching(scraped, "harvestflow_crawl_urls_done", job="31") == downloaded:
                break
            time.sleep(0.2)
    finally:
        svc.stop()
    assert downloaded > 0
    assert matching(scraped, "harvestflow_crawl_urls_done", job="31") == downloaded
    assert matching(scraped, "harvestflow_crawl_running", job="31") == 0  # its last tick: ended
    assert celery.llen(broker_relay.RELAY_KEY) == 0  # drained


def test_the_relay_list_keeps_the_newest_lines_up_to_its_cap(
    celery: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metrics service that is down never fills the broker: the oldest lines go."""
    monkeypatch.setattr(broker_relay, "MAX_QUEUED", 5)
    gauges = CrawlGauges.from_settings(41)
    assert gauges is not None and gauges.relay is not None
    for n in range(8):
        gauges.send(urls_done=n)
    kept = [x.decode() for x in celery.lrange(broker_relay.RELAY_KEY, 0, -1)]
    assert kept == [f"harvestflow.crawl.urls_done,job=41:{float(n)}|g" for n in range(3, 8)]


def test_a_broker_away_loses_the_gauges_never_the_crawl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARVESTFLOW_AIRFLOW__EXECUTOR", "celery")
    monkeypatch.setenv("HARVESTFLOW_BROKER__PORT", str(free_port()))  # nobody there
    settings_mod.reset()
    try:
        gauges = CrawlGauges.from_settings(42)
        assert gauges is not None and gauges.relay is not None
        gauges.send(urls_done=3, running=1)  # logged at debug level, not raised
    finally:
        settings_mod.reset()
