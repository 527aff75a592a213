"""Seen to be working: metrics for Prometheus and alerts for people.

Why here, in the core: the crawler pushes its gauges, the DAG files' callbacks send alerts and
the top layer serves ``/metrics``; the readings of each stage (index lag, preservation queue,
fixity, QA) stay in their stage and are handed to the exporter as probes, so this package
imports no stage.
"""

from __future__ import annotations

from harvestflow.errors import HarvestflowError


class MonitoringError(HarvestflowError, RuntimeError):
    """The metrics service cannot start (a port taken, a setting out of range), saying which."""
