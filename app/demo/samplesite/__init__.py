"""The bundled sample website for demos and tests (several virtual hosts on one loopback port).

Why: the crawler must be demonstrated and tested without the Internet. The site is reached
through the crawler's resolver override (``resolve``: host name → 127.0.0.1, no DNS), so its
URLs look like real ones: ``http://www.example-a.test:<port>/``.

Usage::

    site = start()                      # 127.0.0.1, a free port
    site.url("www.example-a.test", "/") # http://www.example-a.test:<port>/
    site.resolve_map()                  # {"www.example-a.test": "127.0.0.1", ...}
    site.requests                       # what the server served, for politeness/digest tests
    site.stop()
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from app.demo.samplesite.server import SampleSiteServer, ServedRequest

HOSTS = (
    "www.example-a.test",
    "static.example-a.test",
    "example-b.test",
    "www.example-b.test",
    "trap.example-c.test",
)

__all__ = ["HOSTS", "SampleSite", "ServedRequest", "start"]


@dataclass
class SampleSite:
    """A running sample site."""

    server: SampleSiteServer
    thread: threading.Thread
    host: str

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def requests(self) -> list[ServedRequest]:
        """Requests served so far (a live list; copy it before iterating while crawling)."""
        return self.server.requests

    def url(self, host: str = "www.example-a.test", path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def resolve_map(self) -> dict[str, str]:
        """Every virtual host mapped to the address the server listens on."""
        return {name: self.host for name in HOSTS}

    def served(self, host: str, path: str | None = None) -> list[ServedRequest]:
        with self.server.lock:
            items = list(self.server.requests)
        return [r for r in items if r.host == host and (path is None or r.path == path)]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> SampleSite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(host: str = "127.0.0.1", port: int = 0) -> SampleSite:
    """Serve the sample site in a background thread; ``port=0`` picks a free port."""
    server = SampleSiteServer((host, port))
    thread = threading.Thread(target=server.serve_forever, name="samplesite", daemon=True)
    thread.start()
    return SampleSite(server=server, thread=thread, host=host)
