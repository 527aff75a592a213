"""Safety: loopback/private addresses are refused unless given explicitly (``resolve``) or
allowed by the template; robots.txt can be ignored by the template."""

from __future__ import annotations

from tests.crawler.conftest import make_job, run_crawl


def test_private_addresses_are_refused_by_default(fresh_site, tmp_path):
    site = fresh_site
    literal = f"http://127.0.0.1:{site.port}/"
    named = f"http://localhost:{site.port}/"
    job = make_job(site, [literal, named], {"allow_private_addresses": False})
    result = run_crawl(job, tmp_path / "job")
    for url in (literal, named):
        line = result.line_for(url)
        assert line[1] == "-5002" and line[11] == "err=address-not-allowed", line
    assert site.requests == []  # nothing reached the server


def test_private_addresses_allowed_by_template(fresh_site, tmp_path):
    site = fresh_site
    named = f"http://localhost:{site.port}/"
    job = make_job(site, [named], {"allow_private_addresses": True})
    result = run_crawl(job, tmp_path / "job")
    assert result.line_for(named)[1] == "404"  # reached: the site has no "localhost" host


def test_explicit_resolve_is_trusted_and_robots_can_be_ignored(fresh_site, tmp_path):
    site = fresh_site
    job = make_job(
        site,
        [site.url("www.example-a.test", "/")],
        {"allow_private_addresses": False, "obey_robots": False, "max_hops": 1},
    )
    result = run_crawl(job, tmp_path / "job")
    secret = site.url("www.example-a.test", "/private/secret.html")
    assert result.line_for(secret)[1] == "200"
    assert not site.served("www.example-a.test", "/robots.txt")
