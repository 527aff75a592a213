"""Budgets: a domain that hits its limit stops with its NetarchiveSuite stop reason and -5003
lines in crawl.log, while the job's other domains go on to completion."""

from __future__ import annotations

from tests.support.crawl import make_job, run_crawl


def _domain_successes(result, suffix: str) -> list[list[str]]:
    return [
        f
        for f in result.log_fields()
        if int(f[1]) > 0 and f[4] != "P" and f[3].split("/")[2].split(":")[0].endswith(suffix)
    ]


def test_config_object_limit_stops_one_domain_only(site, tmp_path):
    job = make_job(
        site,
        [site.url("www.example-a.test", "/"), site.url("example-b.test", "/")],
        domains=[
            {"domain": "example-a.test", "config_id": 11, "max_objects": 5, "max_bytes": -1},
            {"domain": "example-b.test", "config_id": 12, "max_objects": -1, "max_bytes": -1},
        ],
    )
    result = run_crawl(job, tmp_path / "job")
    domains = result.summary["domains"]
    assert domains["example-a.test"]["stop_reason"] == 5  # CONFIG_OBJECT_LIMIT
    assert domains["example-a.test"]["objects"] == 5
    assert len(_domain_successes(result, "example-a.test")) == 5
    refused = [f for f in result.log_fields() if f[1] == "-5003"]
    assert refused and all(f[11] == "Q:groupMaxFetchSuccesses" for f in refused)
    assert all("example-a.test" in f[3] for f in refused)
    # example-b.test went on: all of its pages, complete
    assert domains["example-b.test"]["stop_reason"] == 0
    assert {site.url("example-b.test", "/news.html"), site.url("example-b.test", "/moved")} <= {
        f[3] for f in _domain_successes(result, "example-b.test")
    }
    assert result.summary["status"] == "complete"


def test_harvest_byte_limit_gives_size_limit(site, tmp_path):
    job = make_job(
        site,
        [site.url("www.example-a.test", "/")],
        domains=[{"domain": "example-a.test", "config_id": 1, "max_bytes": 1_000_000}],
        max_bytes=3000,
    )
    result = run_crawl(job, tmp_path / "job")
    a = result.summary["domains"]["example-a.test"]
    assert a["stop_reason"] == 2  # SIZE_LIMIT: the harvest's limit is the tighter one
    refused = [f for f in result.log_fields() if f[1] == "-5003"]
    assert refused and all(f[11] == "Q:groupMaxAllKb" for f in refused)
    # no fetch started once the bytes reached the limit (in-flight ones may finish)
    assert a["bytes"] < 3000 + 4 * 2500


def test_time_limit_ends_the_job_with_time_limit(site, tmp_path):
    job = make_job(
        site,
        [site.url("www.example-a.test", "/")],
        {"min_delay_ms": 1000, "max_delay_ms": 1000, "delay_factor": 1, "connections_per_host": 1},
        domains=[{"domain": "example-a.test", "config_id": 1}],
        max_running_time_s=3,
    )
    result = run_crawl(job, tmp_path / "job")
    assert result.summary["status"] == "time_limit"
    assert result.summary["domains"]["example-a.test"]["stop_reason"] == 6
    last = (result.out / "logs" / "progress-statistics.log").read_text().splitlines()[-1]
    assert "Timelimit hit" in last and "CRAWL ENDED" not in last


def test_a_host_belongs_to_its_longest_job_domain_else_its_registrable_one():
    from types import SimpleNamespace

    from crawler.budget import Budgets

    def domain(name: str) -> SimpleNamespace:
        return SimpleNamespace(domain=name, config_id=1, max_objects=-1, max_bytes=-1)

    spec = SimpleNamespace(
        domains=[domain("example.fr"), domain("Blog.Example.fr"), domain("other.fr")],
        max_objects=-1,
        max_bytes=-1,
    )
    budgets = Budgets(spec)  # type: ignore[arg-type]
    assert budgets.domain_for("www.example.fr") == "example.fr"
    assert budgets.domain_for("a.BLOG.example.fr") == "blog.example.fr"
    assert budgets.domain_for("blog.example.fr") == "blog.example.fr"
    assert budgets.domain_for("other.fr") == "other.fr"
    # a suffix of a label is not a subdomain
    assert budgets.domain_for("another.fr") == "another.fr"
    assert budgets.domain_for("www.news.co.uk") == "news.co.uk"
