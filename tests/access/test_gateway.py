"""The access gateway against the real replay service (our gateway, pywb from the replay venv, our
WARC resolver, started by :class:`access.service.ReplayService`) on a real indexed job: the
crawl's metadata records are not served to readers, regular-expression filters never reach pywb,
pywb's failures become our error page, and every request is size- and time-limited.

One service for the module (starting pywb costs seconds); the gateway's request timeout is set
to 2 s so that a stalled request is seen closed quickly."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from access.config import AccessConfig
from access.service import ReplayService
from crawler.warc.metadata import write_metadata_warc
from harvestflow import settings as settings_mod
from indexing.chain import run_chain
from tests.support.access_rules import page
from tests.support.command import harvestflow as cli
from tests.support.corpus import chain_job
from tests.support.environment import reset_harvest_db
from tests.support.replay import replay_env

pytestmark = pytest.mark.services

OPEN = "http://open.test/a.html"
SECRET = "http://excl.test/secret.html"
GONE = "http://gone.test/page.html"  # in a WARC of its own, taken away by one test


@dataclass
class Served:
    cfg: AccessConfig
    job_id: int
    harvest_id: int

    def metadata(self, name: str, section: str = "logs") -> str:
        return f"harvestflow/crawl/{section}/{name}?harvestid={self.harvest_id}&jobid={self.job_id}"


@pytest.fixture(scope="module")
def served(
    services: settings_mod.Settings, tmp_path_factory: pytest.TempPathFactory, replay_venv: Path
) -> Iterator[Served]:
    """A job with two pages and its metadata WARC (crawl.log and crawler.log naming the
    excluded page, the job's CDX), indexed; an exclude rule; the replay service serving it."""
    from harvestflow import db

    data = tmp_path_factory.mktemp("gateway") / "data"
    with pytest.MonkeyPatch.context() as mp:
        replay_env(mp, data)
        mp.setenv("HARVESTFLOW_ACCESS__CLIENT_TIMEOUT_S", "2")
        settings_mod.reset()
        settings = settings_mod.get_settings()
        reset_harvest_db(services)
        engine = db.get_engine(settings.harvest_db_url)
        old = datetime(2021, 6, 1, 12, tzinfo=UTC)
        pages = [[page(OPEN, "open", old), page(SECRET, "secret", old)], [page(GONE, "gone", old)]]
        chain_job(engine, data, "gw", pages, run=False)
        job_dir = next((data / "jobs").glob("*/*/*"))
        job_id, harvest_id = int(job_dir.parent.name), int(job_dir.parent.parent.name)
        logs = job_dir / "logs"
        logs.mkdir()
        (logs / "crawl.log").write_text(f"2021-06-01T12:00:00Z 200 5120 {SECRET} - sha1:AAAA\n")
        (logs / "crawler.log").write_text(f"INFO started in {job_dir} harvestflow 0.1 {SECRET}\n")
        warcs = sorted((job_dir / "warcs").glob("*.warc.gz"))
        files = {"logs": [logs / "crawl.log", logs / "crawler.log"]}
        write_metadata_warc(job_dir / "warcs", job_id, harvest_id, "harvestflow", files, warcs)
        run_chain()
        done = cli("access", "rules", "add", "http://excl.test/", "--policy", "exclude",
                   "--reason", "withdrawn", "--user", "alice")  # fmt: skip
        assert done.returncode == 0, done.stderr
        service = ReplayService(settings)
        service.start()
        try:
            yield Served(AccessConfig.from_settings(settings), job_id, harvest_id)
        finally:
            service.stop()
            settings_mod.reset()
            db.dispose_engines()


def request(
    cfg: AccessConfig, path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, str, bytes]:
    """One request to the gateway (on the replay site's name): status, Content-Type, body."""
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=60)
    try:
        conn.request(method, path, headers={"Host": urlsplit(cfg.url).netloc, **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read()
    finally:
        conn.close()


def raw(cfg: AccessConfig, data: bytes, timeout: float = 30) -> bytes:
    """Send ``data`` as is on a new connection; everything the gateway answers until it closes."""
    with socket.create_connection((cfg.host, cfg.port), timeout=timeout) as sock:
        sock.sendall(data)
        return _read_all(sock)


def _read_all(sock: socket.socket) -> bytes:
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


def refused(cfg: AccessConfig) -> str:
    return cfg.refused_log.read_text() if cfg.refused_log.exists() else ""


def test_crawl_metadata_records_are_not_served_to_readers_in_any_url_form(served: Served) -> None:
    """crawl.log, crawler.log and the job's CDX list the excluded page (with its WARC name and
    offset) and local paths: readers get a 404 for each, however the URL is written (pywb
    finds a metadata record by its key, which drops the scheme), and the refusal is logged."""
    cfg = served.cfg
    crawl_log = served.metadata("crawl.log")
    forms = [
        f"/all/2030id_/metadata://{crawl_log}",
        f"/all/2030id_/http://{crawl_log}",
        f"/all/2030mp_/{crawl_log}",
        f"/all/2030js_/metadata://{crawl_log}",
        f"/all/2030cs_/metadata://{crawl_log}",
        f"/all/2030if_/metadata://{crawl_log}",
        f"/all/2030oe_/metadata://{crawl_log}",
        f"/all/2030im_/metadata://{crawl_log}",
        f"/all/2030/metadata://{crawl_log}",
        f"/all/2030id_/https://{quote(crawl_log)}",
        f"/all/2030id_/metadata://{served.metadata('crawler.log')}",
        f"/all/2030id_/metadata://{served.metadata('cdx', 'index')}",
        f"/harvest-{served.harvest_id}/2030id_/metadata://{crawl_log}",
    ]
    for path in forms:
        status, ctype, body = request(cfg, path)
        assert status == 404, (path, status, body[:300])
        assert ctype.startswith("text/html") and b"Not in the archive" in body, path
        assert b"excl.test" not in body and b"sha1:" not in body, path
        head = request(cfg, path, "HEAD")
        assert head[0] == 404 and head[2] == b"", path
    log = refused(cfg)
    assert log.count("not a web capture (metadata://harvestflow/crawl/") >= len(forms)
    # the web captures are served as before; the excluded one is not
    status, _, body = request(cfg, f"/all/2030id_/{OPEN}")
    assert status == 200 and b"quokka" in body
    assert request(cfg, f"/all/2030id_/{SECRET}")[0] == 404


def test_regex_filters_are_refused_before_pywb_and_other_replays_go_on(served: Served) -> None:
    """``filter=~url:^.{3}(.*)*X$`` (catastrophic backtracking in pywb's Python re): a 400
    saying why, answered without pywb (its request log never sees it, nor does the exclude
    audit); a replay asked at the same time is served; contains and exact filters still work."""
    cfg = served.cfg
    evil = "/all/cdx?url=open.test/&matchType=prefix&filter=" + quote("~url:^.{3}(.*)*X$")
    answers: dict[str, tuple[int, str, bytes]] = {}

    def ask(name: str, path: str) -> None:
        answers[name] = request(cfg, path)

    threads = [threading.Thread(target=ask, args=(f"evil{i}", evil)) for i in range(4)]
    threads.append(threading.Thread(target=ask, args=("replay", f"/all/2030id_/{OPEN}")))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for i in range(4):
        status, ctype, body = answers[f"evil{i}"]
        assert status == 400 and ctype.startswith("text/html"), (status, body[:300])
        assert b"regular-expression filters" in body and b"Bad request" in body
    status, _, body = answers["replay"]
    assert status == 200 and b"quokka" in body
    for negated in ("!~url:open", "~mime:text"):
        assert request(cfg, f"/all/cdx?url=open.test/*&filter={quote(negated)}")[0] == 400
    # the URL search written as pywb still routes it: %-escaped, slashes doubled
    for spelled in ("/all/%63dx", "//all//cdx", "/all/cd%78"):
        status, _, body = request(cfg, f"{spelled}?url=open.test/*&fil%74er=%7Eurl:x")
        assert status == 400 and b"regular-expression filters" in body, (spelled, status)
    # the linear filters: contains and exact
    status, _, body = request(cfg, "/all/cdx?url=open.test/*&output=json&filter=url:a.html")
    assert status == 200 and OPEN.encode() in body
    status, _, body = request(cfg, f"/all/cdx?url=open.test/*&filter={quote('=mime:image/png')}")
    assert status == 200 and body.strip() == b""
    time.sleep(1.0)  # the exclude audit of the accepted queries has run
    assert "(.*)" not in cfg.access_log.read_text(errors="replace")
    assert "%28.%2A%29" not in cfg.access_log.read_text(errors="replace")


@pytest.mark.parametrize(
    "path",
    [
        "/all/cdx?url=open.test&limit=abc",
        "/all/cdx?url=open.test&filter=~url:(",
        "/all/2026id_/http://[::1",
        "/all/cdx?url=http://[::1&from=2020",
        "/all/cdx?url=open.test&from=abc",
        "/all/*/http://open.test:99999/",
        "/all/timemap/link/http://[::1",
    ],
)
def test_queries_pywb_fails_on_get_our_400_page(served: Served, path: str) -> None:
    status, ctype, body = request(served.cfg, path)
    assert status == 400, (path, status, body[:300])
    assert ctype.startswith("text/html") and b"<h1>Bad request</h1>" in body
    assert b"Internal Error" not in body and b"Traceback" not in body


def test_a_failure_of_pywb_is_our_error_page_not_its_traceback(served: Served) -> None:
    """pywb's own 500 for a capture whose WARC is gone everywhere (the resolver answers 404,
    pywb fails): our page, 502, nothing of pywb's message."""
    cfg = served.cfg
    copies = list(cfg.root.parent.glob("**/*-00001-crawler.warc.gz"))  # job, repository
    assert copies
    for warc in copies:
        warc.rename(warc.with_name(warc.name + ".away"))
    try:
        status, ctype, body = request(cfg, f"/all/2030id_/{GONE}")
    finally:
        for warc in copies:
            warc.with_name(warc.name + ".away").rename(warc)
    assert status in (502, 503, 504), (status, body[:300])
    assert ctype.startswith("text/html") and b"Replay failed" in body
    assert b"Traceback" not in body and copies[0].name.encode() not in body


def test_a_body_over_the_limit_is_refused_413_before_it_is_read(served: Served) -> None:
    """A 300 MB POST: the 413 comes while the client is still sending (the body is never
    read nor buffered); the connection is then closed."""
    cfg = served.cfg
    size = 300 * 1024 * 1024
    head = (
        f"POST /all/cdx?url=open.test HTTP/1.1\r\nHost: {urlsplit(cfg.url).netloc}\r\n"
        f"Content-Type: application/octet-stream\r\nContent-Length: {size}\r\n\r\n"
    ).encode()
    with socket.create_connection((cfg.host, cfg.port), timeout=30) as sock:
        sock.sendall(head + b"x" * 65536)  # a first part of the body; the rest never comes
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"at most 1048576 bytes" in answer
    # a length no server could hold (MemoryError before): 413, never read
    answer = raw(cfg, b"POST /all/ HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    # Expect: 100-continue is answered 413 without inviting the body
    answer = raw(
        cfg,
        b"PUT /all/ HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\nExpect: 100-continue\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 413 ") and b"100 Continue" not in answer, answer[:200]
    # a body within the limit is read and forwarded, the answer whole
    body = b"q=" + b"x" * 100_000
    answer = raw(
        cfg,
        f"POST /all/cdx?url=open.test/*&output=json HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body,
    )
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.rstrip().endswith(b"}"), answer[-200:]
    assert OPEN.encode() in answer


@pytest.mark.parametrize(
    ("header", "status"),
    [
        (b"Content-Length: abc", b"400"),
        (b"Content-Length: -1", b"400"),
        (b"Content-Length: 5\r\nContent-Length: 6", b"400"),
        (b"Transfer-Encoding: chunked", b"411"),
    ],
)
def test_an_unreadable_body_length_gets_a_reply_not_a_dropped_connection(
    served: Served, header: bytes, status: bytes
) -> None:
    answer = raw(served.cfg, b"POST /all/ HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\nhello")
    assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer[:200]
    assert b"Request refused" in answer and b"</html>" in answer


def test_a_request_not_sent_in_time_is_closed(served: Served) -> None:
    """A half-sent request (headers never finished), and one trickled a byte at a time: the
    gateway closes the connection after ``client_timeout_s`` (2 s here); the client's own
    30 s timeout would fail the test if it did not."""
    cfg = served.cfg
    assert raw(cfg, b"GET /all/ HTTP/1.1\r\nHost: x\r\n") == b""
    with socket.create_connection((cfg.host, cfg.port), timeout=30) as sock:
        sent = 0
        with pytest.raises(OSError):  # the gateway closed it: a send fails (reset / pipe)
            for byte in b"GET /all/ HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
                sock.sendall(bytes([byte]))
                sent += 1
                time.sleep(0.3)
        assert sent < 100
    # and the gateway still serves
    assert request(cfg, f"/all/2030id_/{OPEN}")[0] == 200
