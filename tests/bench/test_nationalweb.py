"""The synthetic national web (bench/scale): BnF-like sizes, deterministic from its seed, and
served from loopback with its own DNS, which the crawler's resolver asks (``[crawler]
nameservers``) as the preload does — no ``resolve`` map."""

from __future__ import annotations

import gzip
import random
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from bench.scale.nationalweb import NationalWeb
from bench.scale.webserve import WebProcess
from tests.support.crawl import FAST_TEMPLATE, run_crawl


def test_the_national_web_follows_the_size_classes_and_its_seed() -> None:
    web = NationalWeb(7, 5000, 100_000)
    assert len(web.domains) == 5000
    assert abs(web.total_urls() - 100_000) <= 1_000  # scaled to the URLs asked for
    pages = sorted(d.pages for d in web.domains)
    assert sum(p < 10 for p in pages) > 0.5 * len(pages)  # most domains tiny …
    assert pages[-1] >= 100 * statistics.median(pages)  # … a few large
    assert sum(1 for d in web.domains if d.dead) >= 5 and any(d.trap for d in web.domains)
    assert any(d.www_redirect for d in web.domains) and any(d.robots_private for d in web.domains)
    assert NationalWeb(7, 5000, 100_000).domains == web.domains  # the seed decides everything
    assert NationalWeb(8, 5000, 100_000).domains != web.domains


@pytest.fixture(scope="module")
def web() -> Iterator[WebProcess]:
    address = f"127.88.{random.randrange(1, 250)}.1"
    with WebProcess(3, 40, 400, address) as server:
        yield server


def test_a_crawl_finds_the_web_through_its_dns_gzip_and_robots(
    web: WebProcess, tmp_path: Path, monkeypatch
) -> None:
    model = NationalWeb(3, 40, 400)
    alive = [d for d in model.domains if not d.dead and not d.trap][:8]
    dead = next(d for d in model.domains if d.dead == "nxdomain")
    redirected = next(d for d in model.domains if d.www_redirect and not d.dead)
    chosen = [*alive, dead, redirected]
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__NAMESERVERS", f'["{web.dns}"]')
    job = {
        "job_id": 31,
        "harvest_id": 2,
        # and one https seed: the web answers https with a 301 to its canonical http URL
        "seeds": [f"http://{d.name}/" for d in chosen] + [f"https://{alive[0].name}/"],
        "template": {**FAST_TEMPLATE, "allow_private_addresses": True, "max_hops": 10},
        "domains": [
            {"domain": d.name, "config_id": i + 1, "max_objects": -1, "max_bytes": -1}
            for i, d in enumerate(chosen)
        ],
    }
    result = run_crawl(job, tmp_path / "job", timeout=300)
    assert result.summary["status"] == "complete", result.summary
    fields = result.log_fields()
    for d in alive:  # every URL of the domain fetched once, answered 200
        hosts = (d.name, f"www.{d.name}")
        mine = [f for f in fields if f[3].startswith("http:") and f[3].split("/")[2] in hosts
                and int(f[1]) > 0]  # fmt: skip
        assert len(mine) == d.urls(), (d, [f[3] for f in mine])
        assert {f[1] for f in mine} <= {"200", "301"}
    seed = result.line_for(f"http://{dead.name}/")  # no DNS answer: the DNS failure code
    assert seed[1] == "-6" and "dns-lookup-failed" in seed[-1]
    tls_seed = result.line_for(f"https://{alive[0].name}/")  # over TLS, redirected to http
    assert tls_seed[1] == "301", tls_seed
    assert web.stats().get("tls_redirects", 0) >= 1
    home = [f for f in fields if f[3] == f"http://www.{redirected.name}/"]
    assert home and home[0][1] == "200"  # the 301 to www. followed
    assert web.stats().get("robots_violations", 0) == 0
    assert any(f[1] == "-9998" and "/private/" in f[3] for f in fields)  # excluded, logged
    gzipped = 0
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if (
                    rec.rec_type == "response"
                    and rec.http_headers is not None
                    and rec.http_headers.get_header("Content-Encoding") == "gzip"
                ):
                    gzipped += 1
                    assert gzip.decompress(rec.raw_stream.read())  # stored as served
    assert gzipped >= len(alive)
