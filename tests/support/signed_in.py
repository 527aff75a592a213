"""Test users of the curator pages: an auth dependency standing in for the plugin's Airflow login,
a TestClient signed in as one of them, the CSRF token a page carries, and the pages served on
loopback for a browser."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.testclient import TestClient

from app.curator.actions import Role
from app.curator.webapp import create_app
from tests.support.environment import free_port


def auth_for(users: dict[str, Role]) -> Callable[[Request], None]:
    """Like plugins/harvestflow_curator.require_airflow_login: names the user and their right.
    The cookie ``test_user`` (a browser) or the bearer (a TestClient) names one of ``users``."""

    def signed_in(request: Request) -> None:
        name = request.cookies.get("test_user") or request.headers.get(
            "authorization", ""
        ).removeprefix("Bearer ")
        if name not in users:
            raise HTTPException(status_code=401, detail="not authenticated")
        request.state.user = name
        request.state.role = users[name]

    return signed_in


def signed_in_client(
    engine: sa.Engine, data_dir: Path, user: str, users: dict[str, Role]
) -> TestClient:
    """The curator pages on ``engine``, asked as ``user``."""
    app = create_app(lambda: engine, data_dir=data_dir, auth=auth_for(users))
    return TestClient(app, headers={"Authorization": f"Bearer {user}"}, follow_redirects=False)


def page_token(page: str) -> str:
    """The CSRF token of a page's forms."""
    found = re.search(r'name="csrf_token" value="([0-9a-f]{64})"', page)
    assert found, "no CSRF token in the page"
    return found.group(1)


@contextmanager
def serving(app: FastAPI, timeout: float = 120) -> Iterator[str]:
    """``app`` served by uvicorn on a loopback port in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def token_required(request: Request) -> None:
    """An auth dependency taking only ``Authorization: Bearer ok`` (a signed-in client's)."""
    if request.headers.get("authorization") != "Bearer ok":
        raise HTTPException(status_code=401, detail="not authenticated")
