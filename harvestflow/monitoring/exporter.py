"""The metrics service: ``/metrics`` for Prometheus on loopback, the StatsD receiver, the rules.

Why one service: the readings a scrape shows are the ones the alert rules judge, computed the
same way. Probes run at each scrape (and each rule check); a probe that fails shows
``harvestflow_probe_up{probe=...} 0`` and its error in the log, never a failed scrape.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector

from harvestflow.monitoring import MonitoringError
from harvestflow.monitoring.broker_relay import BrokerRelayReceiver
from harvestflow.monitoring.config import MonitorConfig
from harvestflow.monitoring.probes import Probe, Reading
from harvestflow.monitoring.rules import Rules
from harvestflow.monitoring.statsd_receiver import StatsdReceiver, StatsdStore

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 10  # a scrape's request must arrive within this (no slow client holds a thread)


class _Handler(WSGIRequestHandler):
    timeout = REQUEST_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)


class _Collector(Collector):
    def __init__(self, service: MetricsService) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        families: dict[str, GaugeMetricFamily] = {}
        for r in self.service.readings():
            fam = families.get(r.name)
            if fam is None:
                fam = families[r.name] = GaugeMetricFamily(r.name, r.help, labels=sorted(r.labels))
            fam.add_metric([r.labels[k] for k in sorted(r.labels)], r.value)
        yield from families.values()
        yield from _statsd_families(self.service.store)


def _statsd_families(store: StatsdStore) -> Iterator[Metric]:
    grouped: dict[str, list[Any]] = {}
    for (name, labels), s in sorted(store.snapshot().items()):
        grouped.setdefault(name, []).append((labels, s))
    for name, rows in grouped.items():
        keys = sorted({k for labels, _ in rows for k, _ in labels})
        kind = rows[0][1].kind
        doc = f"StatsD {kind} {name}"
        values_of = [([dict(labels).get(k, "") for k in keys], s) for labels, s in rows]
        if kind == "ms":
            summary = SummaryMetricFamily(name, doc + " (seconds)", labels=keys)
            for values, s in values_of:
                summary.add_metric(values, count_value=s.count, sum_value=s.value)
            yield summary
            continue
        fam = (CounterMetricFamily if kind == "c" else GaugeMetricFamily)(name, doc, labels=keys)
        for values, s in values_of:
            fam.add_metric(values, s.value)
        yield fam
    yield GaugeMetricFamily(
        "harvestflow_statsd_dropped_lines",
        "StatsD lines refused (malformed, over the cap)",
        value=store.dropped,
    )


class MetricsService:
    """``/metrics`` on ``[monitoring] host:port``, StatsD on ``statsd_port`` (and the crawlers'
    lines relayed by the broker with the celery executor), rules every ``check_interval_s``. ``start()`` binds (a port taken is a :class:`MonitoringError`)."""

    def __init__(self, cfg: MonitorConfig, probes: dict[str, Probe], rules: Rules | None = None):
        self.cfg = cfg
        self.probes = probes
        self.store = StatsdStore(gauge_ttl_s=2 * cfg.stall_s)
        self.rules = rules or Rules(cfg)
        self.registry = CollectorRegistry()
        self.registry.register(_Collector(self))
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.httpd: Any = None
        self.receiver: StatsdReceiver | None = None
        self.relay: BrokerRelayReceiver | None = None

    @property
    def url(self) -> str:
        port = self.httpd.server_port if self.httpd else self.cfg.port
        return f"http://{self.cfg.host}:{port}/metrics"

    def readings(self) -> list[Reading]:
        out: list[Reading] = []
        for name, probe in self.probes.items():
            try:
                got = probe()
                up = 1.0
            except Exception as exc:  # one broken stage must not hide the others' figures
                log.error("metrics probe %s failed: %s", name, exc, exc_info=True)
                got, up = [], 0.0
            out += got
            out.append(
                Reading("harvestflow_probe_up", "1 when the probe answered", up, {"probe": name})
            )
        return out

    def check_rules(self) -> list[Any]:
        return self.rules.check(self.readings(), self.store.snapshot())

    def start(self) -> None:
        try:
            self.receiver = StatsdReceiver(self.store, self.cfg.host, self.cfg.statsd_port)
            self.httpd = make_server(
                self.cfg.host,
                self.cfg.port,
                make_wsgi_app(self.registry),
                ThreadingWSGIServer,
                handler_class=_Handler,
            )
        except OSError as exc:
            if self.receiver is not None:
                self.receiver.stop()
            raise MonitoringError(
                f"metrics service cannot listen on {self.cfg.host} (port {self.cfg.port},"
                f" StatsD {self.cfg.statsd_port}): {exc}; change [monitoring] port/statsd_port"
            ) from exc
        self.receiver.start()
        if self.cfg.broker_relay_url:  # crawls on any worker: their gauges through the broker
            self.relay = BrokerRelayReceiver(self.store, self.cfg.broker_relay_url)
            self.relay.start()
        for target, name in (
            (self.httpd.serve_forever, "metrics-http"),
            (self._loop, "alert-rules"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("metrics on %s, StatsD on udp %s:%d", self.url, self.cfg.host, self.receiver.port)

    def _loop(self) -> None:
        while not self._stop.wait(self.cfg.check_interval_s):
            try:
                self.check_rules()
            except Exception:  # the next check tries again; the log says why
                log.exception("alert rules check failed")

    def stop(self) -> None:
        self._stop.set()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        if self.receiver is not None:
            self.receiver.stop()
        if self.relay is not None:
            self.relay.stop()
        for thread in self._threads:
            thread.join(timeout=5)
