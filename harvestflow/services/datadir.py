"""The shared data directory's marker: a worker without it refuses crawl tasks.

Why: with the CeleryExecutor a crawl task can run on any machine, and it writes the job's
directory (WARCs, logs, frontier state) below the data directory, which every worker and the
indexing chain must see (a shared mount). A worker whose ``HARVESTFLOW_DATA_DIR`` is a local empty
folder — the mount missing — would crawl into a place nobody else reads. ``harvestflow services
start`` / ``up`` write a marker file at the data directory's root; ``harvestflow worker`` and the
crawl task check it and stop with a message naming the folder.
"""

from __future__ import annotations

import json
import logging
import socket
import uuid
from datetime import UTC, datetime
from pathlib import Path

from harvestflow.atomic import atomic_write_text
from harvestflow.errors import HarvestflowError

log = logging.getLogger(__name__)

MARKER_NAME = ".harvestflow-data-dir"


class DataDirError(HarvestflowError, RuntimeError):
    """This machine does not see the platform's shared data directory."""


def marker_path(data_dir: Path) -> Path:
    return data_dir / MARKER_NAME


def write_data_dir_marker(data_dir: Path) -> Path:
    """Write the marker once (kept: its id names this data directory for good)."""
    path = marker_path(data_dir)
    if path.exists():
        return path
    atomic_write_text(
        path,
        json.dumps(
            {
                "id": uuid.uuid4().hex,
                "created": datetime.now(UTC).isoformat(),
                "created_on": socket.getfqdn(),
            }
        )
        + "\n",
    )
    log.info("marked %s as the shared data directory", data_dir)
    return path


def check_data_dir(data_dir: Path) -> dict[str, str]:
    """The marker's content; :class:`DataDirError` naming the folder when it is missing."""
    path = marker_path(data_dir)
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:
        raise DataDirError(
            f"{data_dir} is not the platform's shared data directory (no readable {MARKER_NAME}: "
            f"{exc.__class__.__name__}). Mount the shared data directory there, or set "
            "HARVESTFLOW_DATA_DIR to it, before running crawl tasks on this machine; "
            "`harvestflow services start` writes the marker on the machine that owns it."
        ) from exc
