"""Canonical keys for the seen-set (the SURT keys are tested in tests/formats/test_surt.py)."""

from __future__ import annotations

from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.urls import canonical_key


def test_canonical_key_merges_spellings_and_drops_session_ids():
    assert canonical_key("http://WWW.A.org:80/x?b=2&a=1#f") == canonical_key(
        "http://www.a.org/x?a=1&b=2"
    )
    assert canonical_key("http://a.org/shop?sid=1&item=3") == canonical_key(
        "http://a.org/shop?item=3&sid=9"
    )
    assert canonical_key("http://a.org/p;jsessionid=XYZ") == canonical_key("http://a.org/p")
    assert canonical_key("http://a.org/x?q=1") != canonical_key("http://a.org/x?q=2")


def test_registrable_domain_uses_the_bundled_suffix_list():
    assert registrable_domain("www.bbc.co.uk") == "bbc.co.uk"
    assert registrable_domain("static.example-a.test") == "example-a.test"
    assert registrable_domain("127.0.0.1") == "127.0.0.1"
