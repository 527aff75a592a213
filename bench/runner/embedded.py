"""A benchmark's own data directory with an embedded PostgreSQL on a kept port.

Why: the database benchmarks reuse a data directory between runs (``--keep``) so the seeding is
paid once; the port is remembered beside the data so the kept cluster starts where it stopped.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.support.environment import free_port


def embedded_data_dir(prefix: str, keep: Path | None) -> Path:
    """Make (or reuse) the data dir and point harvestflow's settings at it and its port."""
    data_dir = keep or Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o755)
    port_file = data_dir / "bench-port"
    port = int(port_file.read_text()) if port_file.exists() else free_port()
    port_file.write_text(str(port))
    os.environ.update(HARVESTFLOW_DATA_DIR=str(data_dir), HARVESTFLOW_POSTGRES__PORT=str(port),
                      HARVESTFLOW_POSTGRES__URL="")  # fmt: skip
    return data_dir
