"""Fixtures of the access tests: the replay virtualenv, settings with free loopback ports, CDX
API queries, pywb from the oracle venv serving a flat CDXJ file (the reference), and Airflow's
real api-server with the curator pages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.runtime import airflow_commands, airflow_config, airflow_logins, airflow_runtime
from harvestflow import settings as settings_mod
from tests.support.replay import access_settings, replay_venv

# the fixtures shared with the indexing tests (tests/support/replay.py)
__all__ = ["access_settings", "replay_venv"]


@pytest.fixture
def airflow_api(
    airflow_ready: settings_mod.Settings, access_settings: settings_mod.Settings
) -> Iterator[tuple[str, str]]:
    """Airflow's real api-server (our curator pages mounted in it) on a free port: its base URL
    and the admin's password. Its metadata DB is the session's, migrated and given its pools
    once per session (``airflow_ready``: two Airflow commands not run again for each test);
    the Airflow home and the logins are this test's."""
    settings = access_settings
    settings.airflow_home.mkdir(parents=True, exist_ok=True)
    password = airflow_logins.ensure_login(settings)[1]  # before the start: the file it reads
    procs = airflow_runtime.AirflowProcesses(settings)
    procs.log_dir.mkdir(parents=True, exist_ok=True)
    procs.procs["api-server"] = airflow_runtime.spawn_logged(
        airflow_commands.batch_command(["api-server"]),  # as `up` starts it
        airflow_config.airflow_env(settings),
        procs.log_dir / "api-server.log",
    )
    try:
        assert procs.wait_api(), (procs.log_dir / "api-server.log").read_text()[-3000:]
        af = settings["airflow"]
        yield f"http://{af['host']}:{af['port']}", password
    finally:
        procs.stop()
