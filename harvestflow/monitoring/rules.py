"""Alert rules over the readings: a stalled crawl, index lag, a disk filling, fixity failures.

Why latched: a condition true at every check is one alert when it starts and one ``resolved``
when it ends, never a message a minute. The failed-run alert is not here: Airflow calls it
(the DAG files' ``on_failure_callback``), and a crawl that stops on a full disk sends its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from harvestflow.monitoring import alerts
from harvestflow.monitoring.alerts import Alert
from harvestflow.monitoring.config import MonitorConfig
from harvestflow.monitoring.probes import DISK_FREE_RATIO, Reading
from harvestflow.monitoring.statsd_receiver import Labels, Series

log = logging.getLogger(__name__)

INDEX_LAG = "harvestflow_index_lag_seconds"
FIXITY_LAST_FAILED = "harvestflow_fixity_last_audit_failed_files"
FIXITY_BAD_COPIES = "harvestflow_fixity_bad_copies"
CRAWL_DONE = "harvestflow_crawl_urls_done"
CRAWL_RUNNING = "harvestflow_crawl_running"


class Rules:
    """Checks the rules and sends what starts (``firing``) and what ends (``resolved``)."""

    def __init__(self, cfg: MonitorConfig, send: Callable[[Alert], object] | None = None) -> None:
        self.cfg = cfg
        self.send = send or (lambda alert: alerts.send(alert, cfg))
        self.firing: dict[str, Alert] = {}
        self.lock = threading.Lock()  # the rules' thread and a caller may check at once

    def check(
        self,
        readings: list[Reading],
        series: dict[tuple[str, Labels], Series],
        now: float | None = None,
    ) -> list[Alert]:
        """Evaluate every rule; returns the alerts sent by this check."""
        now = time.time() if now is None else now
        wanted = {**self._stalled(series, now), **self._thresholds(readings)}
        sent: list[Alert] = []
        with self.lock:
            for key, alert in wanted.items():
                if key not in self.firing:
                    self.firing[key] = alert
                    sent.append(alert)
            for key in [k for k in self.firing if k not in wanted]:
                old = self.firing.pop(key)
                sent.append(Alert(old.kind, f"ended: {old.subject}", old.detail, status="resolved"))
        for alert in sent:
            self.send(alert)
        return sent

    def _stalled(self, series: dict[tuple[str, Labels], Series], now: float) -> dict[str, Alert]:
        running = {labels: s.value for (n, labels), s in series.items() if n == CRAWL_RUNNING}
        out: dict[str, Alert] = {}
        for (name, labels), s in series.items():
            if name != CRAWL_DONE or not running.get(labels):
                continue
            still = now - s.changed
            if still < self.cfg.stall_s:
                continue
            tags = dict(labels)
            job, part = tags.get("job", "?"), tags.get("part")
            crawl = f"crawl job {job}" + (f" (process {part})" if part is not None else "")
            out[f"stalled:{job}:{part}"] = Alert(
                alerts.STALLED_CRAWL,
                f"{crawl}: no URL done for {still / 60:.1f} min ({int(s.value)} done;"
                f" [monitoring] stalled_crawl_minutes = {self.cfg.stalled_crawl_minutes:g})",
                {
                    "job_id": int(job) if job.isdigit() else job,
                    "part": part,
                    "urls_done": int(s.value),
                    "stalled_s": round(still),
                },
            )
        return out

    def _thresholds(self, readings: list[Reading]) -> dict[str, Alert]:
        out: dict[str, Alert] = {}
        limit_s = self.cfg.index_lag_hours * 3600
        for r in readings:
            if r.name == INDEX_LAG and r.value > limit_s:
                out["index_lag"] = Alert(
                    alerts.INDEX_LAG,
                    f"a WARC has waited {r.value / 3600:.1f} h to be indexed"
                    f" ([monitoring] index_lag_hours = {self.cfg.index_lag_hours:g})",
                    {"lag_s": round(r.value)},
                )
            elif r.name == DISK_FREE_RATIO and r.value * 100 < self.cfg.min_free_disk_percent:
                out[f"disk:{r.labels.get('folder')}"] = Alert(
                    alerts.DISK_LOW,
                    f"{r.labels.get('path')}: {r.value * 100:.1f} % free, below [monitoring]"
                    f" min_free_disk_percent = {self.cfg.min_free_disk_percent:g}",
                    {**r.labels, "free_ratio": r.value},
                )
            elif r.name in (FIXITY_LAST_FAILED, FIXITY_BAD_COPIES) and r.value > 0:
                what = (
                    "bad in every copy in the last audit"
                    if r.name == FIXITY_LAST_FAILED
                    else ("copies found bad and not repaired")
                )
                out[f"fixity:{r.name}"] = Alert(
                    alerts.FIXITY_FAILURE,
                    f"fixity: {int(r.value)} file(s) {what}; see the manual queue",
                    {"reading": r.name, "files": int(r.value)},
                )
        return out
