"""Safety: loopback/private addresses are refused unless given explicitly (``resolve``) or
allowed by the template; robots.txt can be ignored by the template."""

from __future__ import annotations

import re
import subprocess

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.support.crawl import FETCH_CLIENTS, ORACLE_BIN, REPO, make_job, our_cdx, run_crawl


@pytest.mark.parametrize("fetch_client", FETCH_CLIENTS)
def test_private_addresses_are_refused_by_default(fresh_site, tmp_path, fetch_client):
    site = fresh_site
    literal = f"http://127.0.0.1:{site.port}/"
    named = f"http://localhost:{site.port}/"
    job = make_job(
        site, [literal, named], {"allow_private_addresses": False, "fetch_client": fetch_client}
    )
    result = run_crawl(job, tmp_path / "job")
    for url in (literal, named):
        line = result.line_for(url)
        assert line[1] == "-5002" and line[11] == "err=address-not-allowed", line
    assert site.requests == []  # nothing reached the server


@pytest.mark.parametrize("fetch_client", FETCH_CLIENTS)
def test_private_addresses_allowed_by_template(fresh_site, tmp_path, fetch_client):
    site = fresh_site
    named = f"http://localhost:{site.port}/"
    job = make_job(site, [named], {"allow_private_addresses": True, "fetch_client": fetch_client})
    result = run_crawl(job, tmp_path / "job")
    assert result.line_for(named)[1] == "404"  # reached: the site has no "localhost" host
    # the DNS answer is archived once, as Heritrix's dns: record, and indexed like pywb does
    dns = []
    for warc in result.data_warcs():
        with warc.open("rb") as fh:
            it = ArchiveIterator(fh)
            for rec in it:
                if rec.rec_headers.get_header("WARC-Target-URI", "").startswith("dns:"):
                    dns.append((rec, rec.content_stream().read()))
    assert len(dns) == 1
    rec, body = dns[0]
    assert rec.rec_type == "response"
    assert rec.rec_headers.get_header("WARC-Target-URI") == "dns:localhost"
    assert rec.rec_headers.get_header("Content-Type") == "text/dns"
    stamp, answer = body.decode().splitlines()
    assert re.fullmatch(r"\d{14}", stamp) and answer == "localhost.\tIN\tA\t127.0.0.1"
    check = subprocess.run(
        [str(REPO / ".venv/bin/warcio"), "check", *map(str, result.data_warcs())],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout
    cdx_file = tmp_path / "index.cdx"
    our_cdx(result.out / "warcs" / "7-metadata-1.warc.gz", cdx_file)
    recorded = cdx_file.read_text().splitlines()[1:]
    # indexed as the reference indexer (cdxj-indexer -11) indexes it: no MIME, no status
    ref = subprocess.run(
        [str(ORACLE_BIN / "cdxj-indexer"), "-11", *map(str, result.data_warcs())],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert sorted(recorded) == sorted(ln for ln in ref if not ln.startswith(" CDX"))
    dns_line = next(ln for ln in recorded if ln.startswith("dns:"))
    assert dns_line.startswith("dns:localhost ") and " dns:localhost - - " in dns_line


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


def test_proxy_from_the_environment_is_not_used(fresh_site, tmp_path, monkeypatch):
    """An http_proxy in the worker's environment would bypass the address rule and put the
    proxy's address in WARC-IP-Address: the crawler connects to the origin itself."""
    site = fresh_site
    dead_proxy = "http://127.0.0.1:9"  # discard port: nothing listens there
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, dead_proxy)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    front = site.url("www.example-a.test", "/")
    job = make_job(site, [front], {"max_hops": 0})
    result = run_crawl(job, tmp_path / "job")
    assert result.line_for(front)[1] == "200"
    assert site.requests, "the origin server was not reached"
