"""WARC files for the indexing tests, written with warcio (varied record types and headers)."""

from __future__ import annotations

import gzip
import io
import random
import uuid
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

URLS = [
    "http://www.example.com/page{i}?b=2&a={i}",
    "https://Example.org:443/A/{i}/",
    "http://127.0.0.1:8099/x{i}",
    "http://bücher.de/ä{i}?q=ü",
    "http://www2.example.com:8080/Path/%7Euser/{i}.HTML?Z=1&y&x=",
    "http://example.com/a b/{i}",
]


def _raw_record(fh, gz: bool, rec_type: str, uri: str, ctype: str, block: bytes) -> None:  # type: ignore[no-untyped-def]
    """Append a record written by hand (warcio's writer would add the payload digest)."""
    head = (
        "WARC/1.0\r\n"
        f"WARC-Type: {rec_type}\r\n"
        f"WARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
        "WARC-Date: 2026-11-22T03:15:00Z\r\n"
        f"WARC-Target-URI: {uri}\r\n"
        f"Content-Type: {ctype}\r\n"
        f"Content-Length: {len(block)}\r\n\r\n"
    ).encode()
    record = head + block + b"\r\n\r\n"
    fh.write(gzip.compress(record) if gz else record)


def write_warc(path: Path, n: int = 40, *, gz: bool = True, seed: int = 1) -> Path:
    """A WARC with warcinfo, request/response pairs, revisits, metadata and resource records."""
    rnd = random.Random(seed)
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=gz)
        w.write_record(w.create_warcinfo_record(path.name, {"software": "harvestflow-test"}))
        for i in range(n):
            url = rnd.choice(URLS).format(i=i)
            body = (b"<html>%d</html>" % i) * rnd.randint(1, 400)
            ctype = rnd.choice(
                ["text/html; charset=utf-8", "image/png", "application/json;x=1", None]
            )
            headers = [("Content-Length", str(len(body)))]
            if ctype:
                headers.append(("Content-Type", ctype))
            if i % 3 == 0:
                headers.append(("ETag", f'"e{i}"'))
                headers.append(("Last-Modified", "Sun, 22 Nov 2026 03:00:00 GMT"))
            status = rnd.choice(["200 OK", "404 Not Found", "301 Moved Permanently"])
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            rec = w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http)
            w.write_record(rec)
            req_http = StatusAndHeaders(
                "GET / HTTP/1.1", [("Host", "example.com")], is_http_request=True
            )
            w.write_record(
                w.create_warc_record(url, "request", payload=io.BytesIO(b""), http_headers=req_http)
            )
            if i % 5 == 0:
                w.write_record(
                    w.create_revisit_record(
                        url,
                        digest=rec.rec_headers.get_header("WARC-Payload-Digest"),
                        refers_to_uri=url,
                        refers_to_date="2026-01-01T00:00:00Z",
                        http_headers=http,
                    )
                )
            if i % 7 == 0:
                w.write_record(
                    w.create_warc_record(
                        url,
                        "metadata",
                        payload=io.BytesIO(b"via: http://example.com/\r\n"),
                        warc_content_type="application/warc-fields",
                    )
                )
                w.write_record(
                    w.create_warc_record(
                        f"http://example.com/res{i}",
                        "resource",
                        payload=io.BytesIO(b"hello %d" % i),
                        warc_content_type="text/plain; charset=utf-8",
                    )
                )
            if i % 11 == 0:  # records without WARC-Payload-Digest: the indexer computes it
                _raw_record(
                    fh,
                    gz,
                    "resource",
                    f"http://example.com/nodigest{i}",
                    "text/plain",
                    b"payload %d" % i,
                )
                body = b"<p>no digest %d</p>" % i
                http_block = (
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"
                    % len(body)
                ) + body
                _raw_record(
                    fh,
                    gz,
                    "response",
                    f"http://example.com/nodigest-http{i}",
                    "application/http; msgtype=response",
                    http_block,
                )
    return path
