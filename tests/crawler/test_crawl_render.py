"""Browser-rendered capture (template/CLI ``render``): a page that builds itself with JavaScript
is loaded in headless Chromium whose every request goes through the crawl (recorded as received,
logged with the page as ``via`` and ``browser``), the rendered DOM's links are followed, and
screenshots are kept; without rendering only the shell is captured."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.cdp import find_chromium
from tests.crawler import scriptsite
from tests.crawler.conftest import FAST_TEMPLATE, ORACLE_BIN, CrawlResult, run_crawl
from tests.crawler.rawsite import serve

REPO = Path(__file__).resolve().parents[2]


def _sha1(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()


def _crawl(tmp_path: Path, name: str, render: str, **template: object) -> tuple[CrawlResult, int]:
    with serve(scriptsite.route) as site:
        job = {
            "job_id": 9,
            "harvest_id": 3,
            "seeds": [site.url(scriptsite.HOST, "/")],
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 2,
                "render": render,
                "render_min_wait_s": 1.0,
                "render_page_timeout_s": 20,
                **template,
            },
            "resolve": {scriptsite.HOST: "127.0.0.1"},
        }
        return run_crawl(job, tmp_path / name, timeout=150), site.port


def _records(result: CrawlResult) -> list:
    out = []
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                body = rec.content_stream().read()
                out.append((rec.rec_type, dict(rec.rec_headers.headers), body))
    return out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[CrawlResult, int]:
    find_chromium()  # a clear error if the set-up did not install Chromium
    return _crawl(tmp_path_factory.mktemp("render"), "html", "html")


def test_rendered_crawl_captures_the_script_built_page(rendered: tuple[CrawlResult, int]) -> None:
    result, port = rendered
    seed = f"http://{scriptsite.HOST}:{port}/"
    by_url = {f[3]: f for f in result.log_fields()}
    missing = [p for p in scriptsite.ALL_PATHS if f"{seed[:-1]}{p}" not in by_url]
    assert not missing, missing
    for path in scriptsite.ALL_PATHS:
        line = by_url[f"{seed[:-1]}{path}"]
        assert line[1] == "200", line
    assert "rendered" in by_url[seed][11]
    # what the browser fetched for the home page: logged as browser-fetched, via the page
    for path in (
        "/api/stories-1.json",
        "/api/stories-2.json",
        "/thumbs/1.png",
        "/lazy/b.png",
        "/thumbs/late.png",
        "/img/bg.png",
        "/fonts/site.woff2",
        "/widget.html",
    ):
        line = by_url[f"{seed[:-1]}{path}"]
        assert "browser" in line[11].split(","), line
        assert (line[4], line[5]) == ("E", seed), line
    # story pages exist only in the rendered DOM: navigation links of the home page
    for n in scriptsite.STORIES:
        line = by_url[f"{seed[:-1]}/story/{n}.html"]
        assert (line[4], line[5]) == ("L", seed), line


def test_one_capture_per_url_with_the_servers_bytes(rendered: tuple[CrawlResult, int]) -> None:
    result, port = rendered
    prefix = f"http://{scriptsite.HOST}:{port}"
    responses = [
        (h["WARC-Target-URI"], h, body)
        for kind, h, body in _records(result)
        if kind == "response" and h["WARC-Target-URI"].startswith("http")
    ]
    counts = Counter(uri for uri, _, _ in responses)
    assert [u for u, n in counts.items() if n > 1] == []
    for uri, headers, body in responses:
        path = uri[len(prefix) :]
        if path in scriptsite.ROUTES:
            sent = scriptsite.ROUTES[path].body
            assert body == sent, uri
            assert headers["WARC-Payload-Digest"] == _sha1(sent), uri
    lines = Counter(f[3] for f in result.log_fields() if f[1] == "200")
    assert [u for u, n in lines.items() if n > 1] == []


def test_screenshots_are_resource_records_tied_to_the_page(
    rendered: tuple[CrawlResult, int],
) -> None:
    result, port = rendered
    seed = f"http://{scriptsite.HOST}:{port}/"
    records = _records(result)
    page_id = next(
        h["WARC-Record-ID"]
        for kind, h, _ in records
        if kind == "response" and h["WARC-Target-URI"] == seed
    )
    shots = {
        h["WARC-Target-URI"]: (h, body)
        for kind, h, body in records
        if kind == "resource" and h["WARC-Target-URI"].endswith(seed)
    }
    assert set(shots) == {f"urn:screenshot:{seed}", f"urn:screenshot-full:{seed}"}
    for headers, body in shots.values():
        assert body.startswith(b"\x89PNG\r\n\x1a\n")
        assert headers["Content-Type"] == "image/png"
        assert headers["WARC-Concurrent-To"] == page_id
    report = (result.out / "reports" / "screenshots-report.txt").read_text().splitlines()
    assert any(line.startswith(f"{seed} full urn:screenshot-full:{seed} ") for line in report)


def test_rendered_warcs_pass_warcio_check(rendered: tuple[CrawlResult, int]) -> None:
    result, _ = rendered
    warcio = ORACLE_BIN / "warcio"
    if not warcio.exists():
        warcio = REPO / ".venv" / "bin" / "warcio"
    for warc in result.data_warcs():
        proc = subprocess.run(
            [str(warcio), "check", "-v", str(warc)], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_without_rendering_only_the_shell_is_captured(tmp_path: Path) -> None:
    """``harvestflow crawl --render none`` over a template that renders its seeds by default."""
    out = tmp_path / "none"
    with serve(scriptsite.route) as site:
        seed = site.url(scriptsite.HOST, "/")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "crawler",
                "--seed",
                seed,
                "--out",
                str(out),
                "--template",
                "default_selective",
                "--render",
                "none",
                "--no-politeness",
                "--max-hops",
                "2",
                "--resolve",
                f"{scriptsite.HOST}:127.0.0.1",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        prefix = f"http://{scriptsite.HOST}:{site.port}"
    job = json.loads((out / "job.json").read_text())
    assert job["template"]["render"] == "none"
    fields = [line.split() for line in (out / "logs" / "crawl.log").read_text().splitlines()]
    fetched = {f[3][len(prefix) :] for f in fields if f[1] == "200"}
    assert set(scriptsite.PLAIN_PATHS) <= fetched
    assert not (fetched & (set(scriptsite.ALL_PATHS) - set(scriptsite.PLAIN_PATHS))), fetched
    assert not any("browser" in f[11] or "rendered" in f[11] for f in fields)
    assert not (out / "reports" / "screenshots-report.txt").exists()


def test_cdx_of_rendered_job_equals_cdxj_indexer(
    rendered: tuple[CrawlResult, int], tmp_path: Path
) -> None:
    from tests.crawler.test_crawl_cdx import _bytes_order, _oracle_cdx11
    from tests.crawler.test_replay_pywb import our_cdx

    result, _ = rendered
    cdx_file = tmp_path / "index.cdx"
    our_cdx(result.out / "warcs" / "9-metadata-1.warc.gz", cdx_file)
    ours = cdx_file.read_bytes().decode("utf-8").split("\n")[1:-1]
    expected = _bytes_order(_oracle_cdx11(result.data_warcs()))
    assert [ln for ln in ours if ln not in expected] == []
    assert ours == expected
    assert any("urn:screenshot" in ln for ln in ours)
