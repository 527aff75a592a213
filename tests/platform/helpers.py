"""Helpers for tests that run the ``harvestflow`` command in its own data directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.conftest import free_port

HARVESTFLOW = str(Path(sys.executable).parent / "harvestflow")


def isolated_env(data_dir: Path) -> dict[str, str]:
    """Environment for a harvestflow process with its own data dir and free ports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTFLOW_", "AIRFLOW"))}
    env.update(
        {
            "HARVESTFLOW_DATA_DIR": str(data_dir),
            "HARVESTFLOW_POSTGRES__PORT": str(free_port()),
            "HARVESTFLOW_S3__S3_PORT": str(free_port(with_grpc=True)),
            "HARVESTFLOW_S3__MASTER_PORT": str(free_port(with_grpc=True)),
            "HARVESTFLOW_S3__VOLUME_PORT": str(free_port(with_grpc=True)),
            "HARVESTFLOW_S3__FILER_PORT": str(free_port(with_grpc=True)),
            "HARVESTFLOW_AIRFLOW__PORT": str(free_port()),
            "HARVESTFLOW_SAMPLESITE__PORT": str(free_port()),
            "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        }
    )
    return env


def port_of(env: dict[str, str], key: str) -> int:
    return int(env[key])
