"""Sitemaps as Heritrix and the UK Web Archive read them, on a loopback site: robots.txt's
Sitemap: line → sitemap index → gzipped sitemap (application/x-gzip) → a page linked from
nowhere else; nested indexes up to a bound; text sitemaps; a gzip bomb; out-of-scope URLs and
the budget."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest

from tests.support.crawl import make_job, run_crawl
from tests.support.minisite import MiniSite, Reply, Served

HOST = "www.maps.test"
HTML = [("Content-Type", "text/html; charset=utf-8")]
XML = [("Content-Type", "application/xml")]
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _urlset(*urls: str) -> bytes:
    locs = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return f'<?xml version="1.0"?><urlset {NS}>{locs}</urlset>'.encode()


def _index(*urls: str) -> bytes:
    locs = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
    return f'<?xml version="1.0"?><sitemapindex {NS}>{locs}</sitemapindex>'.encode()


def _page(title: str, links: str = "") -> Reply:
    return Reply(200, f"<html><body><h1>{title}</h1>{links}</body></html>".encode(), HTML)


class _Site:
    def __init__(self) -> None:
        self.site = MiniSite(self.handle, (HOST, "www.other.test"))
        self.port = self.site.port

    def u(self, path: str, host: str = HOST) -> str:
        return self.site.url(host, path)

    def handle(self, req: Served) -> Reply | None:
        p = req.path
        if req.host != HOST:
            return _page("outside") if p == "/outside.html" else None
        if p == "/robots.txt":
            body = f"User-agent: *\nDisallow: /private/\nSitemap: {self.u('/maps/index.xml')}\n"
            return Reply(200, body.encode(), [("Content-Type", "text/plain")])
        if p == "/":
            return _page("home", '<a href="/a.html">a</a>')
        if p in ("/a.html", "/hidden.html", "/from-text.html", "/too-deep.html"):
            return _page(p)
        if p.startswith("/page"):
            return _page(p)
        if p == "/maps/index.xml":
            return Reply(
                200,
                _index(self.u("/maps/pages.xml.gz"), "/maps/deep1.xml", "/maps/list.txt"),
                XML,
            )
        if p == "/maps/pages.xml.gz":
            body = _urlset(
                self.u("/hidden.html"), self.u("/a.html"), self.u("/outside.html", "www.other.test")
            )
            return Reply(200, gzip.compress(body), [("Content-Type", "application/x-gzip")])
        if p == "/maps/list.txt":
            body = f"{self.u('/from-text.html')}\n\n  not a url\n".encode()
            return Reply(200, body, [("Content-Type", "text/plain")])
        if p == "/maps/deep1.xml":
            return Reply(200, _index("/maps/deep2.xml", "/maps/bomb.xml.gz"), XML)
        if p == "/maps/deep2.xml":  # third level: an index here is not followed
            return Reply(200, _index("/maps/deep3.xml"), XML)
        if p == "/maps/deep3.xml":
            return Reply(200, _urlset(self.u("/too-deep.html")), XML)
        if p == "/maps/bomb.xml.gz":
            # 3 MB of blanks before the one location: inflates past the 1 MB limit of the job
            body = _urlset().replace(b"</urlset>", b" " * 3_000_000 + b"</urlset>")
            body = body.replace(
                b"</urlset>", f"<url><loc>{self.u('/bomb.html')}</loc></url></urlset>".encode()
            )
            return Reply(200, gzip.compress(body), [("Content-Type", "application/gzip")])
        if p == "/sitemap.xml":
            return Reply(200, _urlset(*[self.u(f"/page{i}.html") for i in range(20)]), XML)
        return None


@pytest.fixture()
def maps() -> Iterator[_Site]:
    s = _Site()
    yield s
    s.site.stop()


def _job(maps: _Site, template: dict, **extra: object) -> dict:
    return make_job(
        maps.site,
        [maps.u("/")],
        {"extract_sitemaps": True, "max_hops": 10, "max_response_bytes": 1_000_000, **template},
        **extra,
    )


def test_robots_sitemap_index_gzip_text_and_bounds(maps, tmp_path):
    result = run_crawl(_job(maps, {}), tmp_path / "job")
    served = maps.site.paths(HOST)
    hidden = result.line_for(maps.u("/hidden.html"))
    # robots.txt (P) → index (M) → gzipped sitemap (M) → the page (M), via the sitemap
    assert hidden[1] == "200" and hidden[4] == "PMMM", hidden
    assert hidden[5] == maps.u("/maps/pages.xml.gz")
    assert hidden[10] == maps.u("/")  # source tag: the seed of the robots.txt's host
    assert result.line_for(maps.u("/maps/index.xml"))[5] == maps.u("/robots.txt")
    # a text sitemap listed by the index
    assert result.line_for(maps.u("/from-text.html"))[1] == "200"
    # the page linked from the home page keeps its link hop (seen first, not fetched twice)
    assert served.count("/a.html") == 1
    # nesting is bounded: the index at the third level is fetched, not followed
    assert "/maps/deep2.xml" in served and "/maps/deep3.xml" not in served
    assert "/too-deep.html" not in served
    # a sitemap inflating past the limit is archived but not read
    assert "/maps/bomb.xml.gz" in served and "/bomb.html" not in served
    # out of scope: logged as such, never fetched
    outside = result.line_for(maps.u("/outside.html", "www.other.test"))
    assert outside[1] == "-5000" and outside[5] == maps.u("/maps/pages.xml.gz")
    assert maps.site.paths("www.other.test") == []
    assert result.summary["status"] == "complete"


def test_sitemap_urls_respect_the_budget(maps, tmp_path):
    job = _job(
        maps,
        {},
        domains=[{"domain": "maps.test", "config_id": 3, "max_objects": 6, "max_bytes": -1}],
    )
    result = run_crawl(job, tmp_path / "job")
    fetched = [f for f in result.log_fields() if f[1] == "200" and HOST in f[3]]
    counted = [f for f in fetched if not f[3].endswith("/robots.txt")]
    assert len(counted) == 6
    refused = [f for f in result.log_fields() if f[1] == "-5003"]
    assert any(f[4].endswith("M") for f in refused)
    assert result.summary["domains"]["maps.test"]["stop_reason"] == 5


def test_seed_host_sitemap_when_robots_is_ignored(maps, tmp_path):
    """Robots.txt ignored (never fetched): /sitemap.xml of the seed host is read."""
    result = run_crawl(_job(maps, {"obey_robots": False}), tmp_path / "job")
    assert result.line_for(maps.u("/page7.html"))[4] == "MM"
    assert result.line_for(maps.u("/page7.html"))[5] == maps.u("/sitemap.xml")
    assert "/robots.txt" not in maps.site.paths(HOST)


def test_no_sitemap_fetched_when_the_template_says_no(maps, tmp_path):
    run_crawl(_job(maps, {"extract_sitemaps": False}), tmp_path / "job")
    served = maps.site.paths(HOST)
    assert not [p for p in served if "map" in p]
    assert "/hidden.html" not in served
