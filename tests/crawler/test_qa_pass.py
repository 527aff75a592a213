"""The capture-vs-replay QA pass of rendered pages, on a real crawl of the QA fixture site
(tests/support/qasite.py): scores, missing URLs, the patch fetched in the same job, the second
check, and a crawler killed during a pass."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support import qasite
from tests.support.crawl import FAST_TEMPLATE, ORACLE_BIN, CrawlResult, run_crawl, start_crawl
from tests.support.rawsite import serve
from tests.support.renderjobs import warc_records
from tests.support.scriptsite import compressed

MIN_SCORE = 80.0


def _job(site_url: str, **template: Any) -> dict[str, Any]:
    return {
        "job_id": 30,
        "harvest_id": 4,
        "seeds": [site_url],
        "template": {
            **FAST_TEMPLATE,
            "max_hops": 1,
            "render": "html",
            "render_tabs": 2,
            "render_min_wait_s": 0.3,
            "render_page_timeout_s": 30,  # a loaded test machine starts Chromium slowly
            "render_consent": "none",
            "qa": True,
            "qa_patch": True,
            "qa_min_score": MIN_SCORE,
            **template,
        },
        "resolve": {qasite.HOST: "127.0.0.1"},
    }


def _report(result: CrawlResult, name: str) -> list[list[str]]:
    lines = (result.out / "reports" / name).read_text().splitlines()
    assert lines[0].startswith("[page] [check]")
    return [line.split() for line in lines[1:]]


def _checks(result: CrawlResult) -> dict[tuple[str, int], list[str]]:
    """(page path, check) → its qa-report.txt fields."""
    out = {}
    for f in _report(result, "qa-report.txt"):
        path = _path(f[0])
        assert (path, int(f[1])) not in out, f"{path} check {f[1]} reported twice"
        out[(path, int(f[1]))] = f
    return out


def _path(url: str) -> str:
    return "/" + url.split("/", 3)[3]


def _missing(result: CrawlResult) -> dict[tuple[str, int], list[tuple[str, str]]]:
    """(page path, check) → [(URL path, what)] of qa-missing-report.txt."""
    out: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for f in _report(result, "qa-missing-report.txt"):
        out.setdefault((_path(f[0]), int(f[1])), []).append((_path(f[2]), f[3]))
    return out


@pytest.fixture(scope="module")
def qa_crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[CrawlResult, qasite.QaSite, int]:
    """One crawl of the QA site, every page rendered and checked: the result, the site, its
    port."""
    site = qasite.QaSite()
    with serve(site.route, negotiate=compressed) as server:
        out = tmp_path_factory.mktemp("qa") / "job"
        result = run_crawl(_job(server.url(qasite.HOST, "/")), out, timeout=300)
        return result, site, server.port


def test_perfect_pages_score_above_the_threshold_with_nothing_missing(qa_crawl: Any) -> None:
    result, _, _ = qa_crawl
    checks = _checks(result)
    missing = _missing(result)
    for path in ("/", "/perfect.html"):
        f = checks[(path, 1)]
        assert float(f[2]) >= MIN_SCORE, f
        assert f[6] == "0" and f[7] == "0", f  # nothing missing, no new JS error
        assert float(f[3]) < 0.01 and float(f[4]) > 0.99, f  # pixels and text alike
        assert (path, 1) not in missing
        assert (path, 2) not in checks  # nothing to patch: checked once


def test_a_tabs_replays_share_one_browser_context(qa_crawl: Any) -> None:
    # one replay context per tab browser, not one per replayed page (a renderer process
    # started for each: most of the QA pass's browser CPU, bench/render_qa)
    result, _, _ = qa_crawl
    log = (result.out / "logs" / "crawler.log").read_text()
    browsers = log.count("browser started (pid")
    contexts = log.count("QA replay context opened in the browser of pid")
    checks = _checks(result)
    assert 1 <= contexts <= browsers < len(checks), (contexts, browsers, len(checks))


def test_replay_answers_are_never_kept_by_the_browser() -> None:
    from types import SimpleNamespace

    from crawler.rendering.proxy import ProxyRequest, ProxyResponse
    from crawler.rendering.qa_pass import ReplayProxy

    recorded = ProxyResponse(
        200,
        [("Content-Type", "image/png"), ("Cache-Control", "max-age=86400"), ("ETag", '"x"')],
        b"png",
    )
    records = SimpleNamespace(response=lambda key: recorded)
    renderer = SimpleNamespace(
        ca=SimpleNamespace(server_context=None), captures=SimpleNamespace(records=records)
    )
    proxy = ReplayProxy(renderer)  # type: ignore[arg-type]
    got = asyncio.run(proxy.handle(ProxyRequest("GET", "http://s.test/a.png", [], b"")))
    assert (got.status, got.body) == (200, b"png")
    caching = [(k, v) for k, v in got.headers if k.lower() in ("cache-control", "etag")]
    assert caching == [("Cache-Control", "no-store")]


def test_what_the_last_page_asks_before_the_next_pages_document_is_not_counted() -> None:
    # the replay's page is left between replays (stilled, crawler/rendering/tabpage.py): a
    # request it still makes before the next page's own document is not the next page's
    from types import SimpleNamespace

    from crawler.rendering.proxy import ProxyRequest
    from crawler.rendering.qa_pass import ReplayProxy
    from harvestflow.formats.urls import canonical_key

    records = SimpleNamespace(response=lambda key: None)  # nothing archived
    renderer = SimpleNamespace(
        ca=SimpleNamespace(server_context=None), captures=SimpleNamespace(records=records)
    )
    proxy = ReplayProxy(renderer)  # type: ignore[arg-type]
    stale, page, own = "http://s.test/poll?n=9", "http://s.test/next.html", "http://s.test/a.png"
    proxy.reset(canonical_key(page))

    async def ask(*urls: str) -> list[int]:
        return [(await proxy.handle(ProxyRequest("GET", u, [], b""))).status for u in urls]

    assert asyncio.run(ask(stale, page, own, stale)) == [404] * 4
    assert list(proxy.asked.values()) == [page, own, stale]  # the stale one once asked after
    assert list(proxy.missing.values()) == [page, own, stale]


def test_the_image_only_a_script_asks_for_is_found_patched_and_the_score_rises(
    qa_crawl: Any,
) -> None:
    """The capture's fetch of /img/flaky.png failed (the server dropped it): the replay misses
    it, the patch fetches it in the same job (crawl.log: qa-patch), the second check is whole."""
    result, site, port = qa_crawl
    checks, missing = _checks(result), _missing(result)
    first, second = checks[("/scripted.html", 1)], checks[("/scripted.html", 2)]
    assert float(first[2]) < MIN_SCORE, first
    assert missing[("/scripted.html", 1)] == [
        ("/img/flaky.png", "missing"),
        ("/img/flaky.png", "patched:200"),
    ]
    assert float(second[2]) >= MIN_SCORE > float(first[2]), (first, second)
    assert second[6] == "0" and second[8] == "1", second  # nothing missing; 1 URL patched
    assert ("/scripted.html", 2) not in missing
    flaky = f"http://{qasite.HOST}:{port}/img/flaky.png"
    lines = [f for f in result.log_fields() if f[3] == flaky]
    assert [f[1] for f in lines][-1] == "200" and "qa-patch" in lines[-1][11], lines
    assert site.flaky_asked == qasite.FLAKY_DROPS + 1  # the capture's two tries, the patch
    responses = Counter(
        h["WARC-Target-URI"] for kind, h, _ in warc_records(result) if kind == "response"
    )
    assert responses[flaky] == 1


def test_a_check_compares_the_viewports_at_the_top_not_the_full_pages(qa_crawl: Any) -> None:
    """The shots a check compares are the capture's viewport screenshot (the one the archive
    keeps) and the replay's, at the top after the same scroll, not the full pages: the
    archive's full-page screenshot of /scripted.html is taller than its viewport."""
    from PIL import Image

    result, _, port = qa_crawl
    page = f"http://{qasite.HOST}:{port}/scripted.html"
    kept = {
        h["WARC-Target-URI"]: body for kind, h, body in warc_records(result) if kind == "resource"
    }
    viewport, full = kept[f"urn:screenshot:{page}"], kept[f"urn:screenshot-full:{page}"]
    size = Image.open(io.BytesIO(viewport)).size
    assert Image.open(io.BytesIO(full)).height > 1.5 * size[1]  # the spacer: below the fold
    capture, replay = _checks(result)[("/scripted.html", 1)][10].split(",")
    shots = result.out / "reports" / "qa-shots"
    assert (shots / capture).read_bytes() == viewport
    assert Image.open(shots / replay).size == size


