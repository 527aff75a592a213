"""Alerts: one JSON POST to ``[monitoring] webhook_url`` and, when configured, one email.

Why a webhook: every chat and paging tool (Mattermost, Slack, Alertmanager's webhook receivers,
a ticket system) takes one; the body carries ``text`` (the line a chat shows) beside the
structured fields. Sending never raises: an alert that cannot be delivered is logged as an
error, and the work that raised it (a DAG callback, a crawl stopping) goes on.
"""

from __future__ import annotations

import json
import logging
import smtplib
import urllib.request
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any

from harvestflow.monitoring.config import MonitorConfig

log = logging.getLogger(__name__)

# the kinds of alert, each a rule of docs/engineers/monitoring.md
FAILED_RUN = "failed_run"
STALLED_CRAWL = "stalled_crawl"
INDEX_LAG = "index_lag"
DISK_LOW = "disk_low"
CRAWL_DISK_FULL = "crawl_disk_full"
FIXITY_FAILURE = "fixity_failure"
KINDS = (FAILED_RUN, STALLED_CRAWL, INDEX_LAG, DISK_LOW, CRAWL_DISK_FULL, FIXITY_FAILURE)


@dataclass
class Alert:
    """One alert: its kind, ``firing`` or ``resolved``, a one-line subject and the facts."""

    kind: str
    subject: str
    detail: dict[str, Any] = field(default_factory=dict)
    status: str = "firing"
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def body(self) -> dict[str, Any]:
        mark = "RESOLVED" if self.status == "resolved" else "ALERT"
        return {
            "source": "harvestflow",
            "text": f"[harvestflow {mark}] {self.subject}",
            **asdict(self),
        }


def send(alert: Alert, cfg: MonitorConfig | None = None) -> bool:
    """Deliver ``alert`` to the webhook and the email list; True when every target took it."""
    cfg = cfg or MonitorConfig.from_settings()
    (log.info if alert.status == "resolved" else log.warning)(
        "alert %s (%s): %s", alert.kind, alert.status, alert.subject
    )
    ok = True
    if cfg.webhook_url:
        ok = _post(cfg, alert) and ok
    if cfg.email_to and cfg.smtp_host:
        ok = _email(cfg, alert) and ok
    return ok


def _post(cfg: MonitorConfig, alert: Alert) -> bool:
    data = json.dumps(alert.body(), default=str).encode()
    request = urllib.request.Request(
        cfg.webhook_url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=cfg.webhook_timeout_s) as answer:
            answer.read(65536)
            return True
    except OSError as exc:  # URLError, HTTPError, timeouts: all OSError
        log.error("alert %s not delivered to %s: %s", alert.kind, cfg.webhook_url, exc)
        return False


def _email(cfg: MonitorConfig, alert: Alert) -> bool:
    msg = EmailMessage()
    msg["Subject"] = alert.body()["text"]
    msg["From"] = cfg.email_from
    msg["To"] = ", ".join(cfg.email_to)
    msg.set_content(json.dumps(alert.body(), indent=2, default=str))
    try:
        with smtplib.SMTP(cfg.smtp_host, cfg.smtp_port, timeout=cfg.webhook_timeout_s) as smtp:
            smtp.send_message(msg)
            return True
    except (OSError, smtplib.SMTPException) as exc:
        log.error("alert %s not emailed via %s: %s", alert.kind, cfg.smtp_host, exc)
        return False


def failed_run(dag_id: str, run_id: str, reason: str, task_id: str | None = None) -> bool:
    """The DAG files' ``on_failure_callback``: a run ended ``failed``."""
    where = f" (task {task_id})" if task_id else ""
    return send(
        Alert(
            FAILED_RUN,
            f"DAG {dag_id} run {run_id} failed{where}: {reason}",
            {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "reason": reason},
        )
    )
