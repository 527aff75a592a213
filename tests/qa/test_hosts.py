"""Hosts → registrable domains and TLDs, offline (bundled public-suffix list)."""

from __future__ import annotations

import pytest

from qa.hosts import IP_TLD, classify_host, classify_hosts, domain_of_url, host_of


@pytest.mark.parametrize(
    ("auth", "host"),
    [
        ("WWW.Example.FR:8080", "www.example.fr"),
        ("user:pw@site.com", "site.com"),
        ("dns:www.a.fr", "www.a.fr"),
        ("example.org.", "example.org"),
        ("[::1]:8099", "[::1]"),
    ],
)
def test_host_of_cleans_authorities(auth: str, host: str) -> None:
    assert host_of(auth) == host


def test_registrable_domain_uses_the_public_suffix_list() -> None:
    assert classify_host("a.b.example.co.uk").domain == "example.co.uk"
    assert classify_host("a.b.example.co.uk").tld == "uk"
    assert classify_host("www.mairie.fr").domain == "mairie.fr"


def test_unknown_suffixes_and_ips_still_group() -> None:
    assert classify_host("www.example-a.test").domain == "example-a.test"
    assert classify_host("www.example-a.test").tld == "test"
    assert classify_host("127.0.0.1").tld == IP_TLD
    assert domain_of_url("https://WWW.Site.fr:443/path?q=1") == "site.fr"


def test_the_batch_classification_of_a_days_hosts_is_classify_hosts_one_by_one() -> None:
    hosts = [
        "www.mairie.fr", "a.b.example.co.uk", "x.foo.ck", "www.ck", "a.b.city.kobe.jp",
        "city.kobe.jp", "www.example-a.test", "localhost", "co.uk", "", "127.0.0.1", "1.2.3",
        "[::1]", "2001:db8::1", "a..b.fr", ".x.fr", "x.fr.", "WWW.A.FR", "www.bücher.de",
        "www.xn--bcher-kva.de", "_dmarc.site.com", "9site.fr",
    ]  # fmt: skip
    domains, tlds = classify_hosts(hosts)
    assert list(zip(domains, tlds, strict=True)) == [
        (classify_host(h).domain, classify_host(h).tld) for h in hosts
    ]
    assert domains[:3] == ["mairie.fr", "example.co.uk", "x.foo.ck"]
