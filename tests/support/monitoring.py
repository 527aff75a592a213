"""The monitoring tests' helpers: a loopback webhook receiver (what a chat or paging tool is to
the platform) and a reader of ``/metrics``."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Webhook:
    """Collects the JSON bodies POSTed to it."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length", "0"))
                hook.bodies.append(json.loads(self.rfile.read(size)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, kind: str, status: str = "firing", timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for body in list(self.bodies):
                if body["kind"] == kind and body["status"] == status:
                    return body
            time.sleep(0.2)
        raise AssertionError(f"no {status} {kind} alert within {timeout} s: {self.bodies}")

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def scrape(url: str) -> dict[str, float]:
    """``/metrics`` as {'name{labels}': value} (the text format, parsed by prometheus_client)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=30) as answer:
        text = answer.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}"] = sample.value
    return out


def matching(scraped: dict[str, float], name: str, **labels: str) -> float:
    """The value of the one sample ``name`` whose labels include ``labels``."""
    found = [
        v
        for k, v in scraped.items()
        if k.split("{")[0] == name and all(f'{a}="{b}"' in k for a, b in labels.items())
    ]
    assert len(found) == 1, f"{name} {labels}: {found} in {sorted(scraped)[:50]}"
    return found[0]
