"""WARCs of many hosts and captures for the index tests (written with warcio)."""

from __future__ import annotations

import io
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter


def site_urls(rnd: random.Random, hosts: int) -> list[str]:
    """URLs over ``hosts`` registrable domains, with subdomains, paths, queries and ports."""
    urls: list[str] = []
    for h in range(hosts):
        domain = f"site{h:03d}.test"
        for sub in rnd.sample(["www.", "", "news.", "img.", "a.b."], k=rnd.randint(1, 3)):
            port = ":8080" if h % 17 == 0 else ""
            scheme = "https" if h % 5 == 0 else "http"
            for p in range(rnd.randint(1, 9)):
                path = rnd.choice(
                    ["/", f"/p{p}.html", f"/Dir/{p}/", f"/img/{p}.png", f"/q?b={p}&a=1", f"/a-{p}"]
                )
                urls.append(f"{scheme}://{sub}{domain}{port}{path}")
    return sorted(set(urls))


def write_captures(path: Path, urls: list[str], rnd: random.Random, start: datetime) -> int:
    """A WARC with 1-3 response captures of each URL at different times; returns the count."""
    n = 0
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for url in urls:
            for _ in range(rnd.randint(1, 3)):
                when = start + timedelta(seconds=rnd.randint(0, 86_400 * 300))
                body = b"<html>%s %d</html>" % (url.encode(), rnd.randint(0, 3))
                http = StatusAndHeaders(
                    rnd.choice(["200 OK", "404 Not Found"]),
                    [("Content-Type", "text/html"), ("Content-Length", str(len(body)))],
                    protocol="HTTP/1.1",
                )
                rec = w.create_warc_record(
                    url,
                    "response",
                    payload=io.BytesIO(body),
                    http_headers=http,
                    warc_headers_dict={
                        "WARC-Date": when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                    },
                )
                w.write_record(rec)
                n += 1
    return n
