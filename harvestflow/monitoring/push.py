"""A crawler's progress as StatsD gauges to the metrics service (``[monitoring] statsd_port``).

Why pushed: a crawl's rate, queue and rendered pages live in its own process; one UDP datagram
per progress tick reaches ``/metrics`` at once and costs the crawl nothing when nobody listens.
With the celery executor the same datagram goes through the broker instead
(:mod:`harvestflow.monitoring.broker_relay`): the crawl may run on another machine, whose
loopback the metrics service does not listen on.
"""

from __future__ import annotations

import logging

from statsd import StatsClient

from harvestflow.monitoring.broker_relay import BrokerRelaySender
from harvestflow.monitoring.config import MonitorConfig

log = logging.getLogger(__name__)

PREFIX = "harvestflow.crawl."
# gauge names (Prometheus: harvestflow_crawl_<name>{job="<id>"})
CRAWL_GAUGES = ("urls_done", "urls_queued", "urls_per_second", "pages_rendered", "running")


class CrawlGauges:
    """Sends one crawler's gauges (labels ``job``, and ``part`` for a process of a partitioned
    job) by UDP, or through the broker when ``relay_url`` is given; ``None`` from
    :meth:`from_settings` when monitoring is off."""

    def __init__(
        self,
        job_id: int | str,
        host: str,
        port: int,
        part: int | None = None,
        relay_url: str = "",
    ) -> None:
        self.tags = f"job={job_id}" + (f",part={part}" if part is not None else "")
        self.relay = BrokerRelaySender(relay_url) if relay_url else None
        self.client = None if self.relay else StatsClient(host, port)

    @classmethod
    def from_settings(cls, job_id: int | str, part: int | None = None) -> CrawlGauges | None:
        cfg = MonitorConfig.from_settings()
        if not cfg.enabled:
            return None
        return cls(job_id, cfg.host, cfg.statsd_port, part, cfg.broker_relay_url)

    def send(self, **values: float) -> None:
        unknown = set(values) - set(CRAWL_GAUGES)
        if unknown:
            raise ValueError(f"unknown crawl gauge(s): {sorted(unknown)}")
        if self.relay is not None:
            self.relay.send(
                "\n".join(
                    f"{PREFIX}{name},{self.tags}:{max(float(value), 0.0)}|g"
                    for name, value in values.items()
                )
            )
            return
        assert self.client is not None  # made by __init__ whenever nothing is relayed
        try:
            with self.client.pipeline() as pipe:
                for name, value in values.items():
                    pipe.gauge(f"{PREFIX}{name},{self.tags}", max(float(value), 0.0))
        except OSError as exc:  # no route, a full socket buffer: a metric is never worth a crawl
            log.debug("crawl gauges not sent: %s", exc)
