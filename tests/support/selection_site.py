"""A loopback site the selection records' URL check reaches, the names it answers for, and a
UKWA crawl feed of targets on it (the selection tests and the curator pages' share them)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harvestflow import settings as settings_mod

HOSTS = {"good.test", "www.good.test", "news.good.test", "other.test", "feed.test"}


class Handler(BaseHTTPRequestHandler):
    def _answer(self, head: bool) -> None:
        path = self.path.split("?")[0]
        if path == "/nohead" and head:
            self.send_response(405)
        elif path in ("/", "/ok", "/nohead", "/sitemap.xml", "/a", "/b"):
            self.send_response(200)
        elif path == "/moved":
            self.send_response(301)
            self.send_header("Location", "/ok")
        elif path == "/gone":
            self.send_response(404)
        else:
            self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self._answer(True)

    def do_GET(self) -> None:
        self._answer(False)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def loopback_seeds(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The URL check may reach the loopback test servers: ``[harvest]
    url_check_allow_private``, as the demo_loopback template lets the crawler reach them (by
    default both refuse loopback and private addresses)."""
    monkeypatch.setenv("HARVESTFLOW_HARVEST__URL_CHECK_ALLOW_PRIVATE", "true")
    settings_mod.reset()
    yield
    settings_mod.reset()


def resolver(host: str) -> str:
    if host in HOSTS:
        return "127.0.0.1"
    raise KeyError(f"{host}: no such name")


def feed(port: int) -> list[dict]:
    return [
        {
            "id": 1,
            "title": "Publications",
            "seeds": [f"http://feed.test:{port}/"],
            "schedules": [
                {"frequency": "MONTHLY", "startDate": "2026-01-05 09:00:00", "endDate": None}
            ],
            "scope": "subdomains",
            "depth": "CAPPED",
            "ignoreRobotsTxt": True,
            "documentUrlScheme": None,
            "loginPageUrl": None,
            "secretId": None,
            "logoutUrl": None,
            "watched": False,
        },
        {
            "id": 2,
            "title": "Broad",
            "seeds": [f"http://feed.test:{port}/a"],
            "schedules": [{"frequency": "DOMAINCRAWL", "startDate": None, "endDate": None}],
            "scope": "root",
            "depth": "CAPPED",
        },
        {
            "id": 3,
            "title": "Daily news",
            "seeds": [f"http://other.test:{port}/ok"],
            "schedules": [{"frequency": "DAILY", "startDate": None, "endDate": None}],
            "scope": "plus1",
            "depth": "CAPPED",
        },
    ]
