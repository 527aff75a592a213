"""bench/run render_qa's output check (bench/render_qa/spec.py) on crawl outputs written here:
each side is held to the site's routes, so a render that misses what a behaviour loads fails
the run naming the URLs, whichever side it is.

Why: the check compared the two crawls with each other only, by a hash; when the plain render
missed page 10's "Load more" URLs the run said 179 lines against 176 and nothing
more, and two sides missing the same URLs would have passed.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.render.jssite import routes
from bench.render_qa.spec import HOST, RenderQaBenchmark
from bench.runner.core import _difference
from bench.runner.spec import Side

BASE = f"http://{HOST}:8000"  # one page: 13 URLs with /app.js and /app.css
FAVICON = f"{BASE}/favicon.ico"  # the browser's own request: the site has none


def _bench() -> RenderQaBenchmark:
    bench = RenderQaBenchmark()
    bench.pages = 1
    bench.site_urls = frozenset(BASE + path for path in routes(1))
    return bench


def _crawl(out: Path, qa: bool, left_out: tuple[str, ...] = (), notes: str = "rendered") -> Path:
    """A crawl's job folder as the crawler writes it: summary, crawl.log, the QA report."""
    job = out / "job"
    (job / "logs").mkdir(parents=True)
    (job / "reports").mkdir()
    (job / "summary.json").write_text(json.dumps({"status": "complete"}))
    page = f"{BASE}/p/0.html"
    lines = []
    for path in routes(1):
        url = BASE + path
        if path in left_out:
            continue
        note, via = (notes, "-") if url == page else ("browser", page)
        lines.append(
            f"2026-11-30T09:23:12.416Z 200 116 {url} E {via} text/html #000"
            f" 20261130092312403+4 sha1:NQWNVVBB27PQE7XJL3BYI6JDI6LHW3I5 {page} {note}"
        )
    lines.append(
        f"2026-11-30T09:23:12.416Z 404 10 {FAVICON} E {page} text/plain #000"
        f" 20261130092312403+4 sha1:NQWNVVBB27PQE7XJL3BYI6JDI6LHW3I5 {page} browser"
    )
    (job / "logs" / "crawl.log").write_text("\n".join(lines) + "\n")
    if qa:
        head = "[page] [check] [score]"
        (job / "reports" / "qa-report.txt").write_text(f"{head}\n{page} 1 100.0\n")
    return out


def test_two_complete_crawls_pass_with_the_browsers_favicon_compared(tmp_path: Path) -> None:
    bench = _bench()
    ours = bench.figures(Side("ours", [], 2, ""), _crawl(tmp_path / "ours", qa=True))
    peer = bench.figures(Side("peer", [], 2, ""), _crawl(tmp_path / "peer", qa=False))
    assert ours == peer
    assert ours["outside the site"] == [f"404 {FAVICON}"]
    assert bench.problems(ours) == []


def test_a_render_missing_what_load_more_loads_fails_naming_the_urls(tmp_path: Path) -> None:
    bench = _bench()
    missed = ("/api/0-extra.json", "/thumbs/0-extra0.png", "/thumbs/0-extra1.png")
    ours = bench.figures(Side("ours", [], 2, ""), _crawl(tmp_path / "ours", qa=True))
    cut = _crawl(tmp_path / "peer", qa=False, left_out=missed, notes="rendered,left-page")
    peer = bench.figures(Side("peer", [], 2, ""), cut)
    difference = _difference({"ours": ours, "peer": peer}, ("ours", "peer"))
    assert f"{BASE}/api/0-extra.json" in difference, difference
    problems = bench.problems(peer)
    assert any("3 of the site's 13 URLs not captured" in p for p in problems), problems
    assert any("left-page" in p for p in problems), problems


def test_both_sides_missing_the_same_urls_fail_against_the_site(tmp_path: Path) -> None:
    bench = _bench()
    missed = ("/lazy/0.png",)
    ours = bench.figures(Side("ours", [], 2, ""), _crawl(tmp_path / "ours", True, missed))
    peer = bench.figures(Side("peer", [], 2, ""), _crawl(tmp_path / "peer", False, missed))
    assert ours == peer
    assert bench.problems(ours) == [f"1 of the site's 13 URLs not captured: ['{BASE}/lazy/0.png']"]
