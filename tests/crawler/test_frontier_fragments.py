"""Captures are stored under the URL the server was asked for: a link's fragment is never sent,
so it is dropped before the URL is scheduled (everything else kept as linked, the query string
in its order). The same page linked with two fragments is fetched once, and pywb replays it by
the linked URL without its fragment."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from tests.support.crawl import FAST_TEMPLATE, ORACLE_BIN, CrawlResult, get, our_cdx, run_crawl
from tests.support.environment import free_port
from tests.support.rawsite import Raw, serve

HOST = "www.frag.test"
ARTICLE = "/article/7?utm_source=home&b=2&a=1"
HTML = b"Content-Type: text/html"
PAGE = (
    f'<html><body><a href="{ARTICLE}#top">top</a><a href="{ARTICLE}#comments">comments</a>'
    '<a href="/plain#">empty fragment</a><a href="#self">self</a>'
    '<img src="/logo.png#frag"></body></html>'
).encode()
ARTICLE_BODY = b"<html><body>article seven</body></html>"
ROUTES = {
    (None, "/"): Raw(PAGE, [HTML]),
    (None, ARTICLE): Raw(ARTICLE_BODY, [HTML]),
    (None, "/plain"): Raw(b"<html>plain</html>", [HTML]),
    (None, "/logo.png"): Raw(b"\x89PNG fake", [b"Content-Type: image/png"]),
}


def _target_uris(result: CrawlResult) -> list[str]:
    uris = []
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type in ("request", "response", "revisit", "metadata"):
                    uris.append(rec.rec_headers.get_header("WARC-Target-URI"))
    return uris


@contextmanager
def _wayback(coll: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [str(ORACLE_BIN / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
        cwd=coll,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/hf"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_fragments_are_dropped_before_scheduling_and_replay_works(tmp_path: Path):
    with serve(ROUTES) as site:
        seed = site.url(HOST, "/#intro")
        job = {
            "job_id": 7,
            "harvest_id": 2,
            "seeds": [seed],
            "template": {**FAST_TEMPLATE, "max_hops": 2},
            "resolve": {HOST: "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / "job")
        served = list(site.requests)
    base = site.url(HOST, "")
    uris = _target_uris(result)
    assert uris and not [u for u in uris if "#" in u]
    assert not [ln for ln in result.crawl_log if "#" in ln.split()[3]]
    # stored under the URL as linked, without the fragment (query order kept)
    assert base + ARTICLE in uris and base + "/" in uris and base + "/logo.png" in uris
    assert result.line_for(base + ARTICLE)[1] == "200"
    # one fetch for the two fragments of the article, one for the page and its own "#self"
    assert served.count((HOST, ARTICLE)) == 1
    assert served.count((HOST, "/")) == 1

    coll = tmp_path / "pywb"
    coll.mkdir()
    our_cdx(result.out / "warcs" / "7-metadata-1.warc.gz", coll / "index.cdx")
    (coll / "config.yaml").write_text(
        f"collections:\n  hf:\n    index: {coll / 'index.cdx'}\n"
        f"    archive_paths: {result.out / 'warcs'}/\n"
    )
    with _wayback(coll) as replay:
        status, body = get(f"{replay}/2030id_/{base}{ARTICLE}")
        assert status == 200, body[:300]
        assert body == ARTICLE_BODY
