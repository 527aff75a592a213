"""Sitemaps when the template asks: /sitemap.xml of each seed is fetched and its URLs followed
(hop M); without the option no sitemap is fetched."""

from __future__ import annotations

from tests.support.crawl import make_job, run_crawl


def test_sitemap_urls_are_followed_when_asked(site, tmp_path):
    seed = site.url("www.example-a.test", "/")
    only = site.url("www.example-a.test", "/sitemap-only.html")
    on = run_crawl(
        make_job(site, [seed], {"extract_sitemaps": True, "max_hops": 2}), tmp_path / "on"
    )
    line = on.line_for(only)
    assert line[1] == "200" and line[4] == "MM"
    sitemap = site.url("www.example-a.test", "/sitemap.xml")
    assert on.line_for(sitemap)[4] == "M"
    assert line[5] == sitemap  # no page links it: only the sitemap led there


def test_sitemaps_are_not_fetched_unless_asked(site, tmp_path):
    seed = site.url("www.example-a.test", "/")
    off = run_crawl(make_job(site, [seed], {"max_hops": 0}), tmp_path / "off")
    assert not any("sitemap" in f[3] for f in off.log_fields())
