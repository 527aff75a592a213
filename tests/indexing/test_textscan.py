"""Text extraction's record reader names a record cut in the middle of a gzip WARC.

A gzip member cut short and followed by the next member is a case warcio reads past quietly
(about one file in fifteen, depending on the compressed bytes): its decoder runs on into the
next member and either stops without an error or builds a record of the wrong bytes. The file
variants below are made with fixed record ids, so the same bytes are tested on every run, and
the test asserts that some of them are exactly the quiet case.
"""

from __future__ import annotations

import gzip
import random
import uuid
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeadersParser

from indexing.textscan import Damage, Record, read_records
from tests.support.corpus import pages, write_pages

VARIANTS = 120


def _members(data: bytes) -> list[int]:
    offsets, pos = [], 0
    while (pos := data.find(b"\x1f\x8b\x08", pos)) >= 0:
        offsets.append(pos)
        pos += 1
    return offsets


def _cut_file(path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, int]:
    """Five pages and a cut last record; the third page's member cut in half. (bytes, its offset)"""
    rng = random.Random(seed)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=rng.getrandbits(128)))
    write_pages(path, pages()[:6], cut_last=True)
    data = path.read_bytes()
    starts = _members(data)
    third = starts[3]
    return data[:third] + data[third : third + (starts[4] - third) // 2] + data[starts[4] :], third


def _warcio_is_quiet(path: Path, cut: int, last: int) -> bool:
    """warcio reads the file without an error and yields the cut record or misses ``last``."""
    offsets = []
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        try:
            for _ in it:
                offsets.append(it.offset)
        except Exception:  # any error: warcio noticed the damage
            return False
    return cut in offsets or last not in offsets


def test_a_member_cut_mid_file_is_named_even_where_warcio_reads_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = 0
    for seed in range(VARIANTS):
        damaged, third = _cut_file(tmp_path / "d.warc.gz", seed, monkeypatch)
        path = tmp_path / "d.warc.gz"
        path.write_bytes(damaged)
        starts = _members(damaged)
        quiet += _warcio_is_quiet(path, third, starts[4])
        out = list(read_records(path, 0, lambda rec: True, 1 << 20))
        damage = [(d.offset, d.resumed_at) for d in out if isinstance(d, Damage)]
        read = [r.offset for r in out if isinstance(r, Record)]
        assert damage == [(third, starts[4]), (starts[-1], None)], (seed, out)
        assert read == [o for o in starts if o not in (third, starts[-1])], (seed, out)
    assert quiet > 0, "no variant hit the case warcio reads past; the test proves nothing"


# ---------------------------------------------------------------------------------------------
# header blocks: the reader's own parser (whole CRLF blocks at once) against warcio's
_BLOCKS = [  # HTTP header blocks of response records (the body follows)
    b'HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nETag: "x"\r\n\r\n<p>a</p>',
    b"HTTP/1.1 301  Moved \r\nLocation:   http://a/b  \r\nlocation: second\r\n\r\n",
    b"HTTP/1.0 404\r\nX-Empty:\r\nX-Tab\t: tabbed\tvalue\t\r\nX-Colons: a:b:c\r\n\r\nnot found",
    "HTTP/1.1 200 OK\r\nX-Unicode: caf\u00e9 \u00a0\r\n\r\nbody".encode(),
    b"HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\n\tthree\r\nX-After: 3\r\n\r\nbody",
    b"HTTP/1.1 200 OK\r\nno colon here\r\n continued\r\nX-After: 3\r\n\r\nbody",
    b"HTTP/1.1 200 OK\r\n : starts blank\r\n\r\nbody",
    b"HTTP/1.1 200 OK\r\nX-Lone-LF: a\nb\r\nX-Lone-CR: a\rb\r\n\r\nbody",
    b"HTTP/1.1 200 OK\r\nX-Latin1: caf\xe9\r\n\r\nbody",
    b"HTTP/1.1 200 OK\nContent-Type: text/plain\n\nLF-only lines",
    b"HTTP/1.1 200 OK\r\nX-Blank-Looking: 1\r\n   \r\nX-After-Blank: 2\r\n\r\nbody",
    b"HTTP/1.1 200 OK\r\n\r\nno headers",
    b"HTTP/1.1 200 OK\r\nX-Big: " + b"v" * 9000 + b"\r\n\r\nbody",  # longer than one peek
    b"HTTP/1.1 200 OK\r\nX-Cut: the record ends inside its headers",
    b"\r\n\r\nblank status line",
]
_WARC_HEADS = [  # extra WARC header lines of each record (read by the same parser)
    b"",
    b"X-Folded: one\r\n two\r\n",
    b"X-Latin1: caf\xe9\r\n",
    b"no colon\r\n",
    b"X-Trailing:   spaced   \r\n",
]


def _record(n: int, kind: str, block: bytes, head: bytes) -> bytes:
    uri = f"http://example.org/{n}".encode()
    return (
        b"WARC/1.0\r\nWARC-Type: " + kind.encode() + b"\r\nWARC-Target-URI: " + uri + b"\r\n"
        b"WARC-Date: 2026-01-01T00:00:00Z\r\n" + head + b"Content-Type: application/http\r\n"
        b"Content-Length: " + str(len(block)).encode() + b"\r\n\r\n" + block + b"\r\n\r\n"
    )


def _odd_warc(path: Path, gz: bool) -> Path:
    records = []
    for n, block in enumerate(_BLOCKS):
        head = _WARC_HEADS[n % len(_WARC_HEADS)]
        records.append(_record(2 * n, "request", b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n", head))
        records.append(_record(2 * n + 1, "response", block, head))
    path.write_bytes(b"".join(gzip.compress(r) if gz else r for r in records))
    return path


def _as_read(rec: Any, payload: bytes | None) -> tuple[Any, ...]:
    def parsed(h: Any) -> Any:
        return None if h is None else (h.protocol, h.statusline, h.total_len, h.headers)

    http = None if rec.rec_type == "request" else parsed(rec.http_headers)
    return rec.rec_type, parsed(rec.rec_headers), http, payload


def _warcio_read(path: Path) -> list[tuple[int, tuple[Any, ...]]]:
    out = []
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        for rec in it:
            offset = it.offset
            payload = rec.content_stream().read() if rec.rec_type == "response" else None
            out.append((offset, _as_read(rec, payload)))
    return out


@pytest.mark.parametrize("gz", [True, False], ids=["gzip", "uncompressed"])
def test_header_blocks_are_read_as_warcio_reads_them(tmp_path: Path, gz: bool) -> None:
    path = _odd_warc(tmp_path / ("odd.warc.gz" if gz else "odd.warc"), gz)
    want = lambda rec: rec.rec_type == "response"  # noqa: E731
    ours = [(r.offset, _as_read(r.record, r.payload)) for r in read_records(path, 0, want, 1 << 20)]
    assert ours == _warcio_read(path)
    assert len(ours) == 2 * len(_BLOCKS)


def test_plain_blocks_are_parsed_whole_and_request_headers_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crawler's blocks (CRLF, UTF-8, one ``name: value`` a line) never go through
    warcio's line-by-line parser; a request comes without HTTP headers (nothing reads them)."""
    records = [
        _record(n, kind, block, b"")
        for n, (kind, block) in enumerate(
            [("request", b"GET /a HTTP/1.1\r\nHost: example.org\r\n\r\n")]
            + [("response", b) for b in _BLOCKS[:4]]
        )
    ]
    path = tmp_path / "plain.warc.gz"
    path.write_bytes(b"".join(gzip.compress(r) for r in records))
    calls = []
    line_parser = StatusAndHeadersParser.parse

    def counted(self: Any, stream: Any, full_statusline: Any = None) -> Any:
        calls.append(type(self).__name__)
        return line_parser(self, stream, full_statusline)

    monkeypatch.setattr(StatusAndHeadersParser, "parse", counted)
    got = list(read_records(path, 0, lambda rec: rec.rec_type == "response", 1 << 20))
    assert [r.record.rec_type for r in got] == ["request"] + ["response"] * 4
    assert got[0].record.http_headers is None
    assert [r.record.http_headers.get_statuscode() for r in got[1:]] == ["200", "301", "404", "200"]
    assert len(calls) == 1, calls  # only the try past the last record (warcio's EOFError)
