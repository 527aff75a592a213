"""``extract_js``: URL-like strings of scripts (inline ``<script>``, ``on*`` attributes,
``javascript:`` links, JavaScript responses) are followed as speculative links (hop ``X``) with
the scope, hop and trap rules applied; with the template setting off, a page whose links exist
only in script strings gives none of them."""

from __future__ import annotations

from email.message import Message
from pathlib import Path

import pytest

from crawler.jsextract import extract_script, is_very_likely_url
from tests.support.crawl import FAST_TEMPLATE, run_crawl
from tests.support.rawsite import Negotiate, Raw, serve
from tests.support.scriptsite import encode_as

HOST = "www.scripted.test"
OTHER = "cdn.elsewhere.test"
HTML = b"Content-Type: text/html"
JS = b"Content-Type: application/javascript"


def _routes(port_holder: list[int]) -> object:
    def route(host: str, path: str) -> Raw | None:
        port = port_holder[0]
        if host == HOST and path == "/":
            body = (
                "<html><head><script src='/app.js'></script>"
                '<script>var stories = ["/story/1.html", "/story/2.html"];'
                " var cls = 'div.menu', ver = '1.2.3', t = 'text/javascript';"
                " var deep = '/a/a/a/a/trap.html';</script></head><body>"
                "<button onclick=\"location.href='/clicked.html'\">go</button>"
                "<a href=\"javascript:openStory('/story/3.html')\">three</a>"
                "</body></html>"
            )
            return Raw(body.encode(), [HTML])
        if host == HOST and path == "/app.js":
            body = (
                '(function(){var next = "\\/from-js\\/page.html";'
                f" var lib = 'http://{OTHER}:{port}/lib.js';"
                " document.title = 'no url here';})();"
            )
            return Raw(body.encode(), [JS])
        if host == HOST and path.startswith("/story/"):
            # a story's own script guesses once more: XX, past the one speculative hop allowed
            # beyond the hop limit
            return Raw(b"<html><script>var img = '/img/story.png';</script></html>", [HTML])
        if host == HOST and path in ("/clicked.html", "/from-js/page.html"):
            return Raw(b"<html>found by script</html>", [HTML])
        if host == OTHER and path == "/lib.js":
            return Raw(b"var x = 1;", [JS])
        return None

    return route


def _crawl(
    tmp_path: Path, name: str, extract_js: bool, negotiate: Negotiate | None = None
) -> tuple[list[list[str]], list[str]]:
    holder = [0]
    with serve(_routes(holder), negotiate=negotiate) as site:  # type: ignore[arg-type]
        holder[0] = site.port
        job = {
            "job_id": 7,
            "harvest_id": 2,
            "seeds": [site.url(HOST, "/")],
            "template": {**FAST_TEMPLATE, "max_hops": 1, "extract_js": extract_js},
            "resolve": {HOST: "127.0.0.1", OTHER: "127.0.0.1"},
        }
        result = run_crawl(job, tmp_path / name)
        served = [f"http://{h}:{site.port}{p}" for h, p in site.requests]
        fields = result.log_fields()
        for f in fields:
            f[3] = f[3].replace(f":{site.port}", ":PORT")
            f[5] = f[5].replace(f":{site.port}", ":PORT")
        return fields, [u.replace(f":{site.port}", ":PORT") for u in served]


def _url(host: str, path: str) -> str:
    return f"http://{host}:PORT{path}"


def test_script_strings_are_followed_as_speculative_links(tmp_path: Path) -> None:
    fields, served = _crawl(tmp_path, "on", True)
    by_url = {f[3]: f for f in fields}
    seed = _url(HOST, "/")
    for path in ("/story/1.html", "/story/2.html", "/clicked.html", "/story/3.html"):
        line = by_url[_url(HOST, path)]
        assert (line[1], line[4], line[5]) == ("200", "X", seed), line
        assert _url(HOST, path) in served
    # a JavaScript response's strings (escaped slashes undone), relative to the script
    js_page = by_url[_url(HOST, "/from-js/page.html")]
    assert (js_page[1], js_page[4], js_page[5]) == ("200", "EX", _url(HOST, "/app.js"))
    # an absolute URL on another host: one speculative hop is a transclusion, like an embed
    assert by_url[_url(OTHER, "/lib.js")][1] == "200"
    # trap rules apply to guesses too
    trap = by_url[_url(HOST, "/a/a/a/a/trap.html")]
    assert (trap[1], trap[4], trap[11]) == ("-4000", "X", "trap:repeated-path-segments")
    # a guess from a guessed page, past the hop limit: refused, never fetched
    second = by_url[_url(HOST, "/img/story.png")]
    assert (second[1], second[4]) == ("-4002", "XX")
    assert _url(HOST, "/img/story.png") not in served
    # strings that are no URLs are never tried
    for word in ("div.menu", "1.2.3", "text/javascript", "no url here"):
        assert not any(word in u for u in served), word


@pytest.mark.parametrize("coding", ["br", "zstd", "gzip, br"])
def test_a_compressed_javascript_response_gives_its_links(tmp_path: Path, coding: str) -> None:
    """Served compressed (as every CDN serves scripts), application/javascript is decoded for
    extract_js: before, only text/HTML/XML bodies were, and a compressed script gave none."""

    def compress_scripts(path: str, raw: Raw, headers: Message) -> Raw:
        if JS not in raw.headers:
            return raw
        body = raw.body
        for step in coding.split(", "):
            body = encode_as(step, body)
        return Raw(body, [*raw.headers, b"Content-Encoding: " + coding.encode()], raw.status)

    fields, served = _crawl(tmp_path, "compressed", True, compress_scripts)
    by_url = {f[3]: f for f in fields}
    js_page = by_url[_url(HOST, "/from-js/page.html")]
    assert (js_page[1], js_page[4], js_page[5]) == ("200", "EX", _url(HOST, "/app.js"))
    assert _url(OTHER, "/lib.js") in served


def test_extract_js_off_fetches_nothing_found_only_in_script(tmp_path: Path) -> None:
    fields, served = _crawl(tmp_path, "off", False)
    assert not any(f[4].endswith("X") for f in fields), [f for f in fields if "X" in f[4]]
    for path in ("/story/1.html", "/clicked.html", "/from-js/page.html"):
        assert _url(HOST, path) not in served
    assert _url(HOST, "/app.js") in served  # the script itself is an embed, fetched either way


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ('a = "/s/1.html"', ["http://h.test/s/1.html"]),
        ("a = '../up/img.png'", ["http://h.test/up/img.png"]),
        ('a = "https:\\/\\/h.test\\/x"', ["https://h.test/x"]),
        ('a = "\\u002Fu\\u002Fv.html"', ["http://h.test/u/v.html"]),
        ('a = "/q?x=1&amp;y=2"', ["http://h.test/q?x=1&y=2"]),
        ("w = '11.2'; m = 'image/png'; c = 'li.active'; s = 'a b/c.html'", []),
    ],
)
def test_script_string_heuristics(code: str, expected: list[str]) -> None:
    got = [u for u, hop, _ in extract_script(code, "http://h.test/dir/page.html", "script")]
    assert got == expected


def test_likely_url_rules_of_heritrix() -> None:
    for yes in ("photo.jpg", "/photos", "./photos", "../../photos", "jquery.min.js"):
        assert is_very_likely_url(yes), yes
    for no in ("text/xml", "1.2", "div.menu", "a.b.c", "js", "<b>/x</b>"):
        assert not is_very_likely_url(no), no
