"""The metrics service with every stage's probes, as ``harvestflow up`` starts it.

Why here (the top layer): the service is core and each stage owns its readings; only this
layer may import every stage, so the wiring lives here and nowhere else.
"""

from __future__ import annotations

import logging
from functools import partial

from harvestflow.monitoring.config import MonitorConfig
from harvestflow.monitoring.exporter import MetricsService
from harvestflow.monitoring.probes import Probe, disk_probe
from harvestflow.settings import Settings

log = logging.getLogger(__name__)


def stage_probes(settings: Settings) -> dict[str, Probe]:
    """Every probe by name: disk (core), indexing, preservation and QA readings."""
    from indexing import gauges as indexing_gauges
    from preservation import gauges as preservation_gauges
    from qa import gauges as qa_gauges

    return {
        "disk": disk_probe(settings),
        "indexing": partial(indexing_gauges.readings, settings),
        "preservation": partial(preservation_gauges.readings, settings),
        "qa": partial(qa_gauges.readings, settings),
    }


def start_monitoring(settings: Settings) -> MetricsService | None:
    """The started service, or None when ``[monitoring] enabled = false``."""
    cfg = MonitorConfig.from_settings(settings)
    if not cfg.enabled:
        return None
    service = MetricsService(cfg, stage_probes(settings))
    service.start()
    return service
