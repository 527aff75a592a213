"""Link extraction: every resource a page uses, with Heritrix's hop types."""

from __future__ import annotations

import lxml.html

from crawler.links import (
    EXTRACT_SCAN,
    css_urls,
    extract_css,
    extract_html,
    html_links,
    parse_srcset,
    scan_html,
)

PAGE = "http://www.example.org/dir/page.html"


def links_of(html: str, url: str = PAGE) -> set[tuple[str, str]]:
    return {(u, h) for u, h, _ in extract_html(lxml.html.fromstring(html), url)}


RICH = """<html><head><link rel="stylesheet" href="/s.css"><link rel="canonical" href="c.html">
<script src="j.js"></script><style>h1{background:url(st.png)}</style></head><body>
<a href="a.html">a</a><area href="/ar.html"><img src="i.png" srcset="i2.png 2x">
<picture><source srcset="p1.webp 1x, p2.webp 2x"><img src="p.png"></picture>
<iframe src="f.html"></iframe><embed src="e.swf"><object data="o.swf"></object>
<frameset><frame src="fr.html"></frameset>
<video src="v.mp4" poster="poster.jpg"><source src="v.webm"></video><audio src="a.mp3"></audio>
<div style="background-image: url('d.png')">x</div><table background="t.gif"></table>
<a href="javascript:void(0)">no</a><a href="mailto:x@y">no</a><a href="#top">no</a>
</body></html>"""


def test_srcset_candidates_with_descriptors_and_commas_in_urls():
    assert parse_srcset("a.png 1x, b.png 2x") == ["a.png", "b.png"]
    assert parse_srcset("  a.png 480w,b.png   800w , c.png") == ["a.png", "b.png", "c.png"]
    assert parse_srcset("img,1.png 1x, img,2.png 2x") == ["img,1.png", "img,2.png"]
    assert parse_srcset("a.png, b.png") == ["a.png", "b.png"]
    assert parse_srcset("") == []


def test_css_url_and_import_forms():
    css = """@import url("a.css"); @import 'b.css' screen; @import "c.css";
    x { background: url(d.png) } y { background: url( 'e.png' ) } z { src: url("f.woff") }"""
    assert sorted(css_urls(css)) == ["a.css", "b.css", "c.css", "d.png", "e.png", "f.woff"]
    got = extract_css("x{background:url(../i.png)}", "http://h/css/s.css")
    assert got == [("http://h/i.png", "E", "css")]


def test_html_elements_give_links_and_embeds():
    html = RICH
    got = links_of(html)
    base = "http://www.example.org/dir/"
    expected = {
        ("http://www.example.org/s.css", "E"),
        (base + "c.html", "L"),
        (base + "j.js", "E"),
        (base + "st.png", "E"),
        (base + "a.html", "L"),
        ("http://www.example.org/ar.html", "L"),
        (base + "i.png", "E"),
        (base + "i2.png", "E"),
        (base + "p1.webp", "E"),
        (base + "p2.webp", "E"),
        (base + "p.png", "E"),
        (base + "f.html", "E"),
        (base + "fr.html", "E"),
        (base + "e.swf", "E"),
        (base + "o.swf", "E"),
        (base + "v.mp4", "E"),
        (base + "poster.jpg", "E"),
        (base + "v.webm", "E"),
        (base + "a.mp3", "E"),
        (base + "d.png", "E"),
        (base + "t.gif", "E"),
    }
    assert got == expected


def test_base_href_and_meta_refresh():
    html = """<html><head><base href="http://other.example.org/x/">
    <meta http-equiv="refresh" content="5; URL='next.html'"></head>
    <body><a href="y.html">y</a></body></html>"""
    assert links_of(html) == {
        ("http://other.example.org/x/next.html", "R"),
        ("http://other.example.org/x/y.html", "L"),
    }


