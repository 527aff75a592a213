"""The sample site serves its virtual hosts and awkward cases as the crawler tests expect."""

from __future__ import annotations

import gzip
import hashlib
import http.client

import pytest

from app.demo.samplesite import start


@pytest.fixture()
def site():
    s = start()
    yield s
    s.stop()


def get(site, host, path, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)
    conn.request("GET", path, headers={"Host": f"{host}:{site.port}", **(headers or {})})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp, body


def test_virtual_hosts_serve_their_own_front_pages_with_port_filled_in(site):
    resp, body = get(site, "www.example-a.test", "/")
    assert resp.status == 200
    assert f"http://static.example-a.test:{site.port}/css/site.css".encode() in body
    assert b"__PORT__" not in body
    resp_b, body_b = get(site, "example-b.test", "/")
    assert resp_b.status == 200 and b"Example B" in body_b
    resp_css, css = get(site, "static.example-a.test", "/css/site.css")
    assert resp_css.getheader("Content-Type") == "text/css" and b"url(" in css


def test_redirects_404_and_robots(site):
    resp, _ = get(site, "www.example-a.test", "/redirect-301")
    assert resp.status == 301 and resp.getheader("Location") == "/about.html"
    resp, _ = get(site, "www.example-a.test", "/redirect-302")
    assert resp.status == 302
    resp, _ = get(site, "www.example-b.test", "/news.html")
    assert resp.getheader("Location") == f"http://example-b.test:{site.port}/news.html"
    resp, _ = get(site, "www.example-a.test", "/no-such-page.html")
    assert resp.status == 404
    resp, body = get(site, "www.example-a.test", "/robots.txt")
    assert b"Disallow: /private/" in body


def test_gzip_page_is_sent_compressed_and_logged_with_its_digest(site):
    resp, body = get(site, "www.example-a.test", "/gzip.html", {"Accept-Encoding": "gzip"})
    assert resp.getheader("Content-Encoding") == "gzip"
    assert b"gzip-target.html" in gzip.decompress(body)
    entry = site.served("www.example-a.test", "/gzip.html")[-1]
    assert entry.sha1 == hashlib.sha1(body).hexdigest()


def test_chunked_page_is_sent_in_chunks(site):
    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)
    conn.request("GET", "/chunked.html", headers={"Host": "www.example-a.test"})
    resp = conn.getresponse()
    assert resp.getheader("Transfer-Encoding") == "chunked"
    body = resp.read()  # http.client de-chunks
    assert site.served("www.example-a.test", "/chunked.html")[-1].sha1 == (
        hashlib.sha1(body).hexdigest()
    )
    assert site.served("www.example-a.test", "/chunked.html")[-1].chunked


def test_repeated_set_cookie_and_conditional_304(site):
    resp, _ = get(site, "www.example-a.test", "/cookies")
    assert len(resp.headers.get_all("Set-Cookie")) == 2
    resp, _ = get(site, "www.example-a.test", "/etag.html")
    etag = resp.getheader("ETag")
    resp, body = get(site, "www.example-a.test", "/etag.html", {"If-None-Match": etag})
    assert resp.status == 304 and body == b""


def test_trap_calendar_never_ends(site):
    _, body = get(site, "trap.example-c.test", "/calendar/2026/12/")
    assert b"/calendar/2027/01/" in body and b"/calendar/2026/11/" in body


def test_images_are_real_pngs(site):
    resp, body = get(site, "static.example-a.test", "/img/hero-800.png")
    assert resp.getheader("Content-Type") == "image/png"
    assert body.startswith(b"\x89PNG\r\n\x1a\n")
