"""Fixtures of the access tests: the replay virtualenv, settings with free loopback ports, CDX
API queries, pywb from the oracle venv serving a flat CDXJ file (the reference), and Airflow's
real api-server with the curator pages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.runtime import airflow_logins
from harvestflow import settings as settings_mod
from tests.support.platform_up import NO_TASKS, api_server
from tests.support.replay import access_settings, replay_venv

# the fixtures shared with the indexing tests (tests/support/replay.py)
__all__ = ["access_settings", "replay_venv"]


@pytest.fixture
def airflow_api(
    airflow_ready: settings_mod.Settings, access_settings: settings_mod.Settings
) -> Iterator[tuple[str, str]]:
    """Airflow's real api-server (our curator pages mounted in it) on a free port, started as
    ``up`` starts it: its base URL and the admin's password. Its metadata DB is the session's,
    migrated and given its pools once per session (``airflow_ready``: no preparation again for
    each test); the Airflow home and the logins are this test's."""
    settings = access_settings
    password = airflow_logins.ensure_login(settings)[1]  # before the start: the file it reads
    with api_server(settings, [], *NO_TASKS):  # the tests run no DAG's task
        af = settings["airflow"]
        yield f"http://{af['host']}:{af['port']}", password
