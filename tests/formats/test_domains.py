"""Registrable domains: one matcher for the crawler, harvest, QA and the preload.

The oracle is tldextract itself (per-call path, the bundled snapshot), on names built from
every ICANN rule of the list; the preload's strict normaliser is checked against the same oracle
in tests/harvest/preload/test_normalise.py.
"""

from __future__ import annotations

import contextlib

import idna
import pytest
import tldextract

from harvestflow.formats.domains import (
    _ascii_rule,
    bundled_rules,
    is_ip,
    public_suffix_length,
    registrable_domain,
    registrable_domains,
)
from qa.hosts import classify_host
from tests.support.imports import modules_loaded_by


def _oracle_domain(oracle: tldextract.TLDExtract, host: str) -> str:
    """What the crawler computed before (tldextract per call, last two labels otherwise)."""
    ext = oracle(host)
    if ext.suffix and ext.domain:
        return f"{ext.domain}.{ext.suffix}"
    return ".".join(host.split(".")[-2:])


def test_the_rules_read_from_the_snapshot_are_tldextracts_icann_rules() -> None:
    oracle = tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=False
    )
    rules = bundled_rules()
    assert len(rules) == len(set(rules)) > 6_000
    assert set(rules) == set(oracle.tlds)
    assert "blogspot.com" not in rules  # a private suffix: NetarchiveSuite ignores them


def test_every_bundled_rule_is_spelled_in_punycode_as_idna_spells_it() -> None:
    non_ascii = [rule.lstrip("!") for rule in bundled_rules() if not rule.isascii()]
    assert len(non_ascii) > 100
    for rule in non_ascii:
        want = idna.encode(rule, uts46=True, transitional=False).decode("ascii")
        assert _ascii_rule(rule) == want, rule


def test_a_registrable_domain_costs_no_tldextract_import() -> None:
    """tldextract pulls requests, urllib3 and filelock; the matcher only needs its data file."""
    code = (
        "from harvestflow.formats.domains import registrable_domain\n"
        "assert registrable_domain('www.bbc.co.uk') == 'bbc.co.uk'\n"
    )
    assert modules_loaded_by(code, ("tldextract", "requests", "urllib3")) == []


def test_registrable_domain_agrees_with_tldextract_on_every_bundled_rule() -> None:
    oracle = tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=False
    )
    checked = 0
    hosts, wanted = [], []
    for rule in oracle.tlds:
        body = rule.lstrip("!").replace("*", "wild")
        spellings = [body]
        with contextlib.suppress(idna.IDNAError):
            spellings.append(idna.encode(body, uts46=True).decode("ascii"))
        for name in spellings:
            for host in (f"x.{name}", f"a.b.{name}", name):
                want = _oracle_domain(oracle, host)
                assert registrable_domain(host) == want, (rule, host)
                hosts.append(host)
                wanted.append(want)
                checked += 1
    assert checked > 20_000
    # the batch matcher the daily QA takes for a day's hosts: the same domains
    assert registrable_domains(hosts) == wanted


@pytest.mark.parametrize(
    ("value", "domain"),
    [
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("https://WWW.Site.fr:443/path?q=1", "site.fr"),
        ("http://user@shop.example.com/", "example.com"),
        ("static.example-a.test", "example-a.test"),
        ("www.bücher.de", "bücher.de"),
        ("www.xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("example.org.", "example.org"),
        ("co.uk", "co.uk"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "[::1]"),
        ("", ""),
    ],
)
def test_registrable_domain_of_hosts_and_urls(value: str, domain: str) -> None:
    assert registrable_domain(value) == domain


def test_a_numeric_host_is_its_own_domain_everywhere() -> None:
    """The copies disagreed: the crawler kept ``1.2.3`` (an IPv4 spelling) whole, harvest and
    QA cut it to ``2.3``, grouping unrelated addresses. Now every stage keeps it whole."""
    assert registrable_domain("1.2.3") == "1.2.3"
    assert registrable_domain("http://3232235777/") == "3232235777"
    assert classify_host("1.2.3").domain == "1.2.3"


def test_public_suffix_rules_wildcards_and_exceptions() -> None:
    assert public_suffix_length(["a", "example", "co", "uk"]) == 2
    assert public_suffix_length(["x", "foo", "ck"]) == 2  # *.ck
    assert public_suffix_length(["www", "ck"]) == 1  # !www.ck
    assert public_suffix_length(["example", "test"]) == 0
    assert is_ip("::1") and is_ip("[::1]") and is_ip("10.0.0.1") and not is_ip("1.2.3")


def test_only_names_that_can_be_addresses_are_tried_as_ip_addresses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # an IP address is digits and dots, or holds a colon (IPv6): other names skip ipaddress,
    # whose exception on each of them was half the cost of a look-up; addresses stay whole
    from harvestflow.formats import domains

    tried: list[str] = []
    real = domains.is_ip

    def spy(text: str) -> bool:
        tried.append(text)
        return real(text)

    monkeypatch.setattr(domains, "is_ip", spy)
    domains.registrable_domain.cache_clear()
    assert registrable_domain("www.ip-free-name.co.uk") == "ip-free-name.co.uk"
    assert registrable_domain("WWW.Example.FR.") == "example.fr"
    assert tried == []
    for address in ("[2001:db8::1]", "2001:db8::2", "fe80::1%eth0", "[10.0.0.1]"):
        assert registrable_domain(address) == address
    assert registrable_domain("10.0.0.2") == "10.0.0.2"
    assert tried == ["[2001:db8::1]", "2001:db8::2", "fe80::1%eth0", "[10.0.0.1]"]
    domains.registrable_domain.cache_clear()
