"""The framings an HTTP/1.1 client must get right, archived the same by both fetch clients
(the template's ``fetch_client``: Scrapy's Twisted client and crawler/asyncio_fetch.py): a
body ended by the connection's close, a chunked body, an HTTP/1.0 answer, a kept-alive
connection the server drops after one answer, and byte-exact payloads in the WARC (read by
warcio) with the address connected to as WARC-IP-Address.

The server is the test's own raw socket loop (http.server always sends a Content-Length or
closes): each response is written byte for byte as below.
"""

from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.support.crawl import FAST_TEMPLATE, FETCH_CLIENTS, CrawlResult, run_crawl

HOST = "www.framing.test"
PAGE = (
    b'<html><body><a href="/close">c</a><a href="/chunked">k</a><a href="/http10">h</a>'
    b'<a href="/drop">d</a><a href="/after-drop">a</a></body></html>'
)
CLOSE_BODY = b"<html><body>" + b"read until the connection closes " * 400 + b"</body></html>"
CHUNKS = [b"<html><body>", b"chunk " * 300, b"</body></html>"]
HTTP10_BODY = b"<html><body>an HTTP/1.0 answer</body></html>"


def _ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n%s\r\n%s" % (
        len(body),
        extra,
        body,
    )


def _answer(path: str) -> tuple[bytes, bool]:
    """The bytes sent for ``path`` and whether the server closes the connection after them."""
    if path == "/close":
        return b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + CLOSE_BODY, True
    if path == "/chunked":
        framed = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in CHUNKS) + b"0\r\n\r\n"
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
        return head + framed, False
    if path == "/http10":
        return b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n" + HTTP10_BODY, True
    if path == "/drop":  # kept alive as far as the client knows, then dropped
        return _ok(b"<html><body>dropped after this</body></html>"), True
    if path in ("/", "/after-drop"):
        return _ok(PAGE if path == "/" else b"<html><body>after</body></html>"), False
    return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", False


class RawServer:
    """One thread per connection; requests read up to their blank line (GETs only)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.requests: list[str] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                self.requests.append(path)
                answer, close = _answer(path)
                conn.sendall(answer)
                if close:
                    return

    def close(self) -> None:
        self.sock.close()


@pytest.fixture()
def server() -> Iterator[RawServer]:
    srv = RawServer()
    yield srv
    srv.close()


def responses(result: CrawlResult) -> dict[str, tuple[object, bytes]]:
    found = {}
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    url = rec.rec_headers.get_header("WARC-Target-URI")
                    found[url] = (rec, rec.content_stream().read())
    return found


def crawl(server: RawServer, out: Path, fetch_client: str) -> CrawlResult:
    job = {
        "job_id": 41,
        "harvest_id": 4,
        "seeds": [f"http://{HOST}:{server.port}/"],
        "template": {
            **FAST_TEMPLATE,
            "connections_per_host": 1,  # one connection: reuse, and the dropped one, are seen
            "obey_robots": False,
            "fetch_client": fetch_client,
        },
        "resolve": {HOST: "127.0.0.1"},
    }
    result = run_crawl(job, out)
    assert result.summary["status"] == "complete"
    return result


@pytest.mark.parametrize("fetch_client", FETCH_CLIENTS)
def test_each_framing_is_archived_byte_exact_by_each_client(server, tmp_path, fetch_client):
    base = f"http://{HOST}:{server.port}"
    result = crawl(server, tmp_path / "job", fetch_client)
    got = responses(result)
    expected = {
        "/": PAGE,
        "/close": CLOSE_BODY,
        "/chunked": b"".join(CHUNKS),
        "/http10": HTTP10_BODY,
        "/after-drop": b"<html><body>after</body></html>",
    }
    for path, body in expected.items():
        assert result.line_for(base + path)[1] == "200", path
        rec, payload = got[base + path]
        assert payload == body, path
        digest = rec.rec_headers.get_header("WARC-Payload-Digest")
        assert digest and digest == _b32_sha1(body), path
        assert rec.rec_headers.get_header("WARC-IP-Address") == "127.0.0.1"
    assert got[base + "/http10"][0].http_headers.protocol == "HTTP/1.0"
    assert got[base + "/chunked"][0].http_headers.get_header("Transfer-Encoding") is None
    # every page fetched once: the dropped connection's successor was not a retry of a failure
    for path in [*expected, "/drop"]:
        assert server.requests.count(path) == 1, path
    # kept alive where the server allowed it: fewer connections than requests
    assert server.connections < len(server.requests)


def test_both_clients_write_the_same_response_records(tmp_path):
    """Switching the client changes no archived byte but the per-fetch fields (dates, ids)."""
    archived = {}
    for client in FETCH_CLIENTS:
        srv = RawServer()
        try:
            result = crawl(srv, tmp_path / client, client)
            base = f"http://{HOST}:{srv.port}"
            archived[client] = {
                url.removeprefix(base): (
                    rec.http_headers.protocol,
                    rec.http_headers.statusline,
                    rec.http_headers.headers,
                    payload,
                )
                for url, (rec, payload) in responses(result).items()
            }
        finally:
            srv.close()
    assert len(archived["twisted"]) >= 6
    assert archived["asyncio"] == archived["twisted"]


def _b32_sha1(body: bytes) -> str:
    import base64

    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()


@pytest.mark.parametrize("fetch_client", FETCH_CLIENTS)
def test_https_pages_are_fetched_and_archived_by_each_client(tmp_path, fetch_client):
    """TLS to a server whose certificate no public CA signed (an archive records what is
    served): the page and its link are captured as https:// URLs with the peer's address."""
    import ssl

    from crawler.rendering.tls import JobCA
    from tests.support.rawsite import Raw, serve

    chain, key = JobCA(tmp_path / "site-ca", "test site").issue("secure.test")
    pem = tmp_path / "site.pem"
    pem.write_bytes(chain + key)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(pem)
    html = [b"Content-Type: text/html"]
    story = b"<html><body>story</body></html>"
    routes = {
        (None, "/"): Raw(b'<html><body><a href="/story.html">s</a></body></html>', html),
        (None, "/story.html"): Raw(story, html),
    }
    with serve(routes, tls) as site:
        base = f"https://secure.test:{site.port}"
        job = {
            "job_id": 42,
            "seeds": [base + "/"],
            "template": {**FAST_TEMPLATE, "obey_robots": False, "fetch_client": fetch_client},
            "resolve": {"secure.test": "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / "job")
    assert result.line_for(base + "/")[1] == "200"
    assert result.line_for(base + "/story.html")[1] == "200"
    rec, payload = responses(result)[base + "/story.html"]
    assert payload == story
    assert rec.rec_headers.get_header("WARC-IP-Address") == "127.0.0.1"
