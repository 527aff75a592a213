"""The CDX the crawler records in the metadata WARC equals cdxj-indexer's (``-11``, the oracle)
for the same records: URLs whose SURT keys are easy to get wrong (trailing slashes, session ids,
``%25`` and other escapes, ``//`` in paths, IDN hosts, ports, ``www``/``www2`` prefixes, upper
case) and responses whose ``Content-Type`` a hostile server made up (tab, CR, runs of spaces,
NUL, 10 kB, control and non-ASCII bytes, duplicates, folded lines): no field shifts, no line is
forged, every value is what the reference writes. The indexing chain's lines for the same WARCs
equal the oracle's too (CDX11 and CDXJ).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from urllib.parse import urljoin

import pytest

from crawler.warc.metadata import cdx_lines
from indexing.cdx import index_warc
from tests.support.crawl import (
    FAST_TEMPLATE,
    ORACLE_BIN,
    CrawlResult,
    _bytes_order,
    _oracle_cdx11,
    our_cdx,
    run_crawl,
)
from tests.support.rawsite import Raw, serve

SID = "0123456789abcdef0123456789abcdef"
HOSTS = ("www.cdx.test", "www2.cdx.test", "cdx.test", "xn--bcher-kva.cdx.test")
HTML = b"Content-Type: text/html; charset=utf-8"

# same-host links, as written in the page
PATHS = [
    "/dir/",
    "/dir",
    "/deep/er/",
    f"/js?jsessionid={SID}&a=1",
    f"/php?b=2&PHPSESSID={SID}",
    f"/sid?sid={SID}&z=1&a=2",
    "/asp?ASPSESSIONIDABCDEFGH=abcdefghijklmnopqrstuvwx&z=1",
    "/(S(0123456789abcdef01234567))/page.aspx",
    "/p;jsessionid=ABCDEF",
    "/pct%2541",
    "/caf%C3%A9/",
    "/tilde%7Euser",
    "/q?x=%25&y=%2F&a=b%20c",
    "/a//b//c",
    "/x/./y/../z",
    "/UPPER/Case.HTML?B=2&a=1",
    "/redirect",
]
# a server's Content-Type values, raw (each served at /ct/<i>)
HOSTILE_TYPES = [
    b"Text/HTML; Charset=UTF-8",
    b"text/html\tcharset=x",
    b"text/html\rX-Forged: 1",
    b"text/plain" + b" " * 300 + b"404 FORGED - - 1 0 evil.warc.gz",
    b"text/ht\x00ml",
    b"x" * 10_000,
    b"",
    b"\x1ctext/css",
    b"t\xe9xt/html",
    b"t\xc3\xa9xt/html; charset=utf-8",
    b"text/html\x0bx",
    b"text/html\x85z",
    b"a\xa0b",
    b"text/html;\r\n\tcharset=folded onto two lines",
    b"image/png\r\nX-Injected: com,evil)/ 20300101000000 http://evil/ a 200 B - - 1 0 e",
]
# header sections that are odd in their names, not their values
ODD_HEADERS = {
    "/dup": [b"Content-Type: text/first", b"Content-Type: text/second"],
    "/spaced-name": [b"Content-Type : text/spaced"],  # Twisted refuses the name: no capture
    "/none": [],
}


def _page(port: int) -> bytes:
    links = [f'<a href="{p}">x</a>' for p in PATHS]
    links += [f'<a href="/ct/{i}">x</a>' for i in range(len(HOSTILE_TYPES))]
    links += [f'<a href="{p}">x</a>' for p in ODD_HEADERS]
    links += [
        f'<a href="http://{h}:{port}/from-{h.split(".")[0]}">x</a>'
        for h in ("www2.cdx.test", "cdx.test", "WWW.CDX.TEST")
    ]
    links.append(f'<a href="http://bücher.cdx.test:{port}/idn/">x</a>')
    return ("<html><body>" + "".join(links) + "</body></html>").encode()


def _routes(port: int):  # type: ignore[no-untyped-def]
    def route(host: str, path: str) -> Raw | None:
        if path == "/robots.txt":
            return None
        if path == "/" and host == "www.cdx.test":
            return Raw(_page(port), [HTML])
        if path == "/redirect":
            return Raw(b"", [b"Location: /dir/", HTML], 302)
        if path.startswith("/ct/"):
            return Raw(b"<html>hostile</html>", [b"Content-Type: " + HOSTILE_TYPES[int(path[4:])]])
        if path in ODD_HEADERS:
            return Raw(b"odd", ODD_HEADERS[path])
        return Raw(b"<html><body>leaf</body></html>", [HTML])

    return route


def _oracle_cdxj(warcs: list[Path]) -> list[str]:
    out = subprocess.run(
        [str(ORACLE_BIN / "cdxj-indexer"), *map(str, warcs)], check=True, capture_output=True
    ).stdout.decode("utf-8")
    return [ln for ln in out.split("\n") if ln]


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> CrawlResult:
    holder: dict[str, int] = {}
    tmp = tmp_path_factory.mktemp("cdx")
    with serve(lambda h, p: _routes(holder["port"])(h, p)) as site:
        holder["port"] = site.port
        job = {
            "job_id": 7,
            "harvest_id": 2,
            "seeds": [site.url("www.cdx.test", "/")],
            "template": {**FAST_TEMPLATE, "max_hops": 2},
            "resolve": {h: "127.0.0.1" for h in (*HOSTS, "bücher.cdx.test")},
        }
        return run_crawl(job, tmp / "job")


def test_metadata_warc_cdx_equals_cdxj_indexer(crawl: CrawlResult, tmp_path: Path):
    cdx_file = tmp_path / "index.cdx"
    our_cdx(crawl.out / "warcs" / "7-metadata-1.warc.gz", cdx_file)
    ours = cdx_file.read_bytes().decode("utf-8").split("\n")
    assert ours[0] == " CDX N b a m s k r M S V g" and ours[-1] == ""
    body = ours[1:-1]
    assert body == _bytes_order(body)
    expected = _bytes_order(_oracle_cdx11(crawl.data_warcs()))
    ours_only = [ln[:160] for ln in body if ln not in expected]
    oracle_only = [ln[:160] for ln in expected if ln not in body]
    assert not ours_only and not oracle_only
    assert body == expected  # and as many times each
    assert all(len(ln.split(" ")) == 11 for ln in body)
    # the test is not vacuous: every tricky URL and every hostile response was captured
    urls = {ln.split(" ")[2] for ln in body}
    job = json.loads((crawl.out.parent / f"{crawl.out.name}-job.json").read_text())
    page = job["seeds"][0]
    linked = PATHS + [f"/ct/{i}" for i in range(len(HOSTILE_TYPES))] + ["/dup", "/none"]
    missing = [p for p in linked if urljoin(page, p) not in urls]
    assert not missing
    assert any("xn--bcher-kva.cdx.test" in u for u in urls)
    assert any(u.startswith("http://www2.cdx.test:") for u in urls)
    assert not any("evil" in ln.split(" ")[10] for ln in body)


def test_chain_lines_equal_cdxj_indexer_on_hostile_records(crawl: CrawlResult):
    warcs = crawl.data_warcs()
    ours11 = [ln for w in warcs for ln in index_warc(w).lines("cdx11")[1:]]
    assert _bytes_order(ours11) == _bytes_order(_oracle_cdx11(warcs))
    oursj = [ln for w in warcs for ln in index_warc(w).lines("cdxj")]
    assert _bytes_order(oursj) == _bytes_order(_oracle_cdxj(warcs))


def test_reread_lines_equal_cdxj_indexer(crawl: CrawlResult):
    """The lines the metadata WARC takes from a data WARC read again (one repaired after a
    crash) are the reference's too."""
    warcs = crawl.data_warcs()
    reread = [ln for w in warcs for ln in cdx_lines(w)]
    assert _bytes_order(reread) == _bytes_order(_oracle_cdx11(warcs))
