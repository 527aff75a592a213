"""Shared by the rendered-crawl tests (test_renderer, test_renderer_limits,
test_renderer_resume): one way to crawl the script-built site with rendering on, and one way to
read a job's WARC records back, so the three files do not each carry a copy."""

from __future__ import annotations

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from tests.support import scriptsite
from tests.support.crawl import FAST_TEMPLATE, CrawlResult, run_crawl
from tests.support.rawsite import Negotiate, serve

Rendered = tuple[CrawlResult, int, list[tuple[str, str]]]


def crawl_scriptsite(
    tmp_path: Path, name: str, render: str, negotiate: Negotiate | None = None, **template: object
) -> Rendered:
    """Crawl ``scriptsite`` with ``render`` on; the result, the site's port and its requests
    (``negotiate``: the server's content negotiation, e.g. ``scriptsite.compressed``)."""
    with serve(scriptsite.route, negotiate=negotiate) as site:
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
            "resolve": {scriptsite.HOST: "127.0.0.1", scriptsite.CDN_HOST: "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / name, timeout=150)
        return result, site.port, list(site.requests)


def warc_records(result: CrawlResult) -> list:
    """Every record of the job's data WARCs as (type, headers, body)."""
    out = []
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                body = rec.content_stream().read()
                out.append((rec.rec_type, dict(rec.rec_headers.headers), body))
    return out
