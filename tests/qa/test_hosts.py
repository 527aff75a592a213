"""Hosts → registrable domains and TLDs, offline (bundled public-suffix list)."""

from __future__ import annotations

import pytest

from qa.hosts import IP_TLD, classify_host, domain_of_url, host_of


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
