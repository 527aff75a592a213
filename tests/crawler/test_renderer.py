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

from crawler.rendering.cdp import find_chromium
from tests.support import scriptsite
from tests.support.crawl import FAST_TEMPLATE, ORACLE_BIN, REPO, run_crawl
from tests.support.rawsite import Routes, serve
from tests.support.renderjobs import Rendered, crawl_scriptsite, warc_records


def _sha1(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    find_chromium()  # a clear error if the set-up did not install Chromium
    return crawl_scriptsite(tmp_path_factory.mktemp("render"), "html", "html")


def test_rendered_crawl_captures_the_script_built_page(rendered: Rendered) -> None:
    result, port, requests = rendered
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
    # a story page's browser gets the stylesheet the home page captured read back from the
    # WARC, never fetched again: the server was asked once for every URL
    assert [r for r, n in Counter(requests).items() if n > 1] == []
    assert [p for _, p in requests].count("/app.css") == 1
    assert [f[3] for f in result.log_fields()].count(f"{seed[:-1]}/app.css") == 1
    # robots rules hold for the browser: the disallowed tracker is refused, never requested
    tracker = by_url[f"{seed[:-1]}/private/tracker.png"]
    assert (tracker[1], tracker[4], tracker[5]) == ("-9998", "E", seed), tracker
    assert "browser" in tracker[11].split(","), tracker
    assert (scriptsite.HOST, "/private/tracker.png") not in requests
    # another host's image: archived as a transclusion of the page
    cdn = by_url[f"http://{scriptsite.CDN_HOST}:{port}/cdn.png"]
    assert (cdn[1], cdn[4], cdn[5]) == ("200", "E", seed), cdn
    # the progress line counts rendered pages: the home page, the five stories
    progress = [ln for ln in result.proc.stdout.splitlines() if "render: " in ln]
    assert progress and progress[-1].endswith(
        "render: 0 rendering, 0 waiting, 6 rendered, 0 failed"
    )
    # story pages exist only in the rendered DOM: navigation links of the home page
    for n in scriptsite.STORIES:
        line = by_url[f"{seed[:-1]}/story/{n}.html"]
        assert (line[4], line[5]) == ("L", seed), line


def test_one_capture_per_url_with_the_servers_bytes(rendered: Rendered) -> None:
    result, port, _ = rendered
    prefix = f"http://{scriptsite.HOST}:{port}"
    responses = [
        (h["WARC-Target-URI"], h, body)
        for kind, h, body in warc_records(result)
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
    lines = Counter(f[3] for f in result.log_fields())
    assert [u for u, n in lines.items() if n > 1] == []  # one crawl.log line per URL


def test_screenshots_are_resource_records_tied_to_the_page(
    rendered: Rendered,
) -> None:
    result, port, _ = rendered
    seed = f"http://{scriptsite.HOST}:{port}/"
    records = warc_records(result)
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


def test_rendered_warcs_pass_warcio_check(rendered: Rendered) -> None:
    result, _, _ = rendered
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


def test_cdx_of_rendered_job_equals_cdxj_indexer(rendered: Rendered, tmp_path: Path) -> None:
    from tests.support.crawl import _bytes_order, _oracle_cdx11, our_cdx

    result, _, _ = rendered
    cdx_file = tmp_path / "index.cdx"
    our_cdx(result.out / "warcs" / "9-metadata-1.warc.gz", cdx_file)
    ours = cdx_file.read_bytes().decode("utf-8").split("\n")[1:-1]
    expected = _bytes_order(_oracle_cdx11(result.data_warcs()))
    assert [ln for ln in ours if ln not in expected] == []
    assert ours == expected
    assert any("urn:screenshot" in ln for ln in ours)


# run in pywb's top frame: the replayed page is its iframe (same origin: pywb serves both)
_REPLAYED_JS = """(() => {
  const frame = document.querySelector('iframe');
  if (!frame || !frame.contentDocument) return null;
  const w = frame.contentWindow, doc = frame.contentDocument;
  w.scrollBy(0, 600);
  return Array.from(doc.querySelectorAll('#stories li')).map(li => {
    const a = li.querySelector('a'), img = li.querySelector('img');
    return [a.href, a.textContent, img.complete ? img.naturalWidth : 0];
  });
})()"""


async def _replay(url: str) -> list[list[object]]:
    """The home page replayed by pywb in headless Chromium, scrolled to the bottom: its story
    list (href, title, thumbnail decoded width)."""
    import asyncio

    from crawler.rendering.cdp import Browser

    browser = Browser(None)
    await browser.start()
    try:
        session = await browser.open_tab()
        await browser.send("Page.navigate", {"url": url}, session=session)
        stories: list[list[object]] = []
        for _ in range(60):  # at most ~30 s: scroll down, until the five stories are shown
            await asyncio.sleep(0.5)
            value = (
                await browser.send(
                    "Runtime.evaluate",
                    {
                        "expression": _REPLAYED_JS,
                        "returnByValue": True,
                    },
                    session=session,
                )
            )["result"].get("value")
            if value:
                stories = value
                if len(stories) == 5 and all(s[2] for s in stories):
                    break
        return stories
    finally:
        await browser.close()


@pytest.mark.skipif(not (ORACLE_BIN / "wayback").exists(), reason="pywb oracle venv missing")
def test_pywb_replay_in_chromium_shows_every_story(rendered: Rendered, tmp_path: Path) -> None:
    """The archive alone (the site is stopped) replays the script-built page: every story link
    and its decoded thumbnail, the second page and the late story included."""
    import asyncio
    import socket
    import time

    from tests.support.crawl import our_cdx
    from tests.support.environment import free_port

    result, port, _ = rendered
    coll = tmp_path / "pywb"
    coll.mkdir()
    our_cdx(result.out / "warcs" / "9-metadata-1.warc.gz", coll / "index.cdx")
    (coll / "config.yaml").write_text(
        f"collections:\n  hf:\n    index: {coll / 'index.cdx'}\n"
        f"    archive_paths: {result.out / 'warcs'}/\n"
    )
    wport = free_port()
    proc = subprocess.Popen(
        [str(ORACLE_BIN / "wayback"), "-p", str(wport), "-b", "127.0.0.1"],
        cwd=coll,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 40
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", wport), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        seed = f"http://{scriptsite.HOST}:{port}/"
        stories = asyncio.run(_replay(f"http://127.0.0.1:{wport}/hf/2030mp_/{seed}"))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    # each link to its story, as captured (wombat may show it rewritten to the replay URL)
    origin = f"http://{scriptsite.HOST}:{port}"
    paths = sorted(str(s[0]).rsplit(origin, 1)[-1] for s in stories)
    assert paths == sorted(f"/story/{n}.html" for n in scriptsite.STORIES), stories
    assert all(s[2] == 40 for s in stories), stories  # every thumbnail decoded (40 px wide)


def test_an_https_page_is_rendered_through_the_proxy(tmp_path: Path) -> None:
    """HTTPS: the browser's CONNECT tunnel ends at the proxy (the job's CA), and what the page
    asks for inside it is fetched and archived through the crawl as https:// URLs."""
    import ssl

    from crawler.rendering.tls import JobCA
    from tests.support.rawsite import Raw

    chain, key = JobCA(tmp_path / "site-ca", "test site").issue("secure.test")
    pem = tmp_path / "site.pem"
    pem.write_bytes(chain + key)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(pem)
    html = b"Content-Type: text/html"
    shell = (
        b"<html><body><div id='app'></div><script>"
        b"fetch(['', 'api', 'x'].join('/') + '.json').then(r => r.json()).then(d => {"
        b" const a = document.createElement('a'); a.href = d.href; a.textContent = 'story';"
        b" document.body.appendChild(a); const i = new Image(); i.src = d.img;"
        b" document.body.appendChild(i); });</script></body></html>"
    )
    routes: Routes = {
        (None, "/"): Raw(shell, [html]),
        (None, "/api/x.json"): Raw(
            b'{"href": "/secure-story.html", "img": "/pic.png"}',
            [b"Content-Type: application/json"],
        ),
        (None, "/secure-story.html"): Raw(b"<html><body>story</body></html>", [html]),
        (None, "/pic.png"): Raw(scriptsite.png(4, 4, (9, 9, 9)), [b"Content-Type: image/png"]),
    }
    with serve(routes, tls) as site:
        seed = f"https://secure.test:{site.port}/"
        job = {
            "job_id": 6,
            "seeds": [seed],
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 1,
                "render": "seeds",
                "extract_js": False,
                "render_min_wait_s": 0.5,
            },
            "resolve": {"secure.test": "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / "https", timeout=120)
    assert "rendered" in result.line_for(seed)[11]
    for path in ("/api/x.json", "/pic.png"):
        line = result.line_for(f"{seed[:-1]}{path}")
        assert (line[1], line[4], line[5]) == ("200", "E", seed), line
        assert "browser" in line[11].split(","), line
    story = result.line_for(f"{seed[:-1]}/secure-story.html")
    assert (story[1], story[4]) == ("200", "L"), story
    uris = {h["WARC-Target-URI"] for kind, h, _ in warc_records(result) if kind == "request"}
    assert f"{seed[:-1]}/api/x.json" in uris


def test_a_queued_url_the_browser_asks_for_is_captured_once(tmp_path: Path) -> None:
    """One capture per URL: a URL found earlier and waiting in the host's politeness queue is
    fetched for the browser through the crawl (its capture, annotated ``browser``), and the
    queued request is dropped when its turn comes — the server is asked once."""
    import threading

    from tests.support.rawsite import Raw

    html = [b"Content-Type: text/html"]
    text = [b"Content-Type: text/plain"]
    pages = {
        # the first seed links a slow page, then the image: the plain crawler queues both
        # (hop L) on the host, the image behind the slow page
        # (no favicon request: it would wait in the same politeness queue)
        "/": Raw(
            b'<html><head><link rel="icon" href="data:,"></head>'
            b'<body><a href="/slow">s</a> <a href="/x.png">x</a></body></html>',
            html,
        ),
        # the second seed's script pings another host, then loads the image
        "/two.html": Raw(
            b'<html><head><link rel="icon" href="data:,"></head>'
            b"<body><script>var p = new Image(); p.onload = p.onerror = function () {"
            b" var i = new Image(); i.src = ['', 'x'].join('/') + '.png';"
            b" document.body.appendChild(i); };"
            b" p.src = ['http:', '', 'ping.test:' + location.port, 'ping'].join('/');"
            b"</script></body></html>",
            html,
        ),
        "/x.png": Raw(scriptsite.png(2, 2, (7, 7, 7)), [b"Content-Type: image/png"]),
    }
    # The slow page holds the host's one connection until the second seed's browser has
    # pinged: the image's turn (a politeness delay after the slow page's end) then always
    # comes after the browser asked for it, however long the browser's restart and the page
    # load take on a loaded machine (a fixed 12-s delay was sometimes too short).
    pinged = threading.Event()

    def route(host: str, path: str) -> Raw | None:
        if path == "/slow":
            pinged.wait(60)
            return Raw(b"slow", text)
        if path == "/ping":
            pinged.set()
            return Raw(b"pong", text)
        return pages.get(path)

    with serve(route) as site:
        seeds = [site.url("queue.test", "/"), site.url("queue.test", "/two.html")]
        job = {
            "job_id": 4,
            "seeds": seeds,
            "template": {
                **FAST_TEMPLATE,
                # one fetch at a time per host, 3 s apart: /x.png waits in the host's queue
                # behind /slow while /two.html is rendered
                "min_delay_ms": 3000,
                "max_delay_ms": 3000,
                "connections_per_host": 1,
                "download_timeout_s": 90,  # /slow answers within 60 s
                "obey_robots": False,  # no robots.txt first: the ping goes at once
                "max_hops": 1,
                "render": "seeds",
                "render_min_wait_s": 1.5,
                "extract_js": False,
                # one tab whose browser is restarted after each page (render_pages_per_tab)
                "render_tabs": 1,
                "render_pages_per_tab": 1,
            },
            "resolve": {"queue.test": "127.0.0.1", "ping.test": "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / "queued", timeout=150)
        asked = [p for _, p in site.requests if p == "/x.png"]
    image = site.url("queue.test", "/x.png")
    lines = [f for f in result.log_fields() if f[3] == image]
    assert len(lines) == 1 and lines[0][1] == "200", lines
    assert "browser" in lines[0][11].split(","), lines
    assert asked == ["/x.png"]
    records = [
        h
        for kind, h, _ in warc_records(result)
        if kind == "response" and h["WARC-Target-URI"] == image
    ]
    assert len(records) == 1
    log_text = (result.out / "logs" / "crawler.log").read_text()
    assert log_text.count("render tab 0: browser started") == 2
    assert "render tab 0: restarting its browser (1 pages)" in log_text