def test_a_url_the_server_refuses_after_its_first_answer_stays_missing(qa_crawl: Any) -> None:
    result, site, _ = qa_crawl
    checks, missing = _checks(result), _missing(result)
    f = checks[("/once.html", 1)]
    assert float(f[2]) < MIN_SCORE and f[6] == "1", f
    (url, what), (patched_url, patched) = missing[("/once.html", 1)]
    assert url.startswith("/img/once.png?token=") and what == "missing", missing
    # the patch's fetch of the replay's token: refused by the server
    assert (patched_url, patched) == (url, "not-patched:403")
    assert site.once_asked == 2  # the capture's token, then the patch's
    assert ("/once.html", 2) not in checks  # nothing patched: not checked again


def test_a_page_whose_replay_breaks_by_script_scores_below_with_a_new_js_error(
    qa_crawl: Any,
) -> None:
    result, _, _ = qa_crawl
    checks = _checks(result)
    last = checks.get(("/broken.html", 2)) or checks[("/broken.html", 1)]
    assert float(last[2]) < MIN_SCORE, last
    assert int(last[7]) >= 1, last  # "feed unavailable": thrown only in replay
    assert float(last[4]) < 0.5 and float(last[3]) > 0.05, last  # emptied: text and pixels
    assert next(u for u, w in _missing(result)[("/broken.html", 1)] if w == "missing").startswith(
        "/api/feed.json?ts="
    )


