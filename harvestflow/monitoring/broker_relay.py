"""The crawlers' StatsD lines carried by the Celery broker, for crawls on any worker machine.

Why: a crawler's gauges go to the metrics service's StatsD port, which listens on loopback (an
internal service). A crawl run by a ``harvestflow worker`` on another machine would send them to
its own loopback, where nobody listens, and vanish from ``/metrics`` and from the stalled-crawl
rule. With the celery executor every worker already reaches the broker's Redis (its tasks and
host leases come from there), so a crawler appends its StatsD datagram to a capped list there
and the metrics service drains that list into the same :class:`StatsdStore` the UDP receiver
feeds: one set of names, one TTL, one stalled rule, wherever the crawl ran.

A metric is never worth a crawl: every broker call is time-limited, a failure is logged at debug
level and the line dropped. The list is capped at :data:`MAX_QUEUED` lines (the oldest go) so a
metrics service that is down never fills the broker.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from harvestflow.monitoring.statsd_receiver import StatsdStore

log = logging.getLogger(__name__)

RELAY_KEY = "hf:metrics:statsd"
MAX_QUEUED = 10_000  # datagrams kept while nobody drains the list
BATCH = 500  # datagrams taken per round trip by the metrics service
TIMEOUT_S = 0.5  # a sender's connect and call time-out: a slow broker must not slow a crawl
IDLE_S = 0.5  # the drain's pause when the list is empty
RETRY_S = 5.0  # the drain's pause after a broker error


def _client(url: str, timeout_s: float) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)


class BrokerRelaySender:
    """Appends a crawler's StatsD datagrams to the broker's relay list."""

    def __init__(self, url: str) -> None:
        self.client = _client(url, TIMEOUT_S)

    def send(self, datagram: str) -> None:
        import redis

        try:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.rpush(RELAY_KEY, datagram)
                pipe.ltrim(RELAY_KEY, -MAX_QUEUED, -1)
                pipe.execute()
        except (redis.RedisError, OSError) as exc:
            log.debug("crawl gauges not relayed by the broker: %s", exc)


class BrokerRelayReceiver:
    """Drains the relay list into ``store`` from a daemon thread (the metrics service's side)."""

    def __init__(self, store: StatsdStore, url: str) -> None:
        self.store = store
        self.client = _client(url, 5.0)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="broker-relay", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def drain_once(self) -> int:
        """Feed every datagram waiting now (in batches); how many were fed."""
        fed = 0
        while True:
            batch = self.client.lpop(RELAY_KEY, BATCH) or []
            for raw in batch:
                self.store.feed(raw.decode("utf-8", "replace"))
            fed += len(batch)
            if len(batch) < BATCH:
                return fed

    def _run(self) -> None:
        import redis

        failing = False
        while not self._stop.is_set():
            try:
                fed = self.drain_once()
                if failing:
                    log.info("broker relay of crawl metrics: the broker answers again")
                    failing = False
            except (redis.RedisError, OSError) as exc:
                if not failing:  # said once per outage, not every RETRY_S
                    log.warning("broker relay of crawl metrics: %s (retrying)", exc)
                failing = True
                self._stop.wait(RETRY_S)
                continue
            if not fed:
                self._stop.wait(IDLE_S)

    def stop(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=RETRY_S + 1)
        self.client.close()
