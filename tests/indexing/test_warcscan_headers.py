"""The one-pass header parser reads header blocks exactly as warcio (the reference's reader) does.

Why: the fast path (:func:`indexing.record_model._parse_crlf_block`) replaced a regular
expression with per-line ``partition`` for speed; every block it accepts must give warcio's values,
and blocks it
is unsure of (continuations, colon-less lines) must go to the general parser.
"""

from __future__ import annotations

import io

import pytest
from warcio.statusandheaders import StatusAndHeadersParser

from indexing.record_model import WARC_VERSIONS, _parse_crlf_block, parse_headers

BLOCKS = [
    b'HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nETag: "x"\r\n\r\nbody',
    b"HTTP/1.1 301  Moved \r\nLocation:   http://a/b  \r\nlocation: second\r\n\r\n",
    b"HTTP/1.0 404\r\nX-Empty:\r\nX-Tab\t: tabbed\tvalue\t\r\nX-Colons: a:b:c\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\nSET-COOKIE: b=2\r\n\r\n",
    "HTTP/1.1 200 OK\r\nX-Unicode: caf\u00e9 \u00a0\r\n\r\n".encode(),
    b"HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\nX-After: 3\r\n\r\n",  # continuation
    b"HTTP/1.1 200 OK\r\nno colon here\r\nX-After: 3\r\n\r\n",  # colon-less line
    b"HTTP/1.1 200 OK\r\n : starts blank\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Lone-LF: a\nb\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Latin1: caf\xe9\r\n\r\n",
]


def _warcio(block: bytes, statuses: tuple[str, ...] | None) -> tuple[str, str, dict[str, str]]:
    parser = StatusAndHeadersParser(list(statuses) if statuses else [], verify=statuses is not None)
    parsed = parser.parse(io.BytesIO(block))
    names = {name.lower() for name, _ in parsed.headers}
    return (
        parsed.statusline,
        parsed.protocol,
        {n: parsed.get_header(n) for n in names},
    )


@pytest.mark.parametrize("block", BLOCKS)
def test_header_block_reads_as_warcio_reads_it(block: bytes):
    status, protocol, expected = _warcio(block, None)
    parsed, end = parse_headers(block, 0, len(block), final=True, statuses=None)
    assert parsed is not None
    assert (parsed.statusline, parsed.protocol) == (status, protocol)
    assert parsed.by_name == expected
    assert block[end:] == block[block.index(b"\r\n\r\n") + 4 :]


def test_fast_path_takes_plain_blocks_and_declines_odd_ones():
    assert all(_parse_crlf_block(b, 0, len(b), None) is not None for b in BLOCKS[:5])
    assert all(_parse_crlf_block(b, 0, len(b), None) is None for b in BLOCKS[5:])


def test_warc_block_reads_as_warcio_reads_it():
    block = (
        b"WARC/1.1\r\nWARC-Type: response\r\nwarc-type: request\r\n"
        b"WARC-Target-URI: http://example.com/ a\r\nContent-Length:  12 \r\n\r\n"
    )
    _status, protocol, expected = _warcio(block, WARC_VERSIONS)
    parsed, _ = parse_headers(block, 0, len(block), final=True, statuses=WARC_VERSIONS)
    assert parsed is not None
    assert parsed.protocol == protocol
    assert parsed.by_name == expected
