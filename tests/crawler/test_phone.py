"""The phone pass (crawler/rendering/phone.py, template ``render_phone``): a rendered page rendered
a second time as a phone sees it captures what only the phone layout loads — the
``<picture>`` source and the CSS background chosen by ``(max-width: 600px)``, and what a
script loads for a phone's user agent — and keeps both layouts' screenshots; without the
setting none of it is captured (the page is the same, only the viewport and agent differ).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.jobspec import JobSpecError, from_dict
from crawler.rendering.cdp import find_chromium
from crawler.rendering.phone import HEIGHT, RATIO, WIDTH, wants_phone
from tests.support import phonesite
from tests.support.crawl import FAST_TEMPLATE, CrawlResult, run_crawl
from tests.support.rawsite import serve
from tests.support.scriptsite import compressed


def _crawl(out: Path, phone: str) -> tuple[CrawlResult, str, dict[str, bytes], set[str]]:
    """The page crawled with ``--render html`` (media autofetch off: it would fetch the
    phone's ``<picture>`` source in any layout); the result, the page's URL, the screenshot
    records (URI → PNG) and the URLs of the response records."""
    find_chromium()
    with serve(phonesite.route, negotiate=compressed) as site:
        seed = site.url(phonesite.HOST, "/")
        job = {
            "job_id": 31,
            "seeds": [seed],
            "template": {
                **FAST_TEMPLATE,
                "max_hops": 0,
                "render": "html",
                "render_tabs": 1,
                "render_min_wait_s": 0.5,
                "render_page_timeout_s": 25,
                "render_media": False,
                "render_phone": phone,
            },
            "resolve": {phonesite.HOST: "127.0.0.1"},
        }
        result = run_crawl(job, out, timeout=180)
    shots: dict[str, bytes] = {}
    responses: set[str] = set()
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                if rec.rec_type == "resource" and uri.startswith("urn:screenshot"):
                    shots[uri] = rec.content_stream().read()
                elif rec.rec_type == "response":
                    responses.add(uri)
    return result, seed, shots, responses


def _width(png: bytes) -> int:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width: int = struct.unpack(">I", png[16:20])[0]
    return width


def test_phone_pass_captures_what_only_the_phone_layout_loads_and_keeps_both_screenshots(
    tmp_path: Path,
) -> None:
    result, seed, shots, responses = _crawl(tmp_path / "phone", "seeds")
    base = seed[:-1]
    for path in (*phonesite.PHONE_ONLY, *phonesite.DESKTOP_ONLY):
        assert base + path in responses, (path, sorted(responses))
    notes = result.line_for(seed)[11].split(",")
    assert "rendered" in notes and "phone:1" in notes, notes
    # the phone's image: a browser context at the phone's width and pixel ratio
    assert sorted(shots) == sorted(
        f"urn:{kind}:{seed}"
        for kind in ("screenshot", "screenshot-full", "screenshot-phone", "screenshot-phone-full")
    )
    assert _width(shots[f"urn:screenshot:{seed}"]) == 1280
    assert _width(shots[f"urn:screenshot-phone:{seed}"]) == round(WIDTH * RATIO)
    report = (result.out / "reports" / "screenshots-report.txt").read_text().splitlines()
    assert sorted(line.split()[1] for line in report[1:]) == [
        "full",
        "phone",
        "phone-full",
        "viewport",
    ]
    behaviours = (result.out / "reports" / "behaviours-report.txt").read_text()
    assert f"{seed} phone render 1 {WIDTH}x{HEIGHT}" in behaviours
    # one capture per URL: what both layouts load is served back to the phone pass
    lines = [f[3] for f in result.log_fields()]
    assert len(lines) == len(set(lines)), lines


def test_without_the_phone_pass_the_phone_layouts_resources_are_not_captured(
    tmp_path: Path,
) -> None:
    result, seed, shots, responses = _crawl(tmp_path / "desktop", "none")
    base = seed[:-1]
    assert {base + p for p in phonesite.DESKTOP_ONLY} <= responses
    assert not {base + p for p in phonesite.PHONE_ONLY} & responses
    assert sorted(shots) == [f"urn:screenshot-full:{seed}", f"urn:screenshot:{seed}"]
    assert "phone:1" not in result.line_for(seed)[11].split(",")


def test_the_phone_setting_chooses_seeds_or_every_rendered_page_and_refuses_others() -> None:
    assert wants_phone("seeds", {"hops": ""}) and wants_phone("seeds", {"hops": "R"})
    assert not wants_phone("seeds", {"hops": "L"})
    assert wants_phone("all", {"hops": "LL"}) and not wants_phone("none", {"hops": ""})
    spec = {"job_id": 1, "seeds": ["http://a.test/"], "template": {"render_phone": "tablet"}}
    with pytest.raises(JobSpecError, match="render_phone must be none, seeds or all"):
        from_dict(spec)
