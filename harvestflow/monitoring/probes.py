"""Readings for /metrics and the alert rules: what a probe returns, and the disk probe.

A probe is a callable returning :class:`Reading` s, called at each scrape and each rule check;
the stages' probes are wired by the top layer (this core package imports no stage).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harvestflow.settings import Settings


@dataclass(frozen=True)
class Reading:
    """One gauge value: a Prometheus name, its help line, labels."""

    name: str
    help: str
    value: float
    labels: dict[str, str] = field(default_factory=dict)


Probe = Callable[[], list[Reading]]

DISK_FREE_BYTES = "harvestflow_disk_free_bytes"
DISK_FREE_RATIO = "harvestflow_disk_free_ratio"


def data_folders(settings: Settings) -> dict[str, Path]:
    """The folders whose disks fill: the data directory and each WARC repository location."""
    folders = {"data_dir": settings.data_dir}
    for loc in settings.get("indexing", "repository_locations", []) or []:
        path = Path(loc)
        folders[f"repository:{loc}"] = path if path.is_absolute() else settings.path(loc)
    return folders


def disk_probe(settings: Settings) -> Probe:
    """Free bytes and free share of each data folder's disk (a missing folder: its parent's)."""
    folders = data_folders(settings)

    def read() -> list[Reading]:
        out: list[Reading] = []
        for label, path in folders.items():
            where = path
            while not where.exists() and where != where.parent:
                where = where.parent
            usage = shutil.disk_usage(where)
            labels = {"folder": label, "path": str(path)}
            out.append(
                Reading(DISK_FREE_BYTES, "Free bytes on the folder's disk", usage.free, labels)
            )
            share = usage.free / usage.total if usage.total else 0.0
            out.append(
                Reading(DISK_FREE_RATIO, "Free share (0..1) of the folder's disk", share, labels)
            )
        return out

    return read
