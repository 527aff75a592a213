"""crawler.inflate's decoders and budget, one function at a time (the crawl-level proof, with
peak RSS and the archived bytes, is tests/crawler/test_inflate_bombs.py)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import brotli
from backports import zstd
from scrapy import Request
from scrapy.http import Response
from scrapy.settings import Settings
from warcio.archiveiterator import ArchiveIterator

from crawler.inflate import (
    BoundedDecompressionMiddleware,
    InflateBudget,
    Inflater,
    Reservation,
    decode,
    record_body,
    split_encodings,
    wants_body,
)
from tests.support.bombs import bomb_warc
from tests.support.hostile import brotli_bomb, deflate_bomb, gzip_bomb

# links with pseudo-random numbers: compressed, still thousands of bytes (a stream to cut)
HTML = (
    "<html>" + "".join(f"<a href='/p{i * 7919 % 10007}'>{i}</a>" for i in range(4000)) + "</html>"
).encode()
LIMIT = 1 << 20


def test_each_encoding_decodes_whole_below_the_limit() -> None:
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    bodies = {
        b"gzip": gzip.compress(HTML),
        b"x-gzip": gzip.compress(HTML),
        b"deflate": zlib.compress(HTML),
        b"br": brotli.compress(HTML),
        b"zstd": zstd.compress(HTML),
    }
    for enc, body in bodies.items():
        assert decode(body, [enc], LIMIT) == (HTML, False), enc
    raw = raw_deflate.compress(HTML) + raw_deflate.flush()  # deflate without zlib header (IIS)
    assert decode(raw, [b"deflate"], LIMIT) == (HTML, False)
    two_members = gzip.compress(HTML) + gzip.compress(b"<a href='/m2'>")
    assert decode(two_members, [b"gzip"], LIMIT) == (HTML + b"<a href='/m2'>", False)
    twice = gzip.compress(zlib.compress(HTML))  # Content-Encoding: deflate, gzip
    assert decode(twice, [b"gzip", b"deflate"], LIMIT) == (HTML, False)


def test_bombs_stop_at_the_limit_and_say_so() -> None:
    for enc, make in ((b"gzip", gzip_bomb), (b"deflate", deflate_bomb), (b"br", brotli_bomb)):
        body, cut = decode(make(256 << 20, b"<a href='/first'>"), [enc], LIMIT)
        assert cut and len(body) == LIMIT and body.startswith(b"<a href='/first'>"), enc
    body, cut = decode(zstd.compress(bytes(64 << 20)), [b"zstd"], LIMIT)
    assert cut and len(body) == LIMIT


def test_corrupt_streams_give_what_was_decoded() -> None:
    body = gzip.compress(HTML)
    out, cut = decode(body[:-200], [b"gzip"], LIMIT)  # cut short: the prefix, no error
    assert HTML.startswith(out) and len(out) > 1000 and not cut
    broken = body[:2000] + bytes(200) + body[2200:]
    out, _ = decode(broken, [b"gzip"], LIMIT)
    assert HTML.startswith(out)
    assert decode(b"not compressed at all", [b"gzip"], LIMIT) == (b"", False)


def test_encodings_are_split_as_scrapy_does() -> None:
    assert split_encodings([b"gzip"]) == ([b"gzip"], [])
    assert split_encodings([b"deflate, GZIP"]) == ([b"gzip", b"deflate"], [])
    assert split_encodings([b"gzip, compress"]) == ([], [b"gzip", b"compress"])
    assert split_encodings([b"compress, gzip"]) == ([b"gzip"], [b"compress"])
    assert split_encodings([b"identity"]) == ([], [])


def test_the_budget_is_shared_and_every_response_gets_its_floor() -> None:
    budget = InflateBudget(100)
    assert budget.reserve(60) == 60 and budget.reserve(60) == 40
    assert budget.reserve(60, floor=10) == 10  # spent: the floor still
    assert budget.used == 110
    token = Reservation(budget, 60)
    token.release()
    token.release()  # once only
    assert budget.used == 50
    assert wants_body("text/html") and wants_body("application/xhtml+xml") and wants_body("")
    assert not wants_body("image/png") and not wants_body("application/pdf")


def test_stacked_encodings_are_decoded_and_the_headers_say_what_is_left() -> None:
    inflater = Inflater(LIMIT, 4 * LIMIT)
    got = inflater.inflate(brotli.compress(gzip.compress(HTML)), [b"gzip, br"])
    assert (got.body, got.left, got.cut) == (HTML, [], False)
    heads = [("Content-Type", "text/html"), ("Content-Encoding", "gzip, br")]
    assert got.headers(heads) == [("Content-Type", "text/html")]
    assert inflater.budget.used == len(HTML)  # held until its reader gives it back
    assert got.token is not None
    got.token.release()
    assert inflater.budget.used == 0
    # an encoding we cannot decode stays on the body, and its header says so
    kept = inflater.inflate(gzip.compress(b"x"), [b"compress", b"gzip"])
    assert (kept.body, kept.left) == (b"x", [b"compress"])
    assert kept.headers(heads) == [("Content-Type", "text/html"), ("Content-Encoding", "compress")]
    # nothing to decode: body and headers untouched
    plain = inflater.inflate(b"as is", [b"identity"])
    assert (plain.body, plain.decoded, plain.headers(heads)) == (b"as is", False, heads)


def test_a_record_is_read_back_decoded_within_the_limit(tmp_path: Path) -> None:
    url = "http://h.test/"
    placed = bomb_warc(
        tmp_path,
        {
            url + "app.js": ("application/javascript", "zstd", zstd.compress(HTML)),
            url + "bomb": ("text/css", "br", brotli_bomb(64 << 20, b"a{}")),
        },
    )
    inflater = Inflater(LIMIT, 4 * LIMIT)
    with (tmp_path / placed[0][1]).open("rb") as fh:
        got = [
            record_body(rec, inflater) for rec in ArchiveIterator(fh) if rec.rec_type == "response"
        ]
    assert (got[0].body, got[0].cut) == (HTML, False)
    assert got[1].cut and len(got[1].body) == LIMIT and got[1].body.startswith(b"a{}")


class _Crawler:
    def __init__(self, **settings: object) -> None:
        self.settings = Settings(settings)


def test_the_middleware_decodes_what_a_browser_or_extract_js_reads_whatever_the_type() -> None:
    mw = BoundedDecompressionMiddleware(_Crawler(HARVESTFLOW_EXTRACT_JS=True))  # type: ignore[arg-type]
    api = b'{"stories": ["/story/1.html"]}'

    def through(url: str, ctype: bytes, body: bytes, coding: bytes, **meta: object) -> Response:
        request = Request(url, meta=meta)
        headers = {"Content-Type": ctype, "Content-Encoding": coding}
        return mw.process_response(request, Response(url, body=body, headers=headers))

    # a rendering browser asked: decoded whatever the type, Content-Encoding gone
    got = through(
        "http://h.test/api", b"application/json", zstd.compress(api), b"zstd", hf_browser=1
    )
    assert got.body == api and b"Content-Encoding" not in got.headers
    # extract_js reads scripts
    js = b"var next = '/from-js/page.html';"
    got = through("http://h.test/app.js", b"application/javascript", brotli.compress(js), b"br")
    assert got.body == js
    # nobody reads a JSON the plain crawler fetched: not inflated at all
    got = through("http://h.test/api", b"application/json", zstd.compress(api), b"zstd")
    assert got.body == b"" and b"Content-Encoding" not in got.headers
