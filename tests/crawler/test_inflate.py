"""crawler.inflate's decoders and budget, one function at a time (the crawl-level proof, with
peak RSS and the archived bytes, is tests/crawler/test_crawl_bombs.py)."""

from __future__ import annotations

import gzip
import zlib

import brotli
from backports import zstd

from crawler.inflate import InflateBudget, Reservation, decode, split_encodings, wants_body
from tests.crawler.hostile import brotli_bomb, deflate_bomb, gzip_bomb

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
