"""ARC v1 files for the tests, written by hand (no ARC writer is worth a dependency).

An ARC v1 file is the ``filedesc://`` header record (its body: version line and field names),
then per capture a header line ``URL IP-address Archive-date Content-type Archive-length``, the
``Archive-length`` bytes of the HTTP response as received, and a newline. ``.arc.gz`` files hold
one gzip member per record.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ArcCapture:
    url: bytes  # as the crawler wrote it (old crawls: raw UTF-8 or Latin-1 bytes)
    date: str  # 14 digits
    mime: str
    http: bytes  # status line + headers + body, as received
    ip: str = "192.0.2.10"


def http_response(status: str, ctype: str | None, body: bytes, *extra: str) -> bytes:
    head = [f"HTTP/1.0 {status}", "Server: Apache/1.3.9 (Unix)"]
    if ctype:
        head.append(f"Content-Type: {ctype}")
    head += [*extra, f"Content-Length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def sample_captures() -> list[ArcCapture]:
    """A small 1990s-style crawl: pages, an image, a redirect, a 404, non-ASCII URLs, DNS."""
    page = b"<html><head><title>Accueil</title></head><body><a href=/b.html>b</a></body></html>"
    return [
        ArcCapture(
            b"http://www.example.fr/",
            "19961015123000",
            "text/html",
            http_response(
                "200 OK", "text/html", page, "Last-Modified: Mon, 14 Oct 1996 10:00:00 GMT"
            ),
        ),
        ArcCapture(
            b"http://www.example.fr/b.html",
            "19961015123002",
            "text/html",
            http_response(
                "200 OK", "text/html; charset=iso-8859-1", "<p>\xe9t\xe9</p>".encode("latin-1")
            ),
        ),
        ArcCapture(
            b"http://www.example.fr/logo.gif",
            "19961015123003",
            "image/gif",
            http_response("200 OK", "image/gif", b"GIF89a" + bytes(range(256)) * 4),
        ),
        ArcCapture(
            b"http://www.example.fr/old",
            "19961015123004",
            "text/html",
            http_response(
                "301 Moved Permanently",
                "text/html",
                b"<a href=/new>moved</a>",
                "Location: http://www.example.fr/new",
            ),
        ),
        ArcCapture(
            b"http://www.example.fr/missing.html",
            "19961015123005",
            "text/html",
            http_response("404 Not Found", "text/html", b"<h1>Not Found</h1>"),
        ),
        ArcCapture(
            "http://www.example.fr/caf\u00e9/\u00e9t\u00e9.html".encode(),
            "19961015123006",
            "text/html",
            http_response("200 OK", "text/html", b"<p>caf\xc3\xa9</p>"),
        ),
        ArcCapture(
            b"http://www.example.fr/r\xe9sum\xe9.html",
            "19961015123007",
            "text/html",
            http_response("200 OK", "text/html", b"<p>latin-1 URL</p>"),
        ),
        ArcCapture(
            b"http://www.example.fr/query?a=1&b=2",
            "19961015123008",
            "text/plain",
            http_response("200 OK", None, b"no content type"),
        ),
        ArcCapture(
            b"dns:www.example.fr",
            "19961015122959",
            "text/dns",
            b"19961015122959\nwww.example.fr.\t3600\tIN\tA\t192.0.2.10\n",
        ),
    ]


def _filedesc(name: str, date: str) -> bytes:
    body = b"1 0 Example Archive\nURL IP-address Archive-date Content-type Archive-length\n"
    line = f"filedesc://{name} 0.0.0.0 {date} text/plain {len(body)}\n".encode()
    return line + body + b"\n"


def arc_record(cap: ArcCapture) -> bytes:
    line = b"%s %s %s %s %d\n" % (
        cap.url,
        cap.ip.encode(),
        cap.date.encode(),
        cap.mime.encode(),
        len(cap.http),
    )
    return line + cap.http + b"\n"


def write_arc(path: Path, captures: list[ArcCapture] | None = None) -> Path:
    """An ARC file (``.arc.gz``: one gzip member per record) of ``captures``."""
    captures = sample_captures() if captures is None else captures
    name = path.name
    records = [_filedesc(name, "19961015122900")] + [arc_record(c) for c in captures]
    gz = name.endswith(".gz")
    with open(path, "wb") as out:
        for rec in records:
            out.write(gzip.compress(rec) if gz else rec)
    return path
