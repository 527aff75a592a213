"""tests/support/browser.py: a file's one Chromium, lent to a test, is as a fresh one would be.

Why it matters: the browser tests borrow their file's browser (``file_chromium``) instead of
starting their own; a test that signs in, stores something or leaves a tab open must not hand
that to the next test (a browser "without a session" must still be sent to the login page).
Checked on a loopback page that sets a cookie, local and session storage, and a cacheable
answer, in two tabs, with a longer script timeout, then lent again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from selenium.webdriver import Chrome

from tests.support.browser import lent

# what the page finds stored: [localStorage, sessionStorage]
STORED_JS = "return [localStorage.getItem('k'), sessionStorage.getItem('s')]"
STORE_JS = "localStorage.setItem('k', 'v'); sessionStorage.setItem('s', 'v')"


class _Page(BaseHTTPRequestHandler):
    """``/`` (not cached) and ``/cached`` (cacheable for an hour), each GET counted."""

    gets: ClassVar[dict[str, int]] = {}

    def do_GET(self) -> None:
        _Page.gets[self.path] = _Page.gets.get(self.path, 0) + 1
        body = b"<!doctype html><title>page</title><p>page</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        cache = "max-age=3600" if self.path == "/cached" else "no-store"
        self.send_header("Cache-Control", cache)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_lent_browser_keeps_nothing_of_the_test_before(file_chromium: Chrome, site: str) -> None:
    _Page.gets.clear()
    with lent(file_chromium, site) as driver:
        driver.get(site + "/cached")
        driver.add_cookie({"name": "_token", "value": "signed-in", "path": "/"})
        driver.execute_script(STORE_JS)
        driver.switch_to.new_window("tab")
        driver.get(site + "/cached")  # from the cache: no second GET
        assert _Page.gets["/cached"] == 1
        assert driver.get_cookies() and driver.execute_script(STORED_JS) == ["v", None]
        driver.set_script_timeout(90)

    with lent(file_chromium) as driver:  # the origin not named: found from the tab left on it
        assert len(driver.window_handles) == 1 and driver.current_url == "about:blank"
        assert driver.get_window_size() == {"width": 1280, "height": 900}
        assert driver.timeouts.script == 30
        driver.get(site + "/cached")
        assert _Page.gets["/cached"] == 2  # the cache was emptied
        assert driver.get_cookies() == []
        assert driver.execute_script(STORED_JS) == [None, None]
