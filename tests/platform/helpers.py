"""Helpers for tests that run the ``harvestflow`` command in its own data directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.conftest import session_env

HARVESTFLOW = str(Path(sys.executable).parent / "harvestflow")


def isolated_env(data_dir: Path) -> dict[str, str]:
    """Environment for a harvestflow process with its own data dir and free ports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTFLOW_", "AIRFLOW"))}
    env.update(session_env(data_dir))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    return env
