"""Deep HTML still yields its links, and the crawl.log line says how they were found.

libxml2 stops building the tree at 2,048 levels of nesting: before the fix, a page nested
10,000 deep gave the links before the nest only, and nothing said so. Pages of 10,000 and
100,000 levels from the hostile loopback server, with links before, inside and after the nest
(a link, an embed, a stylesheet, a srcset): every one is crawled, and the page's line carries
``extractScan``.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.crawl import FAST_TEMPLATE, run_crawl
from tests.support.hostile import HOST, hostile_server, response

TARGETS = ["before", "inside", "inside-img", "after", "after-css", "after-srcset"]


def deep_page(depth: int, tag: str) -> bytes:
    head = f'<html><head></head><body><a href="/{tag}/before">b</a>'
    nest = "<div><span>" * (depth // 2)
    inner = f'<a href="/{tag}/inside">i</a><img src="/{tag}/inside-img">'
    close = "</span></div>" * (depth // 2)
    tail = (
        f'<p><a href="/{tag}/after">a</a><link rel="stylesheet" href="/{tag}/after-css">'
        f'<img srcset="/{tag}/after-srcset 2x"></p></body></html>'
    )
    return (head + nest + inner + close + tail).encode()


def test_links_before_inside_and_after_a_deep_nest_are_crawled(tmp_path: Path) -> None:
    with hostile_server() as srv:
        srv.routes["/"] = response(b'<a href="/deep10k">x</a><a href="/deep100k">y</a>')
        srv.routes["/deep10k"] = response(deep_page(10_000, "d10k"))
        srv.routes["/deep100k"] = response(deep_page(100_000, "d100k"))
        for tag in ("d10k", "d100k"):
            for name in TARGETS:
                srv.routes[f"/{tag}/{name}"] = response(b"ok", content_type=b"text/plain")
        job = {
            "job_id": 26,
            "harvest_id": 2,
            "seeds": [srv.url("/")],
            "template": {**FAST_TEMPLATE, "max_hops": 3},
            "resolve": {HOST: "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / "job", timeout=90)
        served = set(srv.requests)
    fields = {f[3]: f for f in result.log_fields()}
    for tag in ("d10k", "d100k"):
        missing = [n for n in TARGETS if f"/{tag}/{n}" not in served]
        assert not missing, (tag, missing)
        page = fields[srv.url(f"/{tag.replace('d', 'deep')}")]
        assert page[1] == "200" and "extractScan" in page[11].split(","), page
    assert "extractScan" not in fields[srv.url("/")][11]  # a shallow page: the tree parse
