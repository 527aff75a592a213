"""robots.txt binds every request of a host, also those queued while it was being fetched."""

from __future__ import annotations

from tests.support.crawl import make_job, run_crawl

PAGES = ("/about.html", "/etag.html", "/gzip.html", "/private/secret.html", "/refresh.html")


def test_disallowed_seed_queued_with_others_is_refused(fresh_site, tmp_path) -> None:
    # several seeds on one host wait together for its robots.txt: each must get the parser
    seeds = [fresh_site.url("www.example-a.test", p) for p in PAGES]
    result = run_crawl(
        make_job(fresh_site, seeds, {"max_hops": 0, "connections_per_host": 4}), tmp_path / "out"
    )
    assert fresh_site.served("www.example-a.test", "/private/secret.html") == []
    line = result.line_for(fresh_site.url("www.example-a.test", "/private/secret.html"))
    assert line[1] == "-9998" and "robotExcluded" in line[11]
    for page in PAGES:
        if "private" not in page:
            assert fresh_site.served("www.example-a.test", page), page


def test_ignore_robots_template_fetches_the_disallowed_seed(fresh_site, tmp_path) -> None:
    seeds = [fresh_site.url("www.example-a.test", p) for p in PAGES]
    run_crawl(make_job(fresh_site, seeds, {"max_hops": 0, "obey_robots": False}), tmp_path / "out")
    assert fresh_site.served("www.example-a.test", "/private/secret.html")
