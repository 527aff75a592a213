"""Redirect discovery against the sample website's hosts (loopback, no DNS for HTTP)."""

from __future__ import annotations

import http.server
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.demo import samplesite
from harvest.preload.dnstask import dns_check_chunk
from harvest.preload.redirects import probe_redirects, target_of
from harvest.preload.sources import collect_sources
from harvest.preload.transfer import transfer
from tests.support.dnsserver import ZoneServer


@pytest.fixture
def site() -> Iterator[samplesite.SampleSite]:
    running = samplesite.start()
    try:
        yield running
    finally:
        running.stop()


def test_cross_domain_redirects_add_domains_which_are_dns_checked(
    db_engine: sa.Engine,
    preload_settings,
    run_id: str,
    zone_server: ZoneServer,
    site: samplesite.SampleSite,
    tmp_path: Path,
) -> None:
    zone_server.records.update(
        {"example-b.test": {"A": ["127.0.0.1"]}, "example-a.test": {"A": ["127.0.0.1"]}}
    )
    preload_settings.data["preload"]["http_per_host_delay_s"] = 0.2
    registry = tmp_path / "registry.txt"
    registry.write_text("example-b.test\nnothere.test\n")
    urls = tmp_path / "urls.txt"
    urls.write_text("http://example-b.test/moved\n")
    collected = collect_sources(
        run_id,
        [
            {"name": "registry", "kind": "registry", "path": str(registry)},
            {"name": "urls", "kind": "url_list", "path": str(urls)},
        ],
        settings=preload_settings,
        engine=db_engine,
    )
    for chunk in collected["chunks"]:
        dns_check_chunk(
            run_id, chunk, [zone_server.address], settings=preload_settings, engine=db_engine
        )
    assert len(collected["chunks"]) == 1
    elsewhere = tmp_path / "other-chunk.txt"
    elsewhere.write_text("nothere.test\n")
    nothing = probe_redirects(
        run_id, str(elsewhere), settings=preload_settings, engine=db_engine,
        connect_to=f"127.0.0.1:{site.port}", nameservers=[zone_server.address],
    )  # fmt: skip
    assert nothing["probed"] == 0 and not site.requests  # only the chunk's active domains
    result = probe_redirects(
        run_id,
        collected["chunks"][0],
        settings=preload_settings,
        engine=db_engine,
        connect_to=f"127.0.0.1:{site.port}",
        nameservers=[zone_server.address],
    )
    assert result["probed"] == 3  # two seeds + the specific URL of the one active domain
    assert result["cross_domain"] == 1 and result["new_domains"] == 1
    with db_engine.connect() as conn:
        probes = {
            url: (status, target)
            for url, status, target in conn.execute(
                sa.text("SELECT url, status, target_domain FROM redirect_checks WHERE run_id = :r"),
                {"r": run_id},
            )
        }
        origin = conn.execute(
            sa.text(
                "SELECT origin FROM domain_origins WHERE run_id = :r AND domain = 'example-a.test'"
            ),
            {"r": run_id},
        ).scalar()
        dns_class = conn.execute(
            sa.text("SELECT class FROM dns_checks WHERE run_id = :r AND domain = 'example-a.test'"),
            {"r": run_id},
        ).scalar()
    assert probes["http://example-b.test/moved"] == (301, "example-a.test")
    assert probes["http://www.example-b.test/"] == (301, None)  # same registrable domain
    assert probes["http://example-b.test/"][1] is None
    assert (origin, dns_class) == ("redirect", "active")

    # politeness: the URLs of one domain one after the other, with the pause between them
    served = sorted(
        (r for r in site.requests if r.host.endswith("example-b.test")), key=lambda r: r.started
    )
    assert len(served) == 3
    for before, after in itertools.pairwise(served):
        assert after.started >= before.ended + 0.15

    # a re-run probes nothing again
    again = probe_redirects(
        run_id,
        settings=preload_settings,
        engine=db_engine,
        connect_to=f"127.0.0.1:{site.port}",
        nameservers=[zone_server.address],
    )
    assert again["probed"] == 0 and len(site.requests) == 3

    report = transfer(run_id, settings=preload_settings, engine=db_engine)
    assert report["redirects"]["new_domains"] == 1
    assert report["domains_created"] == 2  # example-b.test and, by redirect, example-a.test


@pytest.mark.parametrize(
    ("url", "status", "location", "target"),
    [
        ("http://a.fr/", 301, "https://www.b.com/x", "b.com"),
        ("http://a.fr/", 308, "//other.org/", "other.org"),
        ("http://a.fr/", 302, "/relative", None),
        ("http://a.fr/", 301, "https://www.a.fr/", None),
        ("http://a.fr/", 200, "https://b.com/", None),
        ("http://a.fr/", 301, "http://[bad", None),
        ("http://a.fr/", 301, None, None),
    ],
)
def test_redirect_targets(url: str, status: int, location: str | None, target: str | None) -> None:
    assert target_of(url, status, location, frozenset()) == target


class _MovedHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(301)
        self.send_header("Location", "http://elsewhere.test/")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_probes_resolve_through_the_runs_nameservers(
    db_engine: sa.Engine, preload_settings, run_id: str, zone_server: ZoneServer, tmp_path: Path
) -> None:
    """No hosts file, no connect_to: a name only the run's DNS knows is probed at its address."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _MovedHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        zone_server.records["moved.test"] = {"A": ["127.0.0.1"]}
        moved = f"http://moved.test:{server.server_port}/x"
        urls = tmp_path / "urls.txt"
        urls.write_text(moved + "\n")
        source = [{"name": "urls", "kind": "url_list", "path": str(urls)}]
        collected = collect_sources(run_id, source, settings=preload_settings, engine=db_engine)
        for chunk in collected["chunks"]:
            dns_check_chunk(
                run_id, chunk, [zone_server.address], settings=preload_settings, engine=db_engine
            )
        result = probe_redirects(
            run_id, settings=preload_settings, engine=db_engine,
            nameservers=[zone_server.address],
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert result["cross_domain"] == 1, result
    with db_engine.connect() as conn:
        status, target = conn.execute(
            sa.text("SELECT status, target_domain FROM redirect_checks WHERE url = :u"),
            {"u": moved},
        ).one()
    assert (status, target) == (301, "elsewhere.test")
    assert zone_server.queries[("moved.test", "A")] >= 1  # asked there, not to the system
