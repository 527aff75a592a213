"""The render proxy answers a browser's byte-range request from the whole resource the crawl
archived (crawler/rendering/proxy.py ``ranged``), as nginx answers one from the file: the range
asked (206, Content-Range), the end of the file for an open or suffix range, 416 past the end;
and leaves alone what it cannot cut exactly (several ranges, a body still content-coded, a
status other than 200, a POST)."""

from __future__ import annotations

from crawler.rendering.proxy import ProxyRequest, ProxyResponse, ranged

BODY = bytes(range(100))
WHOLE = ProxyResponse(200, [("Content-Type", "audio/wav"), ("Content-Length", "100")], BODY)


def ask(value: str, method: str = "GET", response: ProxyResponse = WHOLE) -> ProxyResponse:
    return ranged(ProxyRequest(method, "http://a.test/clip.wav", [("Range", value)]), response)


def header(response: ProxyResponse, name: str) -> str | None:
    return next((v for k, v in response.headers if k.lower() == name), None)


def test_a_range_is_cut_from_the_whole_body_with_its_content_range():
    for asked, first, last in (
        ("bytes=0-", 0, 99),
        ("bytes=10-19", 10, 19),
        ("bytes=90-500", 90, 99),
        ("bytes=-5", 95, 99),
        ("BYTES = 3 - 3", 3, 3),
    ):
        got = ask(asked)
        assert (got.status, got.body) == (206, BODY[first : last + 1]), asked
        assert header(got, "content-range") == f"bytes {first}-{last}/100", asked
        assert header(got, "accept-ranges") == "bytes"
        assert header(got, "content-type") == "audio/wav"


def test_a_range_past_the_end_is_refused_with_the_size():
    for asked in ("bytes=100-", "bytes=-0"):
        got = ask(asked)
        assert (got.status, got.body, header(got, "content-range")) == (416, b"", "bytes */100")


def test_what_cannot_be_cut_exactly_is_given_whole():
    coded = ProxyResponse(200, [("Content-Encoding", "zstd")], b"\x28\xb5\x2f\xfd")
    partial = ProxyResponse(206, [("Content-Range", "bytes 0-9/100")], BODY[:10])
    for got, expected in (
        (ask("bytes=0-1,5-6"), WHOLE),
        (ask("items=0-5"), WHOLE),
        (ask("bytes=-"), WHOLE),
        (ask("bytes=10-5"), WHOLE),
        (ask("bytes=0-5", "POST"), WHOLE),
        (ask("bytes=0-1", response=coded), coded),
        (ask("bytes=0-1", response=partial), partial),
    ):
        assert got is expected
    plain = ranged(ProxyRequest("GET", "http://a.test/clip.wav", []), WHOLE)
    assert plain is WHOLE
