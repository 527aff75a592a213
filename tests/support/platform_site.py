"""A small slow loopback site for the platform-fault tests, and checks of a crawl's output.

Why its own site: the faults are injected after a known number of pages, so the tests need a
site of many plain pages on one host (the sample site's hosts are a few pages each), served
slowly enough to stop a service mid-crawl, with a log of every request it served.
"""

from __future__ import annotations

import base64
import collections
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from tests.support.crawl import FAST_TEMPLATE
from tests.support.environment import oracle

HOST = "www.outage.test"


@dataclass
class Served:
    path: str
    started: float
    ended: float
    agent: str


class SlowSite:
    """``/`` links to ``/page/1`` … ``/page/<pages>``; each page takes ``page_s`` to serve."""

    def __init__(self, pages: int, page_s: float, page_bytes: int = 0) -> None:
        self.pages = pages
        self.page_s = page_s
        # pages padded with this many random (incompressible) bytes, to fill a disk
        self.padding = base64.b64encode(os.urandom(page_bytes)).decode() if page_bytes else ""
        self.lock = threading.Lock()
        self.served: list[Served] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                started = time.monotonic()
                if self.path == "/":
                    links = " ".join(
                        f'<a href="/page/{n}">{n}</a>' for n in range(1, site.pages + 1)
                    )
                    status, body = 200, f"<html><body>{links}</body></html>"
                elif self.path.startswith("/page/"):
                    time.sleep(site.page_s)
                    pad = f"<!-- {self.path} {site.padding} -->" if site.padding else ""
                    status, body = 200, f"<html><body>page {self.path}{pad}</body></html>"
                else:
                    status, body = 404, "<html><body>no</body></html>"
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                with site.lock:
                    site.served.append(
                        Served(
                            self.path, started, time.monotonic(), self.headers["User-Agent"] or ""
                        )
                    )

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    def page_urls(self) -> set[str]:
        return {self.url(f"/page/{n}") for n in range(1, self.pages + 1)}

    def requests(self) -> list[Served]:
        with self.lock:
            return list(self.served)

    def wait_served(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while sum(1 for r in self.requests() if r.path.startswith("/page/")) < n:
            assert time.monotonic() < deadline, f"the site never served {n} pages"
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def slow_job(site: SlowSite, job_id: int, template: dict | None = None) -> dict:
    """A job crawling ``site`` (one host, one connection, a small politeness delay)."""
    return {
        "job_id": job_id,
        "harvest_id": 2,
        "seeds": [site.url("/")],
        "template": {
            **FAST_TEMPLATE,
            "min_delay_ms": 100,
            "max_delay_ms": 100,
            "connections_per_host": 1,
            "obey_robots": False,
            "max_hops": 1,
            **(template or {}),
        },
        "resolve": {HOST: "127.0.0.1"},
    }


def response_urls(warcs: list[Path]) -> collections.Counter[str]:
    """How many response (or revisit) records each URL has in ``warcs``."""
    found: collections.Counter[str] = collections.Counter()
    for path in warcs:
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type in ("response", "revisit"):
                    found[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return found


def data_warcs(out: Path) -> list[Path]:
    return sorted(p for p in (out / "warcs").glob("*.warc.gz") if "metadata" not in p.name)


def assert_every_page_once(site: SlowSite, outs: list[Path]) -> None:
    """Each page served once by the site and captured once in the WARCs (``warcio check``
    passes on them), and no crawl.log line of any run with a negative status."""
    pages = [r.path for r in site.requests() if r.path.startswith("/page/")]
    twice = [p for p, n in collections.Counter(pages).items() if n > 1]
    assert not twice, f"pages fetched more than once: {twice}"
    assert len(pages) == site.pages
    warcs = [w for out in outs for w in data_warcs(out)]
    captured = response_urls(warcs)
    assert {u: n for u, n in captured.items() if n > 1} == {}
    assert site.page_urls() <= set(captured)
    check = subprocess.run(
        [str(oracle("warcio")), "check", *map(str, warcs)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    for out in outs:
        log = (out / "logs" / "crawl.log").read_text().splitlines()
        negative = [line for line in log if int(line.split()[1]) < 0]
        assert negative == [], negative
