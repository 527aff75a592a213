"""Normalisation of domain-list lines to registrable domains."""

from __future__ import annotations

import pytest

from harvest.preload import normalise as n


@pytest.mark.parametrize(
    ("raw", "domain"),
    [
        ("  Example.FR.  ", "example.fr"),
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("Bücher.DE", "xn--bcher-kva.de"),
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("a.b.c.gouv.fr", "c.gouv.fr"),
        ("foo.blogspot.com", "blogspot.com"),  # private suffixes ignored (ICANN list only)
        ("ＥＸＡＭＰＬＥ．ｆｒ", "example.fr"),  # UTS 46 width mapping
    ],
)
def test_valid_lines_become_registrable_domains(raw: str, domain: str) -> None:
    assert n.normalise_domain(raw) == domain


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", n.EMPTY),
        ("   ", n.EMPTY),
        ("*.example.fr", n.WILDCARD),
        ("192.168.0.1", n.IP_LITERAL),
        ("[2001:db8::1]", n.IP_LITERAL),
        ("under_score.fr", n.BAD_LABEL),
        ("-dash.fr", n.BAD_LABEL),
        ("a..b.fr", n.BAD_LABEL),
        ("a" * 64 + ".fr", n.BAD_LABEL),
        (("a" * 60 + ".") * 5 + "fr", n.TOO_LONG),
        ("example.unknowntld", n.UNKNOWN_SUFFIX),
        ("co.uk", n.PUBLIC_SUFFIX),
        ("xn--zz-invalid-punycode-.fr", n.BAD_IDN),
        ("xn--a.fr", n.BAD_IDN),
        ("exa mple.fr", n.BAD_LABEL),
        ("http://example.fr/", n.BAD_LABEL),
    ],
)
def test_invalid_lines_are_rejected_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(n.RejectedDomain) as info:
        n.normalise_domain(raw)
    assert info.value.reason == reason


def test_extra_suffixes_accept_test_names_only_when_asked() -> None:
    with pytest.raises(n.RejectedDomain):
        n.normalise_domain("www.example-a.test")
    assert n.normalise_domain("www.example-a.test", frozenset({"test"})) == "example-a.test"


@pytest.mark.parametrize(
    ("url", "domain"),
    [
        ("https://www.Example.fr:8443/a?b", "example.fr"),
        ("blog.example.org/path", "example.org"),
        ("http://user@shop.example.com/", "example.com"),
    ],
)
def test_domain_of_url(url: str, domain: str) -> None:
    assert n.domain_of_url(url).domain == domain


@pytest.mark.parametrize("url", ["ftp://example.fr/", "http:///nohost", "http://example.fr:99999/"])
def test_bad_urls_are_rejected(url: str) -> None:
    with pytest.raises(n.RejectedDomain) as info:
        n.domain_of_url(url)
    assert info.value.reason == n.BAD_URL


def test_suffix_matching_agrees_with_tldextract_on_every_bundled_rule() -> None:
    import idna
    import tldextract

    oracle = tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=False
    )
    checked = 0
    for rule in oracle.tlds:
        body = rule.lstrip("!").replace("*", "wild")
        try:
            ascii_body = idna.encode(body, uts46=True).decode("ascii")
        except idna.IDNAError:
            continue
        for host in (f"x.{ascii_body}", f"a.b.{ascii_body}", ascii_body):
            expected = oracle(host)
            want = f"{expected.domain}.{expected.suffix}" if expected.domain else None
            try:
                got: str | None = n.normalise_domain(host)
            except n.RejectedDomain as exc:
                assert exc.reason in (n.PUBLIC_SUFFIX, n.UNKNOWN_SUFFIX, n.BAD_LABEL), host
                got = None
                if exc.reason == n.BAD_LABEL:
                    continue
            assert got == want, (rule, host)
            checked += 1
    assert checked > 15_000
