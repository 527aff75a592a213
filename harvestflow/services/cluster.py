"""The Airflow side of ``harvestflow services status``: components and Celery workers.

Why here: an operator asking "is the platform up?" needs the scheduler, the dag-processor and
the triggerer when one is run (whose heartbeats the api-server's health endpoint reports,
whatever machine they run on; ``[airflow] triggerer``) and, with the celery executor, which workers answer on the broker — a queue without a
worker keeps its tasks waiting for ever. Read over HTTP and the broker only: no Airflow import.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

from harvestflow.settings import Settings

log = logging.getLogger(__name__)

HEALTH_COMPONENTS = ("scheduler", "dag_processor", "triggerer")
PING_TIMEOUT_S = 2.0


def api_base(settings: Settings) -> str:
    af = settings["airflow"]
    return f"http://{af['host']}:{af['port']}"


def airflow_health(settings: Settings, timeout_s: float = 5.0) -> dict[str, Any] | None:
    """The api-server's ``/api/v2/monitor/health`` answer, or None when it does not answer."""
    url = f"{api_base(settings)}/api/v2/monitor/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return dict(json.loads(resp.read(1_000_000)))
    except (OSError, ValueError, urllib.error.URLError) as exc:
        log.debug("%s: %s", url, exc)
        return None


def celery_workers(settings: Settings, timeout_s: float = PING_TIMEOUT_S) -> list[str] | None:
    """Names of the Celery workers answering a ping on the broker; None when the broker does
    not answer."""
    from celery import Celery

    app = Celery(broker=settings.broker_url)
    app.conf.broker_connection_timeout = timeout_s
    app.conf.broker_connection_retry_on_startup = False
    app.conf.broker_connection_max_retries = 0
    try:
        replies = app.control.ping(timeout=timeout_s) or []
    except Exception as exc:  # kombu's errors vary with the transport
        log.debug("celery ping on %s: %s", settings.broker_url, exc)
        return None
    finally:
        app.close()
    return sorted(name for reply in replies for name in reply)