def test_the_qa_patch_records_pass_warcio_check(qa_crawl: Any) -> None:
    result, _, _ = qa_crawl
    for warc in result.data_warcs():
        proc = subprocess.run(
            [str(ORACLE_BIN / "warcio"), "check", str(warc)], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_kill_during_a_qa_pass_resumes_and_finishes_it_without_a_second_capture(
    tmp_path: Path,
) -> None:
    """kill -9 while the seed's QA pass replays it: the resumed job finishes the pass (its
    report line) and fetches and captures nothing a second time."""
    site = qasite.QaSite()
    out = tmp_path / "killed"
    with serve(site.route, negotiate=compressed) as server:
        seed = server.url(qasite.HOST, "/perfect.html")
        # a long dwell: the replay (same behaviours as the capture) is still running when
        # the crawler is killed, just after the capture's screenshot was kept for it
        job = _job(seed, max_hops=0, render_min_wait_s=4, render_page_timeout_s=30)
        job_path = tmp_path / "killed-job.json"
        proc = start_crawl(job, job_path, out)
        shots = out / "reports" / "qa-shots"
        deadline = time.time() + 90
        while time.time() < deadline and not any(shots.glob("*-capture.png")):
            time.sleep(0.1)
        assert any(shots.glob("*-capture.png")), "no QA pass began"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert not (out / "reports" / "qa-report.txt").exists()  # killed during the pass
        job["template"]["render_min_wait_s"] = 0.3
        job_path.write_text(json.dumps(job))
        result = run_crawl(job, out, timeout=240)
        asked = Counter(p for _, p in server.requests)
    assert asked["/perfect.html"] == 1 and asked["/img/blue.png"] == 1, asked
    checks = _checks(result)
    assert list(checks) == [("/perfect.html", 1)]
    assert float(checks[("/perfect.html", 1)][2]) >= MIN_SCORE
    responses = Counter(
        h["WARC-Target-URI"] for kind, h, _ in warc_records(result) if kind == "response"
    )
    assert responses[seed] == 1 and responses[server.url(qasite.HOST, "/img/blue.png")] == 1
    lines = Counter(f[3] for f in result.log_fields())
    assert lines[seed] == 1, lines


def _crawl_scripted(tmp_path: Path, **template: Any) -> tuple[CrawlResult, qasite.QaSite, int]:
    site = qasite.QaSite()
    with serve(site.route, negotiate=compressed) as server:
        # no script extraction: the page alone (its scripts' strings hold "/")
        job = _job(server.url(qasite.HOST, "/scripted.html"), max_hops=0, extract_js=False)
        job["template"].update(template)
        return run_crawl(job, tmp_path / "job", timeout=240), site, server.port


def test_a_job_with_qa_off_renders_without_a_qa_pass(tmp_path: Path) -> None:
    result, site, port = _crawl_scripted(tmp_path, qa=False)
    assert "rendered" in result.line_for(f"http://{qasite.HOST}:{port}/scripted.html")[11]
    reports = result.out / "reports"
    assert not (reports / "qa-report.txt").exists() and not (reports / "qa-shots").exists()
    assert site.flaky_asked == qasite.FLAKY_DROPS  # the capture's tries only: nothing patched
    assert not [f for f in result.log_fields() if "qa-patch" in f[11]]


def test_the_qa_time_budget_bounds_a_pages_pass(tmp_path: Path) -> None:
    """A page's QA budget (1 s) spent by its first check (its replay cut at the budget): the
    missing image is still fetched by the patch, the page is not checked again."""
    result, site, _ = _crawl_scripted(tmp_path, qa_page_budget_s=1.0)
    assert list(_checks(result)) == [("/scripted.html", 1)]
    (found, patched) = _missing(result)[("/scripted.html", 1)]
    assert found == ("/img/flaky.png", "missing")
    assert patched in (("/img/flaky.png", "patched:200"), ("/img/flaky.png", "not-patched:timeout"))
    assert site.flaky_asked == qasite.FLAKY_DROPS + 1


def test_a_qa_replay_takes_the_tabs_browser_without_reading_its_memory() -> None:
    # the memory reading walks /proc; each capture takes it, a replay between two does not
    from types import SimpleNamespace

    from crawler.rendering.tab import TabWorker

    readings: list[int] = []

    class Browser:
        alive = True

        async def memory_kb(self) -> int:
            readings.append(1)
            return 1

    t = SimpleNamespace(render_pages_per_tab=50, render_max_memory_mb=1024)
    owner = SimpleNamespace(t=t, ca=SimpleNamespace(server_context=None), profiles=Path("/x"))
    tab = TabWorker(owner, 0)  # type: ignore[arg-type]
    browser = Browser()
    tab.browser = browser  # type: ignore[assignment]
    assert asyncio.run(tab.ensure_browser(check_memory=False)) is browser
    assert readings == []
    assert asyncio.run(tab.ensure_browser()) is browser
    assert readings == [1]
