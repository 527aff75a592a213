"""Canonical keys for the seen-set, and SURT keys equal to the ``surt`` package's (oracle)."""

from __future__ import annotations

import json
import subprocess

from crawler.urls import canonical_key, registrable_domain, surt
from tests.conftest import oracle

URLS = [
    "http://www.Example.com:80/a/b?b=2&a=1#frag",
    "https://example.com:443/",
    "http://example.com:8080/path/Page.HTML?Z=1&a=2",
    "http://sub.example.co.uk/x;jsessionid=ABC?q=1",
    "http://www.example-a.test:8099/section/sub/deep.html",
    "http://example.org/search?q=archive&page=2",
    "dns:www.Example.com",
]


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


def test_surt_matches_the_surt_package():
    code = "import json,sys,surt; print(json.dumps([surt.surt(u) for u in json.load(sys.stdin)]))"
    proc = subprocess.run(
        [str(oracle("python")), "-c", code],
        input=json.dumps(URLS),
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(proc.stdout)
    ours = [surt(u) for u in URLS]
    for url, mine, theirs in zip(URLS, ours, expected, strict=True):
        assert mine == theirs, url
