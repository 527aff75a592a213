"""POST and PUT responses are indexed under their request body exactly as ``cdxj-indexer -p``
(the reference, pywb's indexer) indexes them: on WARCs holding request/response pairs in both
orders (Heritrix's and warcprox's response first, ours request first), with JSON, form-encoded,
multipart, text, binary and unparsable bodies, a request without Content-Length, a GET pair and
a POST whose records are not a pair (no ``WARC-Concurrent-To``), our CDXJ and CDX11 lines are
the reference's — gzipped (fast scanner, payloads inflated or skipped) and plain (warcio-based
scanner)."""

from __future__ import annotations

import subprocess
from io import BytesIO
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from indexing.cdx import index_warc
from indexing.dedup_index import sidecar_lines
from tests.support.environment import oracle

MULTIPART = (
    b'--XyZ\r\nContent-Disposition: form-data; name="f1"\r\n\r\nvalue one\r\n'
    b'--XyZ\r\nContent-Disposition: form-data; name="up"; filename="a.bin"\r\n'
    b"Content-Type: application/octet-stream\r\n\r\n\x00\xffab\r\n--XyZ--\r\n"
)
# (URL, method, Content-Type, body, response record first, Content-Length sent, paired)
PAIRS = [
    ("http://x.test/api", "POST", "application/json", b'{"page": 2, "t": ["a", "b"], "x": {"page": 3}}', False, True, True),
    ("http://x.test/api?q=1", "POST", "application/x-www-form-urlencoded", b"a=1&b=hello+world%21", True, True, True),
    ("http://x.test/api", "PUT", "text/plain", b"not json \xff", False, True, True),
    ("http://x.test/api", "POST", "text/plain", b'{"page": 4}', True, True, True),
    ("http://x.test/api", "POST", "application/octet-stream", b"\x00\x01binary", False, False, True),
    ("http://x.test/api", "POST", "multipart/form-data; boundary=XyZ", MULTIPART, False, True, True),
    ("http://x.test/api", "GET", None, b"", False, True, True),
    ("http://x.test/api", "POST", "application/json", b"{bad json", False, True, True),
    ("http://x.test/api", "POST", "application/json", b'{"page": 5}', False, True, False),
]  # fmt: skip


def write_warc(path: Path) -> Path:
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=path.suffix == ".gz")
        for url, method, ctype, body, resp_first, with_len, paired in PAIRS:
            headers = [("Host", "x.test")]
            if ctype:
                headers.append(("Content-Type", ctype))
            if with_len:
                headers.append(("Content-Length", str(len(body))))
            line = f"{method} /api HTTP/1.1"
            req = writer.create_warc_record(
                url,
                "request",
                payload=BytesIO(body),
                length=len(body),
                http_headers=StatusAndHeaders(line, headers, is_http_request=True),
            )
            answer = b'{"ok": 1}'
            resp = writer.create_warc_record(
                url,
                "response",
                payload=BytesIO(answer),
                length=len(answer),
                http_headers=StatusAndHeaders(
                    "200 OK", [("Content-Type", "application/json")], protocol="HTTP/1.1"
                ),
            )
            first, second = (resp, req) if resp_first else (req, resp)
            if paired:
                second.rec_headers.add_header(
                    "WARC-Concurrent-To", first.rec_headers.get_header("WARC-Record-ID")
                )
            writer.write_record(first)
            writer.write_record(second)
    return path


def reference(warc: Path, *args: str) -> list[str]:
    proc = subprocess.run(
        [str(oracle("cdxj-indexer")), "-p", *args, str(warc)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.splitlines()


@pytest.mark.parametrize(
    ("name", "verify", "scanner"),
    [
        ("pairs.warc.gz", True, "fast"),
        ("pairs.warc.gz", False, "skip"),
        ("pairs.warc", True, "warcio"),
    ],
)
def test_post_and_put_lines_are_cdxj_indexer_p_lines(
    tmp_path: Path, name: str, verify: bool, scanner: str
) -> None:
    warc = write_warc(tmp_path / name)
    result = index_warc(warc, verify=verify)
    assert result.scanner == scanner and not result.damages
    expected = reference(warc)
    keyed = [ln for ln in expected if "__wb_method=" in ln.split(" ", 1)[0]]
    assert len(keyed) == 7, expected  # every paired POST/PUT; not the GET, not the lone POST
    assert result.lines("cdxj") == expected
    assert result.lines("cdx11") == reference(warc, "-11")


def test_post_answers_are_left_out_of_the_dedup_index(tmp_path: Path) -> None:
    """A later GET of the API URL must never be written as a revisit of a POST's answer."""
    result = index_warc(write_warc(tmp_path / "pairs.warc.gz"))
    offsets = {str(c.offset) for c in result.captures if c.method is None}
    lines = sidecar_lines(result.captures, "pairs.warc.gz")
    assert len(lines) == 2  # the GET pair's response and the lone POST's (not keyed)
    assert {line.split("\t")[4] for line in lines} <= offsets
