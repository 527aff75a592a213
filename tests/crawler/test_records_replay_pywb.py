"""Replay in pywb (test oracle, its own venv): configured with our WARCs and the CDX index from
our metadata WARC, it serves a front page and a deep page, and every image and stylesheet they
embed, from the archive (the live site is stopped first)."""

from __future__ import annotations

import hashlib
import socket
import subprocess
import time

from app.demo.samplesite import start
from tests.support.crawl import get, make_job, our_cdx, run_crawl
from tests.support.environment import free_port, oracle


def embedded(fields: list[list[str]], page: str) -> set[str]:
    """URLs a page embeds, directly or through its stylesheets (crawl.log via/hop columns)."""
    found: set[str] = set()
    frontier = {page}
    while frontier:
        nxt = {f[3] for f in fields if f[5] in frontier and f[4].endswith("E") and f[1] == "200"}
        frontier = nxt - found
        found |= nxt
    return found


def test_pywb_replays_pages_with_their_images_and_css(tmp_path):
    site = start()
    try:
        result = run_crawl(make_job(site, [site.url("www.example-a.test", "/")]), tmp_path / "job")
        served = {(r.host, r.path): r.sha1 for r in site.requests}
        port = site.port
    finally:
        site.stop()  # from now on, only the archive can answer
    coll = tmp_path / "pywb"
    coll.mkdir()
    our_cdx(result.out / "warcs" / "7-metadata-1.warc.gz", coll / "index.cdx")
    (coll / "config.yaml").write_text(
        "collections:\n"
        "  hf:\n"
        f"    index: {coll / 'index.cdx'}\n"
        f"    archive_paths: {result.out / 'warcs'}/\n"
    )
    wport = free_port()
    proc = subprocess.Popen(
        [str(oracle("wayback")), "-p", str(wport), "-b", "127.0.0.1"],
        cwd=coll,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{wport}/hf"
        deadline = time.time() + 40
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", wport), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        fields = result.log_fields()
        front = f"http://www.example-a.test:{port}/"
        deep = f"http://www.example-a.test:{port}/section/sub/deep.html"
        for page in (front, deep):
            status, body = get(f"{base}/2030mp_/{page}")  # rewritten, no frame
            assert status == 200, (page, body[:300])
            assert b"<h1>" in body
            resources = embedded(fields, page)
            assert any(u.endswith(".png") for u in resources)
            assert any(u.endswith(".css") for u in resources)
            for url in resources:
                status, data = get(f"{base}/2030id_/{url}")
                assert status == 200, url
                host, path = url.split("/", 3)[2].split(":")[0], "/" + url.split("/", 3)[3]
                assert hashlib.sha1(data).hexdigest() == served[(host, path)], url
        assert len(embedded(fields, front)) >= 12
    finally:
        proc.terminate()
        proc.wait(timeout=10)
