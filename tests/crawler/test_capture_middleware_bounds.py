"""Bounds and bad input, never fatal: a response whose headers never end is cut at
``max_header_bytes``; a seed that does not resolve gets -6, an invalid seed or link -7, a seed
on a link-local (cloud metadata) or private address -5002 without any connection — and the
crawl goes on to capture the good pages.

The server is the test's own (the sample site has no endless headers): one host, a page
linking to the bad resources, and ``/endless-headers`` sending header lines until the client
hangs up (it counts what it managed to send).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from crawler.capture_middleware import address_allowed
from tests.support.crawl import FAST_TEMPLATE, FETCH_CLIENTS, run_crawl

HOST = "www.bounds.test"
MAX_HEADER_BYTES = 32_768


class Handler(BaseHTTPRequestHandler):
    header_bytes_sent = 0
    paths: ClassVar[list[str]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        Handler.paths.append(self.path)
        port = self.server.server_address[1]
        if self.path == "/":
            body = (
                '<html><body><a href="/endless-headers">x</a><a href="/ok.html">ok</a>'
                f'<a href="http://{HOST}:99999/bad-port">bad port</a>'
                f'<a href="http://{HOST}:{port}/after.html">after</a></body></html>'
            ).encode()
            self._send(body)
        elif self.path in ("/ok.html", "/after.html"):
            self._send(b"<html><body>fine</body></html>")
        elif self.path == "/endless-headers":
            self.send_response(200)
            self.flush_headers()  # status line out; no blank line: the headers go on
            try:
                for i in range(100_000):  # ~6 MB over ~5 s unless the client hangs up
                    line = f"X-Filler-{i:06d}: {'y' * 44}\r\n".encode()
                    self.wfile.write(line)
                    Handler.header_bytes_sent += len(line)
                    if i % 100 == 99:
                        time.sleep(0.005)
                self.end_headers()
            except OSError:
                pass  # the crawler dropped the connection: what we expect
        else:
            self.send_error(404)

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def server() -> Iterator[ThreadingHTTPServer]:
    Handler.header_bytes_sent = 0
    Handler.paths = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def test_address_rule_refuses_internal_addresses() -> None:
    for ip in (
        "127.0.0.1",
        "::1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # AWS/GCP/Azure metadata
        "fe80::1",
        "fd00:ec2::254",  # AWS metadata over IPv6
        "100.100.100.200",  # Alibaba metadata (shared address space)
        "0.0.0.0",
        "[::ffff:127.0.0.1]",
    ):
        assert not address_allowed(ip), ip
    for ip in ("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"):
        assert address_allowed(ip), ip


@pytest.mark.parametrize("fetch_client", FETCH_CLIENTS)
def test_bad_seeds_endless_headers_and_invalid_links_are_logged_not_fatal(
    server: ThreadingHTTPServer, tmp_path, fetch_client: str
) -> None:
    port = server.server_address[1]
    root = f"http://{HOST}:{port}/"
    unresolvable = "http://nonexistent-host.invalid/"
    invalid = "http://[bad/"
    metadata = "http://169.254.169.254/latest/meta-data/"
    private = "http://10.255.0.1/"
    job = {
        "job_id": 31,
        "harvest_id": 3,
        "seeds": [invalid, unresolvable, metadata, private, root],
        "template": {
            **FAST_TEMPLATE,
            "connections_per_host": 1,
            "max_header_bytes": MAX_HEADER_BYTES,
            "fetch_client": fetch_client,
            "allow_private_addresses": False,  # the explicit resolve below is trusted
        },
        "resolve": {HOST: "127.0.0.1"},
    }
    result = run_crawl(job, tmp_path / "job")
    assert result.summary["status"] == "complete"

    line = result.line_for(invalid)
    assert line[1] == "-7" and line[11] == "err=invalid-url"
    line = result.line_for(unresolvable)
    assert line[1] == "-6" and "err=dns-lookup-failed" in line[11]
    for url in (metadata, private):
        line = result.line_for(url)
        assert line[1] == "-5002" and line[11] == "err=address-not-allowed", line
    line = result.line_for(f"http://{HOST}:99999/bad-port")
    assert line[1] == "-7" and line[11] == "err=invalid-url"

    line = result.line_for(f"http://{HOST}:{port}/endless-headers")
    assert line[1] == "-3" and line[11] == "err=header-too-large"  # one try: not retried
    assert Handler.paths.count("/endless-headers") == 1
    # the crawler hung up soon after the limit, long before the ~6 MB the server had to send
    assert Handler.header_bytes_sent < 2_000_000
    for page in ("/", "/ok.html", "/after.html"):
        assert result.line_for(f"http://{HOST}:{port}{page}")[1] == "200", page

    report = (result.out / "reports" / "crawl-report.txt").read_text()
    assert "URI failures: 2" in report  # the DNS failure and the endless headers
    seeds = (result.out / "reports" / "seeds-report.txt").read_text().splitlines()
    assert f"-7 NOTCRAWLED {invalid}" in seeds
