"""A loopback site whose pages change on a known rhythm, driven by a fake clock.

- ``/``        front page linking to the others (changes never);
- ``/every``   changes on every request (a counter);
- ``/hourly``  changes when the fake clock's hour changes;
- ``/never``   never changes, answers If-None-Match with 304 (ETag);
- ``/still``   never changes, no validators (unchanged only by digest);
- ``/clock``   identical HTML except a timestamp of the real clock (noise) and, inside the same
  noise span, a link that differs on every request (taken only while the page counts as changed);
- ``/private`` linked from the front page, excluded by robots.txt.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "rhythm.test"
PAGES = ("/every", "/hourly", "/never", "/still", "/clock")


class RhythmSite:
    def __init__(self) -> None:
        self.clock = dt.datetime(2026, 11, 22, 0, 0, tzinfo=dt.UTC)
        self.counter = 0
        self.hits: dict[str, int] = {}
        self.conditional_hits = 0
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                site.hits[path] = site.hits.get(path, 0) + 1
                if self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since"):
                    site.conditional_hits += 1
                headers = {"Content-Type": "text/html; charset=utf-8"}
                if path == "/robots.txt":
                    headers["Content-Type"] = "text/plain"
                    body = "User-agent: *\nDisallow: /private\n"
                elif path == "/":
                    links = "".join(f'<a href="{p}">{p}</a>' for p in (*PAGES, "/private"))
                    body = f"<html><body><h1>front</h1>{links}</body></html>"
                elif path == "/every":
                    site.counter += 1
                    body = f"<html><body><p>edition {site.counter}</p></body></html>"
                elif path == "/hourly":
                    body = f"<html><body><p>hour {site.clock:%Y-%m-%d %H}</p></body></html>"
                elif path == "/never":
                    headers["ETag"] = '"never-1"'
                    if self.headers.get("If-None-Match") == '"never-1"':
                        self.send_response(304)
                        self.send_header("ETag", '"never-1"')
                        self.end_headers()
                        return
                    body = "<html><body><p>the same forever</p></body></html>"
                elif path == "/still":
                    body = "<html><body><p>still the same</p></body></html>"
                elif path == "/clock":
                    stamp = f"{time.time_ns()}"
                    more = f'<a href="/clock-more?n={stamp}">more</a>'
                    body = (
                        f'<html><body><p>news</p><span class="ts">{stamp} {more}</span>'
                        "</body></html>"
                    )
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = body.encode()
                self.send_response(200)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    def resolve(self) -> dict[str, str]:
        return {HOST: "127.0.0.1"}

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
