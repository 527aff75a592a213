"""``[monitoring]`` settings, read and checked in one place."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from harvestflow.monitoring import MonitoringError
from harvestflow.settings import Settings, get_settings


@dataclass(frozen=True)
class MonitorConfig:
    """Where ``/metrics`` and the StatsD receiver listen, the alert thresholds and targets."""

    enabled: bool
    host: str
    port: int
    statsd_port: int
    check_interval_s: float
    stalled_crawl_minutes: float
    index_lag_hours: float
    min_free_disk_percent: float
    webhook_url: str
    webhook_timeout_s: float
    email_to: tuple[str, ...]
    email_from: str
    smtp_host: str
    smtp_port: int
    #: the Celery broker's URL with the celery executor (crawlers on any worker relay their
    #: gauges through it: :mod:`harvestflow.monitoring.broker_relay`), else ""
    broker_relay_url: str = ""

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> MonitorConfig:
        settings = settings or get_settings()
        m = settings.data.get("monitoring", {})
        email_to = m.get("email_to") or []
        if isinstance(email_to, str):
            email_to = [email_to]
        cfg = cls(
            enabled=bool(m.get("enabled", True)),
            host=str(m.get("host", "127.0.0.1")),
            port=int(m.get("port", 9108)),
            statsd_port=int(m.get("statsd_port", 9125)),
            check_interval_s=float(m.get("check_interval_s", 60)),
            stalled_crawl_minutes=float(m.get("stalled_crawl_minutes", 30)),
            index_lag_hours=float(m.get("index_lag_hours", 6)),
            min_free_disk_percent=float(m.get("min_free_disk_percent", 10)),
            webhook_url=str(m.get("webhook_url", "")),
            webhook_timeout_s=float(m.get("webhook_timeout_s", 5)),
            email_to=tuple(str(a) for a in email_to),
            email_from=str(m.get("email_from", "harvestflow@localhost")),
            smtp_host=str(m.get("smtp_host", "")),
            smtp_port=int(m.get("smtp_port", 25)),
            broker_relay_url=settings.broker_url if settings.executor == "celery" else "",
        )
        cfg.check()
        return cfg

    def check(self) -> None:
        """Refuse values that cannot work, naming the setting."""
        if self.host != "localhost":
            try:
                loopback = ipaddress.ip_address(self.host).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                raise MonitoringError(
                    f"[monitoring] host must be a loopback address (metrics and StatsD are"
                    f" internal services; put a proxy in front to scrape from afar): {self.host!r}"
                )
        for name in ("check_interval_s", "stalled_crawl_minutes", "index_lag_hours"):
            if getattr(self, name) <= 0:
                raise MonitoringError(
                    f"[monitoring] {name} must be above 0, not {getattr(self, name)}"
                )
        if not 0 <= self.min_free_disk_percent <= 100:
            raise MonitoringError(
                f"[monitoring] min_free_disk_percent must be within 0..100,"
                f" not {self.min_free_disk_percent}"
            )
        if self.webhook_url and not self.webhook_url.startswith(("http://", "https://")):
            raise MonitoringError(
                f"[monitoring] webhook_url must be an http(s) URL: {self.webhook_url!r}"
            )

    @property
    def stall_s(self) -> float:
        return self.stalled_crawl_minutes * 60.0
