"""Full text of a real crawl: the crawler's WARCs of the sample site (gzip-encoded and chunked
responses among them), extracted by the chain's text module and found by the search backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.demo.samplesite import SampleSite, start
from indexing.fulltext import FileMeta, extract_warc
from search.backends import get_backend
from search.query import parse_query
from tests.support.crawl import make_job, run_crawl

pytestmark = pytest.mark.services


@pytest.fixture
def site() -> Iterator[SampleSite]:
    running = start()
    yield running
    running.stop()


def test_sample_site_pages_are_found_by_their_words(
    site: SampleSite, db_engine: sa.Engine, tmp_path: Path
) -> None:
    seed = site.url("www.example-a.test", "/")
    crawl = run_crawl(make_job(site, [seed], {"max_hops": 3}), tmp_path / "job")
    backend = get_backend()
    for warc in crawl.data_warcs():
        state = extract_warc(warc, FileMeta(warc.name), backend)
        assert state.failed == 0, state.errors
    deep = site.url("www.example-a.test", "/section/sub/deep.html")
    hits = backend.search(parse_query('"three clicks"')).hits
    assert [(h.url, h.title) for h in hits] == [(deep, "Deep page")]
    front = backend.search(parse_query("bundled loopback")).hits
    assert [h.title for h in front] == ["Example A — front page"]
    # a page the server sent gzip-encoded and one sent in chunks: decoded before extraction
    gz = backend.search(parse_query('"link only found inside the gzip body"')).hits
    assert [h.url for h in gz] == [site.url("www.example-a.test", "/gzip.html")]
    chunked = backend.search(parse_query('"several chunks"')).hits
    assert [h.title for h in chunked] == ["Chunked page"]
    assert "[chunks]" in chunked[0].snippet_text()
    domains = dict(backend.search(parse_query("")).facets["domain"])
    assert "example-a.test" in domains
