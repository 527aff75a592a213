"""Our SURT keys equal the ``surt`` package's (the oracle, run in its own venv) on many URLs."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

from harvestflow.formats.surt import surt, surt_or_url

EDGE_CASES = [
    "http://www.Example.com:80/a/b?b=2&a=1#frag",
    "http://sub.example.co.uk/x;jsessionid=ABC?q=1",
    "dns:www.Example.com",
    "http://www.example.com/",
    "https://www.Example.com:443/a/b/../c/./d/?b=2&a=1#frag",
    "http://www2.example.com:8080/Path/To/Page.HTML?Z=1&y&x=",
    "http://example.com",
    "http://127.0.0.1:8099/foo",
    "http://3232235777/",
    "http://010.0.0.1/",
    "http://1.2.3/",
    "dns:www.example.com",
    "filedesc:foo.warc.gz",
    "http:////www.vikings.com/x",
    "http://https://www.example.com/",
    "http://www.example.com/%7Euser/%2541",
    "http://www.example.com/a b",
    "http://www.example.com/?jsessionid=0123456789abcdef0123456789abcdef&b=1",
    "http://www.example.com/?a=1&phpsessid=0123456789abcdef0123456789abcdef",
    "http://www.example.com/?sid=0123456789abcdef0123456789abcdef",
    "http://www.example.com/?ASPSESSIONIDabcdefgh=abcdefghijklmnopqrstuvwx&z=1",
    "http://www.example.com/?cfid=12&cftoken=34&x=1",
    "http://www.example.com/(a(0123456789abcdef01234567))/foo.aspx",
    "http://www.example.com/(0123456789abcdef01234567)/foo.aspx?x=1",
    "http://user:pass@www.example.com/",
    "http://[::1]:8080/path",
    "http://example.com:abc/",
    "http://example.com:99999/",
    "http://example.com:/x",
    "http://bücher.de/ä?ö=ü",
    "http://example.com/?",
    "http://example.com/#only",
    "http://example.com?x",
    "mailto:foo@example.com",
    "urn:uuid:1234",
    "http://www.example.com/a//b///c/",
    "http://..example..com../",
    "http://example.com:80/",
    "https://example.com:80/",
    "ftp://ftp.example.com:21/pub/",
    "whois://whois.example.com/",
    "http://example.com/%zz%",
    "example.com/no-scheme",
    "  http://example.com/\tspaced\n ",
    "HTTP://EXAMPLE.COM/UPPER",
    "http://example.com/%2e%2e/x",
    "http://www.example.com/index.html?a=%41&b=%2541",
    "http://example.com/\u00e9t\u00e9",
    "https://xn--bcher-kva.de/",
    "http://www.",
    "http://.",
    "\t",
    "http://www123.example.com/",
    "http://wwwexample.com/",
    "http://example.com/#a?b",
    "http://example.com/a?b#c?d",
]


def _random_urls(n: int, seed: int = 11) -> list[str]:
    rnd = random.Random(seed)
    schemes = ["http", "https", "HTTP", "ftp", "dns", ""]
    hosts = [
        "www.example.com",
        "Example.ORG",
        "www2.ex-ample.co.uk",
        "127.0.0.1",
        "10.0.0.1",
        "b\u00fccher.de",
        "sub.www.example.com",
        "example.com.",
        "EXAMPLE..com",
        "[::1]",
        "user@host.example",
        "a.b.c.d.e",
    ]
    ports = ["", ":80", ":443", ":8080", ":0", ":21"]
    segs = [
        "a",
        "B",
        ".",
        "..",
        "",
        "%41",
        "%2F",
        "%25",
        "caf\u00e9",
        "x y",
        "index.html",
        "(0123456789abcdef01234567)",
        "page.aspx",
        "~u",
        "%7e",
        "a%20b",
        "%zz",
    ]
    queries = [
        "",
        "?",
        "?a=1",
        "?b=2&a=1",
        "?A=%41&a",
        "?x=&y",
        "?jsessionid=" + "a" * 32,
        "?q=caf\u00e9",
        "?a=1&a=0",
        "?%3D=%26",
    ]
    frags = ["", "#", "#top", "#a?b"]
    urls = []
    for _ in range(n):
        scheme = rnd.choice(schemes)
        path = "/" + "/".join(rnd.choice(segs) for _ in range(rnd.randint(0, 5)))
        url = (scheme + "://" if scheme else "") + rnd.choice(hosts) + rnd.choice(ports)
        urls.append(url + path + rnd.choice(queries) + rnd.choice(frags))
    return urls


def _oracle_keys(oracle: Path, urls: list[str], tmp_path: Path) -> list[str]:
    src = tmp_path / "urls.json"
    src.write_text(json.dumps(urls))
    code = (
        "import json, sys, surt\n"
        "def key(u):\n"
        "    try:\n        return surt.surt(u)\n"
        "    except Exception:\n        return u\n"
        "print(json.dumps([key(u) for u in json.load(open(sys.argv[1]))]))\n"
    )
    out = subprocess.run(
        [str(oracle / "bin" / "python"), "-c", code, str(src)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def test_surt_equals_reference_on_edge_cases_and_random_urls(oracle: Path, tmp_path: Path):
    urls = EDGE_CASES + _random_urls(3000)
    expected = _oracle_keys(oracle, urls, tmp_path)
    mismatches = [
        (u, e, surt_or_url(u)) for u, e in zip(urls, expected, strict=True) if surt_or_url(u) != e
    ]
    assert not mismatches, mismatches[:10]


def test_surt_reverses_host_and_sorts_query():
    assert surt("https://www.Example.com:443/A/b/?z=1&a=2") == "com,example)/a/b?a=2&z=1"


def test_unparsable_url_is_keyed_by_itself():
    assert surt_or_url("http://example.com:notaport/") == "http://example.com:notaport/"
