"""Compression bombs are bounded by what is archived, not by what is inflated.

Four responses from the hostile loopback server arrive at once, each under 1.1 MB on the wire
and inflating to 1 GiB (gzip twice, deflate, brotli), each declared ``text/html`` and starting
with a link. Before crawler.inflate, Scrapy's HttpCompressionMiddleware inflated each up to
DOWNLOAD_MAXSIZE (10 x max_response_bytes = 1 GB) before giving up; now link extraction reads
at most ``max_inflate_bytes`` of each (32 MiB by default), within a per-process budget:

- the crawler process's peak RSS (its own ``ru_maxrss``, from ``wait4``) stays under
  PEAK_RSS_BOUND_MB;
- each capture is archived as sent: the WARC payload is the compressed bytes the server sent,
  its WARC-Payload-Digest theirs, and every record's digests pass warcio's check (over the
  bytes as stored: ``warcio check`` would inflate each bomb in full, ~15 CPU-s for nothing the
  digests are taken over);
- the crawl.log line of each bomb says ``inflateTrunc``, and the link at its start is crawled;
- a small gzip page is still decoded and its link followed, untouched by the limit.

The other paths that inflate for a rendering browser have their own 4 GiB bombs (gzip, br,
zstd; past the 3 GiB address space their children run in) below: a script and a JSON API
fetched by the browser through the crawl, a capture read back from the WARC
(crawler/rendering/archive.py) and an unrecorded fetch (crawler/rendering/passthrough.py); the
continuous crawl's reader is in tests/harvest/continuous/test_runread.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from crawler.rendering.archive import ArchivedCaptures
from crawler.rendering.cdp import find_chromium
from crawler.rendering.passthrough import Passthrough
from crawler.rendering.proxy import ProxyRequest
from harvestflow.formats.cdx import CdxEntry, cdx11_line
from harvestflow.formats.urls import canonical_key
from tests.support.bombs import bomb_warc, call_measured, check_digests, run_polled
from tests.support.crawl import FAST_TEMPLATE, REPO
from tests.support.hostile import (
    HOST,
    brotli_bomb,
    deflate_bomb,
    gzip_bomb,
    hostile_server,
    response,
    zstd_bomb,
)

INFLATED = 1 << 30
# Before the bounded inflation one bomb alone took the crawler past 1 GiB (four: ~4 GB). Here:
# ~230 MB on a quiet machine, but 411 and 561 MB seen while the full suite ran beside it (the
# allocator keeps the freed 32 MiB inflate buffers differently when the reactor is starved);
# the bound keeps room for that and stays below what a single unbounded bomb takes.
PEAK_RSS_BOUND_MB = 768
BOMBS = {
    "/bomb/gzip1": (b"gzip", gzip_bomb),
    "/bomb/gzip2": (b"gzip", gzip_bomb),
    "/bomb/deflate": (b"deflate", deflate_bomb),
    "/bomb/br": (b"br", brotli_bomb),
}


def run_measured(job: dict, out: Path, timeout: float = 120) -> tuple[int, int]:
    """Run the crawler on ``job`` in a child process: (exit code, its peak RSS in kB)."""
    out.mkdir(parents=True)
    job_path = out.parent / "job.json"
    job_path.write_text(json.dumps(job))
    cmd = [sys.executable, "-m", "crawler", "--job", str(job_path), "--out", str(out)]
    with (out.parent / "stderr.txt").open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        finally:
            watchdog.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss


def test_bombs_are_archived_whole_and_inflated_within_bounds(tmp_path: Path) -> None:
    sent: dict[str, bytes] = {}
    with hostile_server() as srv:
        links = "".join(f'<a href="{p}">x</a>' for p in [*BOMBS, "/small"])
        srv.routes["/"] = response(f"<html><body>{links}</body></html>".encode())
        for path, (encoding, make) in BOMBS.items():
            prefix = f'<html><body><a href="{path}/first-link">x</a>'.encode()
            sent[path] = make(INFLATED, prefix)
            assert len(sent[path]) < 1_200_000
            srv.routes[path] = response(sent[path], headers=[(b"Content-Encoding", encoding)])
            srv.routes[f"{path}/first-link"] = response(b"ok", content_type=b"text/plain")
        small = gzip_bomb(0, b'<html><a href="/small/next">n</a></html>')
        srv.routes["/small"] = response(small, headers=[(b"Content-Encoding", b"gzip")])
        srv.routes["/small/next"] = response(b"ok", content_type=b"text/plain")
        job = {
            "job_id": 21,
            "harvest_id": 2,
            "seeds": [srv.url("/")],
            "template": {**FAST_TEMPLATE, "connections_per_host": 4, "max_hops": 2},
            "resolve": {HOST: "127.0.0.1"},
        }
        code, peak_kb = run_measured(job, tmp_path / "job")
        served = set(srv.requests)
    stderr = (tmp_path / "stderr.txt").read_text(errors="replace")
    assert code == 0, stderr[-3000:]
    print(f"crawler peak RSS: {peak_kb // 1024} MB (bound {PEAK_RSS_BOUND_MB} MB)")
    assert peak_kb < PEAK_RSS_BOUND_MB * 1024, f"peak RSS {peak_kb // 1024} MB"

    out = tmp_path / "job"
    lines = {f[3]: f for f in (ln.split() for ln in (out / "logs" / "crawl.log").open())}
    for path in BOMBS:
        line = lines[srv.url(path)]
        assert line[1] == "200" and "inflateTrunc" in line[11].split(","), line
        assert f"{path}/first-link" in served, path
    assert "/small/next" in served
    assert "inflateTrunc" not in lines[srv.url("/small")][11]

    warcs = sorted(p for p in (out / "warcs").glob("*.warc.gz") if "metadata" not in p.name)
    payloads: dict[str, tuple[bytes, str]] = {}
    for warc in warcs:
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    url = rec.rec_headers.get_header("WARC-Target-URI")
                    digest = rec.rec_headers.get_header("WARC-Payload-Digest")
                    payloads[url] = (rec.raw_stream.read(), digest)  # as sent, not decoded
    for path, body in sent.items():
        payload, digest = payloads[srv.url(path)]
        assert payload == body, path
        assert digest == "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
    check_digests(warcs)


def test_compressed_robots_txt_of_any_type_is_still_read(tmp_path: Path) -> None:
    # only bodies link extraction reads are inflated; robots.txt is read whatever its type
    robots = b"User-agent: *\nDisallow: /private/\n"
    with hostile_server() as srv:
        srv.routes["/robots.txt"] = response(
            gzip_bomb(0, robots),
            content_type=b"application/octet-stream",
            headers=[(b"Content-Encoding", b"gzip")],
        )
        srv.routes["/"] = response(b'<a href="/private/x">p</a><a href="/public">q</a>')
        srv.routes["/public"] = response(b"ok", content_type=b"text/plain")
        srv.routes["/private/x"] = response(b"secret", content_type=b"text/plain")
        job = {
            "job_id": 22,
            "harvest_id": 2,
            "seeds": [srv.url("/")],
            "template": {**FAST_TEMPLATE, "obey_robots": True},
            "resolve": {HOST: "127.0.0.1"},
        }
        code, _ = run_measured(job, tmp_path / "job")
        served = set(srv.requests)
    assert code == 0
    assert "/public" in served and "/private/x" not in served


# --- every other path that inflates: what a rendering browser gets ------------------------------
# past the 3 GiB address space of call_measured's children (a reader inflating a bomb whole
# fails there) and every other bound here; 10 GiB made each bomb ~2.5 CPU-s to build
BIG = 4 << 30
# a rendering crawler holding the two bombs' first 32 MiB (the browser's copies too): 252 MB
RENDER_PEAK_BOUND_MB = 512
GROWTH_BOUND_MB = 200  # a reader holds one body of max_inflate_bytes (32 MiB), and copies
BOMB_JS = b"var first = 1; //"  # then 4 GiB of NUL: one line comment, valid script
READ_BACK = {
    f"http://{HOST}/bomb.js": ("application/javascript", "gzip", BOMB_JS, gzip_bomb),
    f"http://{HOST}/bomb.json": ("application/json", "zstd", b'{"first": 1}', zstd_bomb),
    f"http://{HOST}/bomb.css": ("text/css", "br", b"body { }", brotli_bomb),
}


def read_back(warc_dir: str, cdx: str) -> list[list[object]]:
    """(In a child process) each capture of a bomb WARC read back for the browser."""
    got = []
    captures = ArchivedCaptures([(Path(cdx), Path(warc_dir))], {})
    for url in READ_BACK:
        response = captures.response(canonical_key(url))
        assert response is not None, url
        codings = [v for k, v in response.headers if k.lower() == "content-encoding"]
        got.append([len(response.body), response.body[:20].decode("latin-1"), codings])
        del response
    return [*got, [captures.cut]]


def test_a_bomb_read_back_from_the_warc_for_the_browser_is_inflated_within_bounds(
    tmp_path: Path,
) -> None:
    """A capture served back to a rendering browser (crawler/rendering/archive.py) was read with
    warcio's ``content_stream().read()``: whole, without a bound (and zstd not at all). Now the
    crawler's bounded inflation: the browser gets the first ``max_inflate_bytes``, decoded,
    without a Content-Encoding line, and the process's peak RSS grows by less than
    GROWTH_BOUND_MB (the child runs under an address-space limit: the old reader fails there)."""
    responses = {
        url: (ctype, coding, make(BIG, prefix))
        for url, (ctype, coding, prefix, make) in READ_BACK.items()
    }
    assert all(len(sent) < 12_000_000 for _, _, sent in responses.values())
    placed = bomb_warc(tmp_path / "warcs", responses)
    cdx = tmp_path / "cdx.unsorted"
    with cdx.open("w") as fh:
        for url, name, offset, length in placed:
            entry = CdxEntry(
                url, "2026-01-02T00:00:00Z", "warc/response", "200", "-", length, offset
            )
            fh.write(cdx11_line(entry, name) + "\n")
    result, growth_kb = call_measured(
        "tests.crawler.test_inflate_bombs:read_back", str(tmp_path / "warcs"), str(cdx)
    )
    print(f"read-back peak RSS growth: {growth_kb // 1024} MB (bound {GROWTH_BOUND_MB} MB)")
    *bodies, (cut,) = result
    for (length, head, codings), (url, (_, _, prefix, _)) in zip(
        bodies, READ_BACK.items(), strict=True
    ):
        assert (length, codings) == (32 << 20, []), url
        assert head.encode("latin-1").startswith(prefix), url
    assert cut == len(READ_BACK)
    assert growth_kb < GROWTH_BOUND_MB * 1024, f"grew by {growth_kb // 1024} MB"


def fetch_through(url: str) -> list[object]:
    """(In a child process) an unrecorded fetch for the browser (crawler/render_passthrough)."""
    import asyncio

    async def go() -> list[object]:
        passthrough = Passthrough({HOST: "127.0.0.1"}, 30, 100_000_000, "test/1.0", set())
        try:
            response = await passthrough.fetch(ProxyRequest("GET", url, []), url)
        finally:
            await passthrough.close()
        codings = [v for k, v in response.headers if k.lower() == "content-encoding"]
        return [response.status, len(response.body), response.body[:20].decode(), codings]

    return asyncio.run(go())


def test_a_bomb_fetched_unrecorded_for_the_browser_is_inflated_within_bounds() -> None:
    """The renderer's last-resort fetch (a record it cannot read) decoded with aiohttp's own
    decompression, up to ``max_response_bytes`` (100 MB) of inflated body; now with the
    crawler's inflation and bounds: ``max_inflate_bytes``, and the peak RSS grows by less than
    GROWTH_BOUND_MB."""
    with hostile_server() as srv:
        for path, coding, make in (("/b.js", b"br", brotli_bomb), ("/z.js", b"zstd", zstd_bomb)):
            srv.routes[path] = response(
                make(BIG, BOMB_JS),
                content_type=b"application/javascript",
                headers=[(b"Content-Encoding", coding)],
            )
            result, growth_kb = call_measured(
                "tests.crawler.test_inflate_bombs:fetch_through", srv.url(path)
            )
            print(f"{path}: peak RSS growth {growth_kb // 1024} MB")
            assert result == [200, 32 << 20, BOMB_JS.decode() + "\x00" * 3, []], path
            assert growth_kb < GROWTH_BOUND_MB * 1024, f"{path}: grew by {growth_kb // 1024} MB"


def test_a_rendering_browser_gets_script_and_json_bombs_decoded_within_bounds(
    tmp_path: Path,
) -> None:
    """A rendered page whose script (gzip) and JSON API (zstd) are 4 GiB bombs: the browser
    gets each decoded up to ``max_inflate_bytes`` (before, a compressed script or JSON reached it
    as an empty body), the crawl.log lines say ``inflateTrunc``, the WARC keeps the bytes as
    sent, and the crawler process's own peak RSS (VmHWM, Chromium not counted) stays under
    RENDER_PEAK_BOUND_MB."""
    find_chromium()
    script = (
        b"fetch('/api/bomb.json').then(function (r) { return r.text(); })"
        b".then(function (t) { fetch('/seen/' + t.slice(0, 5) + '/' + t.length); }); //"
    )
    with hostile_server() as srv:
        page = b'<html><body><p>bombed</p><script src="/bomb.js"></script></body></html>'
        srv.routes["/"] = response(page)
        sent = {
            "/bomb.js": gzip_bomb(BIG, script),
            "/api/bomb.json": zstd_bomb(BIG, b"hello"),
        }
        for path, coding, ctype in (
            ("/bomb.js", b"gzip", b"application/javascript"),
            ("/api/bomb.json", b"zstd", b"application/json"),
        ):
            srv.routes[path] = response(
                sent[path], content_type=ctype, headers=[(b"Content-Encoding", coding)]
            )
        job = {
            "job_id": 23,
            "harvest_id": 2,
            "seeds": [srv.url("/")],
            "template": {
                **FAST_TEMPLATE,
                "render": "seeds",
                "render_min_wait_s": 1.0,
                "render_page_timeout_s": 30,
                "obey_robots": False,
                "max_hops": 1,
                "extract_js": False,  # the JSON is the browser's to fetch, not a guess's
            },
            "resolve": {HOST: "127.0.0.1"},
        }
        out = tmp_path / "job"
        out.mkdir()
        (tmp_path / "job.json").write_text(json.dumps(job))
        cmd = [sys.executable, "-m", "crawler", "--job", str(tmp_path / "job.json")]
        with (tmp_path / "stderr.txt").open("wb") as err:
            code, peak_kb = run_polled(
                [*cmd, "--out", str(out)], 240, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO
            )
        served = list(srv.requests)
    assert code == 0, (tmp_path / "stderr.txt").read_text(errors="replace")[-3000:]
    print(f"crawler peak RSS: {peak_kb // 1024} MB (bound {RENDER_PEAK_BOUND_MB} MB)")
    # the browser ran the script's first bytes and read the JSON's first 32 MiB
    assert f"/seen/hello/{32 << 20}" in served, served
    lines = {f[3]: f for f in (ln.split() for ln in (out / "logs" / "crawl.log").open())}
    assert "rendered" in lines[srv.url("/")][11].split(","), lines[srv.url("/")]
    for path in sent:
        notes = lines[srv.url(path)][11].split(",")
        assert "inflateTrunc" in notes and "browser" in notes, lines[srv.url(path)]
    payloads = {}
    for warc in (out / "warcs").glob("*.warc.gz"):
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    uri = rec.rec_headers.get_header("WARC-Target-URI")
                    payloads[uri] = rec.raw_stream.read()
    for path, body in sent.items():
        assert payloads[srv.url(path)] == body, path
    assert 0 < peak_kb < RENDER_PEAK_BOUND_MB * 1024, f"peak RSS {peak_kb // 1024} MB"
