"""Fixtures of the access tests: the replay virtualenv, settings with free loopback ports, CDX
API queries, pywb from the oracle venv serving a flat CDXJ file (the reference), and Airflow's
real api-server with the curator pages."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.runtime import airflow_runtime
from harvestflow import settings as settings_mod
from harvestflow.settings import PROJECT_ROOT
from tests.support.replay import replay_env


@pytest.fixture(scope="session")
def replay_venv() -> Path:
    """The replay service's virtualenv, made or brought up to date by access/setup-replay.sh
    (idempotent: nothing to do when pywb and the codings hook are current)."""
    venv = PROJECT_ROOT / ".replay-venv"
    subprocess.run(["bash", str(PROJECT_ROOT / "access" / "setup-replay.sh")], check=True)
    assert (venv / "bin" / "wayback").exists()
    return venv


@pytest.fixture
def access_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_venv: Path
) -> Iterator[settings_mod.Settings]:
    """Settings with a per-test data directory and the replay service on free ports."""
    replay_env(monkeypatch, tmp_path / "data")
    settings_mod.reset()
    yield settings_mod.get_settings()
    settings_mod.reset()


@pytest.fixture
def airflow_api(access_settings: settings_mod.Settings) -> Iterator[tuple[str, str]]:
    """Airflow's real api-server (our curator pages mounted in it) on a free port: its base URL
    and the admin's password."""
    settings = access_settings
    airflow_runtime.prepare(settings)
    procs = airflow_runtime.AirflowProcesses(settings)
    procs.log_dir.mkdir(parents=True, exist_ok=True)
    procs.procs["api-server"] = airflow_runtime.spawn_logged(
        [airflow_runtime.airflow_bin(), "api-server"],
        airflow_runtime.airflow_env(settings),
        procs.log_dir / "api-server.log",
    )
    try:
        assert procs.wait_api(), (procs.log_dir / "api-server.log").read_text()[-3000:]
        af = settings["airflow"]
        yield f"http://{af['host']}:{af['port']}", airflow_runtime.ensure_login(settings)[1]
    finally:
        procs.stop()
