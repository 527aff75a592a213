"""A whole platform started by `harvestflow up` for browser tests: its address, the users'
generated passwords, signing a browser in, and telling that a page was replaced."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.support.platform_cli import start_up


@dataclass
class Platform:
    base: str
    env: dict[str, str]
    passwords: dict[str, str]
    site: int


@contextmanager
def harvestflow_up(env: dict[str, str]) -> Iterator[tuple[str, dict[str, str]]]:
    """`harvestflow up` on ``env`` (an isolated data dir): its Airflow base URL and the simple
    auth manager's generated passwords; stopped (SIGINT, then kill) on leaving."""
    from harvestflow.settings import load

    proc, out = start_up(env)
    try:
        base = out.wait_for(r"Airflow UI: (http://\S+)\s+login: ", 600).group(1).rstrip("/")
        # the data dir of this platform, not the session's (Settings.data_dir reads os.environ)
        home = Path(env["HARVESTFLOW_DATA_DIR"]) / load(environ=env)["airflow"]["home_subdir"]
        secrets = home / "simple_auth_manager_passwords.json.generated"
        yield base, json.loads(secrets.read_text())
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(180)
        finally:
            if proc.poll() is None:
                proc.kill()


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
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False