def _pairs(links: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return sorted(links)


def test_the_streaming_scan_finds_what_the_tree_finds():
    base_page = RICH.replace("<head>", '<head><base href="/b/">')
    for html in (RICH, base_page):
        tree = extract_html(lxml.html.fromstring(html), PAGE)
        assert _pairs(scan_html(html, PAGE)) == _pairs(tree)
        assert html_links(html, PAGE) == (tree, None)  # a whole tree: no annotation
    # comments and script text are not markup, for the scan as for the tree
    html = '<!-- <a href="c.html"> --><script>x="<a href=s.html>"</script><a href=\'q.html?a=1&amp;b=2\' title="1>0">'
    assert [u for u, _, _ in scan_html(html, PAGE)] == ["http://www.example.org/dir/q.html?a=1&b=2"]


def test_deep_documents_fall_back_to_the_scan_and_say_so():
    for depth in (10_000, 100_000):
        html = (
            '<a href="/before">b</a>'
            + "<div>" * depth
            + '<a href="/inside">i</a>'
            + "</div>" * depth
            + '<a href="/after">a</a>'
        )
        links, note = html_links(html, PAGE)
        assert note == EXTRACT_SCAN
        assert [u.rsplit("/", 1)[1] for u, _, _ in links] == ["before", "inside", "after"]


def test_the_scan_stays_linear_on_unclosed_tags_and_quotes():
    # each of these made the first scan pattern run from every "<" to the end of the document
    # (quadratic: minutes for these 0.3-1 MB pages); the deep nest forces the scan
    nest = "<div>" * 3000 + '<a href="/link">a</a>'
    for junk in ("<a ", '<a href="x ', "<a href='x ", "<a x=\"'"):
        links, note = html_links(nest + junk * 100_000, PAGE)  # no ">" after the junk
        assert note == EXTRACT_SCAN
        assert [u for u, _, _ in links] == ["http://www.example.org/link"], junk


# paths from the root a page may hold, with what urljoin makes of them: dot segments, empty
# query or fragment markers, protocol-relative, parameters, escapes, spaces, backslashes
_ROOT_PATHS = [
    "/a", "/a//b", "/a/./b", "/a/../b", "/..", "/.", "/a?", "/a#", "/a?b=1", "//other.example/x",
    "/a;b", "/a%20b", "/\u00e9", "/a b", "/a\tb", "/\\a", "/.well-known/x", "/a/b.", "/a/b..",
    "/-x", "/~u/", "/", "/a:b", "/@x", "/a/", "/a/b/../../../c",
]  # fmt: skip
_BASES = [
    "http://Example.com/a/b.html", "HTTPS://x.org:8443/dir/", "http://u:p@h.example/?q#f",
    "http://[::1]:80/x", "http://\texample.com/a", "http://a.example/c;p?q", "ftp://x/y",
    "http://[bad/", "https://xn--bcher-kva.example/\u00e9/",
]  # fmt: skip


def test_paths_from_the_root_are_joined_as_urljoin_joins_them() -> None:
    from urllib.parse import urljoin

    from crawler.links import _absolute

    for base in _BASES:
        for raw in _ROOT_PATHS:
            try:
                expected = urljoin(base, raw)
            except ValueError:
                expected = raw
            assert _absolute(base, raw) == expected, (base, raw)


def test_a_pages_paths_from_the_root_need_no_urljoin(monkeypatch) -> None:
    from urllib.parse import urljoin

    import crawler.links as links

    calls: list[str] = []

    def counting(base: str, url: str) -> str:
        calls.append(url)
        return urljoin(base, url)

    monkeypatch.setattr(links, "urljoin", counting)
    page = '<a href="/p1.html">1</a><img src="/img/i0.png"><a href="rel.html">r</a>'
    assert links_of(page) == {
        ("http://www.example.org/p1.html", "L"),
        ("http://www.example.org/img/i0.png", "E"),
        ("http://www.example.org/dir/rel.html", "L"),
    }
    assert calls == ["rel.html"]  # the relative one only
