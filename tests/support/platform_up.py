"""A whole platform started by `harvestflow up` for browser tests: its address, the users'
generated passwords, signing a browser in, and telling that a page was replaced.

``shared_up`` is ONE such platform per pytest process, on a fresh data dir, for every test file
of :data:`SHARED_UP_FILES`. Why: a start costs a minute or more of both CI cores; the files
that only need *a* running platform share one, each test using its own names (templates, sites
on their own ports, users), and ``tests/conftest.py`` sends those files to the same xdist worker
so the platform is started once per run. It is stopped after its last user, not when the session
ends (tests/support/last_user.py), and its stop (Ctrl-C) is checked then.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from app.runtime.airflow_runtime import COMPONENTS, AirflowProcesses
from harvestflow.services.postgres import port_open
from harvestflow.settings import Settings
from tests.support.environment import data_root
from tests.support.platform_cli import (
    PAUSED_AT_CREATION,
    Output,
    api_client,
    isolated_env,
    start_up,
    unpause,
)

if TYPE_CHECKING:  # Selenium where it is used: this plugin is loaded by every pytest process
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

# the test files that run on ``shared_up`` (one xdist scope: tests/conftest.py)
SHARED_UP_FILES = (
    "tests/platform/test_up.py",
    "tests/plugins/test_curator_crawl_control_browser.py",
    "tests/plugins/test_curator_selection_browser.py",
)
# the DAGs they run (the others stay paused: PAUSED_AT_CREATION, so no schedule's first run
# takes the CPU or holds a run of theirs behind it); the selection test only reads the hourly DAG
SHARED_UP_DAGS = {"oneoff_harvest", "indexing_chain"}


@dataclass
class Platform:
    base: str
    env: dict[str, str]
    passwords: dict[str, str]
    site: int


@dataclass
class SharedUp:
    """The session's `harvestflow up`: its process, its output, and what the tests sign in with."""

    base: str
    env: dict[str, str]
    passwords: dict[str, str]
    proc: subprocess.Popen[str]
    out: Output

    def on(self, site: int) -> Platform:
        """This platform, for a test whose loopback site listens on port ``site``."""
        return Platform(self.base, self.env, self.passwords, site)


@contextmanager
def _running(env: dict[str, str]) -> Iterator[SharedUp]:
    """`harvestflow up` on ``env``, once its api-server answers; stopped (SIGINT, then kill)
    on leaving."""
    from harvestflow.settings import load

    proc, out = start_up(env)
    try:
        base = out.wait_for(r"Airflow UI: (http://\S+)\s+login: ", 600).group(1).rstrip("/")
        # the data dir of this platform, not the session's (Settings.data_dir reads os.environ)
        home = Path(env["HARVESTFLOW_DATA_DIR"]) / load(environ=env)["airflow"]["home_subdir"]
        secrets = home / "simple_auth_manager_passwords.json.generated"
        yield SharedUp(base, env, json.loads(secrets.read_text()), proc, out)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(180)
        finally:
            if proc.poll() is None:
                proc.kill()


@contextmanager
def harvestflow_up(env: dict[str, str]) -> Iterator[tuple[str, dict[str, str]]]:
    """`harvestflow up` on ``env`` (an isolated data dir): its Airflow base URL and the simple
    auth manager's generated passwords; stopped (SIGINT, then kill) on leaving."""
    with _running(env) as up:
        yield up.base, up.passwords


# Airflow's api-server without its Execution API (``airflow api-server --apps core``): for
# tests that run no task (nothing calls that API), whose start then skips building its
# versioned routes (~2-3 CPU-s on the CI VM)
NO_TASKS = ("--apps", "core")


@contextmanager
def api_server(
    settings: Settings, prepare: list[list[str]], *extra: str
) -> Iterator[AirflowProcesses]:
    """Airflow's api-server alone, with ``settings``' Airflow environment, started as ``up``
    starts its components (:meth:`AirflowProcesses.start`: forked, after the Airflow commands
    ``prepare``, by a process that imported Airflow once), with ``up``'s arguments and
    ``extra``; once it answers. Stopped on leaving as ``up`` stops it."""
    procs = AirflowProcesses(settings)
    procs.start(prepare, {"api-server": (*COMPONENTS["api-server"], *extra)})
    try:
        assert procs.wait_api(), (procs.log_dir / "api-server.log").read_text()[-3000:]
        yield procs
    finally:
        procs.stop()


def _ports(env: dict[str, str]) -> dict[str, int]:
    access = int(env["HARVESTFLOW_ACCESS__URL"].rsplit(":", 1)[1].strip("/"))
    return {
        "api-server": int(env["HARVESTFLOW_AIRFLOW__PORT"]),
        "postgres": int(env["HARVESTFLOW_POSTGRES__PORT"]),
        "metrics": int(env["HARVESTFLOW_MONITORING__PORT"]),
        "access": access,
    }


@pytest.fixture(scope="session")
def shared_up() -> Iterator[SharedUp]:
    """`harvestflow up` on a fresh data dir (in RAM when there is room) with the settings its
    users need (the selection test's curator and viewer, URL checks of loopback seeds, a seed
    check the test ends itself), only the DAGs they run started; after its last user
    (tests/support/last_user.py) Ctrl-C must stop it cleanly: exit status 0, its ports closed."""
    root = Path(tempfile.mkdtemp(prefix="hf-shared-up-", dir=data_root()))
    env = isolated_env(root / "var")
    env["HARVESTFLOW_AIRFLOW__USERS"] = '["carol:user", "victor:viewer", "ian:op"]'
    env["HARVESTFLOW_HARVEST__URL_CHECK_ALLOW_PRIVATE"] = "true"  # the sites are on loopback
    env["HARVESTFLOW_HARVEST__URL_CHECK_TIMEOUT_S"] = "600"  # a silent seed: its test ends it
    env.update(PAUSED_AT_CREATION)
    with _running(env) as up:
        with api_client(up.out) as client:
            unpause(client, SHARED_UP_DAGS)
        yield up
    proc, out = up.proc, up.out
    # Ctrl-C stops everything `up` started (a failure here is an error of the last test)
    assert proc.returncode == 0, "".join(out.lines)[-3000:]
    still = [name for name, port in _ports(env).items() if port_open("127.0.0.1", port)]
    assert not still, f"ports left open after Ctrl-C: {still}"
    shutil.rmtree(root, ignore_errors=True)  # kept when the stop failed, to be looked at


def sign_in(driver: WebDriver, platform: Platform, user: str) -> None:
    """Airflow's login for ``user``: the JWT its auth manager issues at ``/auth/token``, as the
    ``_token`` cookie the UI's login page sets (that page itself: test_curator_browser.py)."""
    answer = httpx.post(
        f"{platform.base}/auth/token",
        json={"username": user, "password": platform.passwords[user]},
        timeout=60,
    )
    assert answer.status_code == 201, answer.text
    driver.get(f"{platform.base}/api/v2/version")  # a page of the origin, to set its cookie
    driver.add_cookie({"name": "_token", "value": answer.json()["access_token"], "path": "/"})


def page_gone(element: WebElement) -> bool:
    """Whether the page that held ``element`` was replaced. Chromium says so in two ways: a
    stale element, or, when asked while the new page is being built, "Node with given id does
    not belong to the document"."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False
