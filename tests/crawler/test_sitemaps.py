"""crawler.sitemaps on its own: which responses are read as sitemaps, gzip, text, limits."""

from __future__ import annotations

import gzip

import pytest

from crawler.sitemaps import (
    INDEX_CONTEXT,
    MAX_INDEX_DEPTH,
    URL_CONTEXT,
    SitemapError,
    inflate,
    links_of_response,
    parse_sitemap,
)

URLSET = b"""<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>http://h/a</loc></url><url><loc> /b </loc></url></urlset>"""
INDEX = b"""<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://h/s1.xml.gz</loc></sitemap></sitemapindex>"""


def test_urlset_index_and_relative_locations():
    assert parse_sitemap(URLSET, "http://h/sitemap.xml", 1, 10_000) == [
        ("http://h/a", "M", URL_CONTEXT),
        ("http://h/b", "M", URL_CONTEXT),
    ]
    assert parse_sitemap(INDEX, "http://h/sitemap.xml", 1, 10_000) == [
        ("http://h/s1.xml.gz", "M", INDEX_CONTEXT)
    ]
    assert parse_sitemap(INDEX, "http://h/x.xml", MAX_INDEX_DEPTH, 10_000) == []


def test_gzip_text_and_limits():
    assert (
        parse_sitemap(gzip.compress(URLSET), "http://h/s.xml.gz", 1, 10_000)[0][0] == "http://h/a"
    )
    assert parse_sitemap(b"http://h/t1\nftp://x/\nhttps://h/t2\n", "http://h/s.txt", 1, 100) == [
        ("http://h/t1", "M", URL_CONTEXT),
        ("https://h/t2", "M", URL_CONTEXT),
    ]
    bom = b"\xef\xbb\xbf" + URLSET
    assert [u for u, _, _ in parse_sitemap(bom, "http://h/s.xml", 1, 10_000)] == [
        "http://h/a",
        "http://h/b",
    ]
    with pytest.raises(SitemapError, match="inflates past"):
        inflate(gzip.compress(b" " * 5000), 1000)
    with pytest.raises(SitemapError, match="not a sitemap"):
        parse_sitemap(b"<html><body>404</body></html>", "http://h/sitemap.xml", 1, 10_000)


def test_only_responses_queued_as_sitemaps_are_read():
    """An XML page found by a link (a feed, say) is archived, not read for URLs."""
    assert links_of_response(URLSET, "http://h/feed.xml", {"context": "a/@href"}, 10_000) == []
    found = links_of_response(
        URLSET, "http://h/sitemap.xml", {"context": "sitemap", "hops": "M"}, 10_000
    )
    assert [u for u, _, _ in found] == ["http://h/a", "http://h/b"]
