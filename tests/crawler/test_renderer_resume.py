"""Rendered crawls that are interrupted or split: kill -9 during a render resumes without
fetching or capturing anything twice, and a partitioned job renders its seeds and lists the
screenshots in the merged job."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from tests.support import scriptsite
from tests.support.crawl import FAST_TEMPLATE, run_crawl, start_crawl
from tests.support.rawsite import Routes, serve
from tests.support.renderjobs import crawl_scriptsite, warc_records


def test_a_partitioned_job_renders_and_lists_its_screenshots(tmp_path: Path) -> None:
    """With ``processes`` 2 the seed's partition renders it; the merged job's WARCs hold the
    screenshots and its reports list them."""
    result, port, _ = crawl_scriptsite(tmp_path, "parts", "seeds", processes=2)
    seed = f"http://{scriptsite.HOST}:{port}/"
    assert "rendered" in result.line_for(seed)[11]
    report = (result.out / "reports" / "screenshots-report.txt").read_text().splitlines()
    assert report[0].startswith("[page] [kind]")
    assert [ln.split()[:2] for ln in report[1:]] == [[seed, "viewport"], [seed, "full"]]
    uris = {h["WARC-Target-URI"] for kind, h, _ in warc_records(result) if kind == "resource"}
    assert uris == {f"urn:screenshot:{seed}", f"urn:screenshot-full:{seed}"}


def test_kill_during_a_render_resumes_without_duplicate_captures(tmp_path: Path) -> None:
    """kill -9 while a page is being rendered: the browser dies with the crawler; the resumed
    job neither fetches the page again nor loses its crawl.log line (render-interrupted), and
    what the browser had captured is not captured again. The page's metadata record, written
    on resume, cleans its outlinks like every other path: a link holding line separators
    (U+2028, NEL) adds no warc-fields line."""
    import os
    import signal
    import time

    from tests.support.rawsite import Raw

    html = b"Content-Type: text/html"
    page = (
        b'<html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head><body>'
        b'<a href="/next.html">n</a><a href="http://elsewhere.test/a\xe2\x80\xa8b\xc2\x85c">o</a>'
        b"<script>var dot = String.fromCharCode(46), a = new Image();"
        b" a.src = ['', 'first'].join('/') + dot + 'png'; document.body.appendChild(a);"
        b"</script></body></html>"
    )
    routes: Routes = {
        (None, "/"): Raw(page, [html]),
        (None, "/first.png"): Raw(scriptsite.png(2, 2, (1, 1, 1)), [b"Content-Type: image/png"]),
        (None, "/next.html"): Raw(b"<html><body>next</body></html>", [html]),
    }
    out = tmp_path / "killed"
    with serve(routes) as site:
        seed = site.url("kill.test", "/")
        job: dict[str, Any] = {
            "job_id": 3,
            "seeds": [seed],
            # a long dwell: the render is still running when the crawler is killed
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 1,
                "render": "seeds",
                "render_min_wait_s": 60,
                "render_page_timeout_s": 90,
            },
            "resolve": {"kill.test": "127.0.0.1"},
        }
        job_path = tmp_path / "killed-job.json"
        proc = start_crawl(job, job_path, out)
        crawl_log = out / "logs" / "crawl.log"
        deadline = time.time() + 60
        while time.time() < deadline:
            if crawl_log.exists() and "/first.png" in crawl_log.read_text():
                break
            time.sleep(0.2)
        assert "/first.png" in crawl_log.read_text()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        from crawler.rendering.chromium_user import profiles_dir

        profiles = str(profiles_dir(out / "state"))  # in every Chromium's command line
        deadline = time.time() + 15
        while time.time() < deadline:  # the browser dies with the crawler (PDEATHSIG)
            alive = subprocess.run(["pgrep", "-f", profiles], capture_output=True).stdout
            if not alive:
                break
            time.sleep(0.3)
        assert not alive, alive
        job["template"]["render_min_wait_s"] = 0.5
        job_path.write_text(json.dumps(job))
        result = run_crawl(job, out, timeout=120)
        asked = [p for _, p in site.requests]
    assert asked.count("/") == 1 and asked.count("/first.png") == 1, asked
    lines = Counter(f[3] for f in result.log_fields())
    assert lines[seed] == 1 and lines[site.url("kill.test", "/first.png")] == 1, lines
    assert "render-interrupted" in result.line_for(seed)[11].split(",")
    assert result.line_for(site.url("kill.test", "/next.html"))[1] == "200"
    responses = Counter(
        h["WARC-Target-URI"] for kind, h, _ in warc_records(result) if kind == "response"
    )
    assert responses[seed] == 1 and responses[site.url("kill.test", "/first.png")] == 1
    (body,) = [b for kind, h, b in warc_records(result) if kind == "metadata" and _of(h, seed)]
    text = body.decode("utf-8")
    assert len(text.splitlines()) == text.count("\r\n"), text  # no value broke a line
    outlinks = [v for k, _, v in (ln.partition(": ") for ln in text.splitlines()) if k == "outlink"]
    assert "http://elsewhere.test/a%E2%80%A8b%C2%85c L a/@href" in outlinks, outlinks


def _of(headers: dict[str, str], url: str) -> bool:
    """A page's own metadata record (not a screenshot's or a resource's)."""
    return headers.get("WARC-Target-URI") == url and "WARC-Concurrent-To" in headers
