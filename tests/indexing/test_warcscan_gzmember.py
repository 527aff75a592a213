"""The C member path (indexing/_gzmember.c: libdeflate inflate, header blocks parsed in C) gives
exactly what the streaming path and the reference give, and a damaged member is still caught."""

from __future__ import annotations

import gzip
import importlib
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from indexing import gzmembers
from indexing.cdx import index_warc
from indexing.record_model import WARC_VERSIONS, _parse_crlf_block
from tests.support.cdx_oracle import reference_lines
from tests.support.warcgen import write_warc


def _inflater() -> Any:
    assert gzmembers.Inflater is not None, "indexing._gzmember not compiled: pip install -e ."
    return gzmembers.Inflater()


def test_the_extension_is_built_and_used_by_the_scanner() -> None:
    # without it every indexing test would run the streaming path only
    assert gzmembers.Inflater is importlib.import_module("indexing._gzmember").Inflater


def _member_offsets(warc: Path) -> list[int]:
    """Every gzip member's start, found by Python's own gzip reader (member by member)."""
    data = warc.read_bytes()
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        d = zlib.decompressobj(31)
        d.decompress(data[pos:])
        pos = len(data) - len(d.unused_data)
    return starts


def test_each_member_inflates_to_what_gzip_gives_and_ends_where_the_next_starts(
    tmp_path: Path,
) -> None:
    warc = write_warc(tmp_path / "m.warc.gz", n=20)
    data = warc.read_bytes()
    starts = _member_offsets(warc)
    inf = _inflater()
    for start, nxt in zip(starts, [*starts[1:], len(data)], strict=True):
        end, size = inf.member(data, start, 1 << 25)
        plain = gzip.decompress(data[start:nxt])
        assert (end, size) == (nxt, len(plain))
        assert inf.copy(0, size) == plain
    assert inf.member(data, starts[3], 10) is None  # over the limit: left to the streaming path


BLOCKS = [
    b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 5\r\nwarc-type: second\r\n\r\n",
    b"warc/1.1  x \r\nWARC-Type:\tresource\t\r\nContent-Length :7\r\n\r\n",
    b'HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nETag: "x"\r\n\r\nbody',
    b"HTTP/1.1 301  Moved \r\nLocation:   http://a/b  \r\nlocation: second\r\n\r\n",
    b"HTTP/1.0 404\r\nX-Empty:\r\nX-Tab\t: tabbed\tvalue\t\r\nX-Colons: a:b:c\r\n\r\n",
    b"HTTP/1.1\r\nX-Ctl: \x0b\x1cv\x1f\x0c \r\n\r\n",  # Python's str.strip() strips \x1c-\x1f
    b"HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\n\r\n",  # continuation: general parser
    b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n : starts blank\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Lone-LF: a\nb\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Lone-CR: a\rb\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Latin1: caf\xe9\r\n\r\n",
    "HTTP/1.1 200 OK\r\nX-Unicode: caf\u00e9\r\n\r\n".encode(),
    b" \t\r\nX: y\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX: no end of block\r\n",
]


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("warc", [True, False], ids=["warc", "http"])
def test_c_header_blocks_read_as_the_python_parser_reads_them(block: bytes, warc: bool) -> None:
    inf = _inflater()
    inf.member(gzip.compress(block), 0, 1 << 20)
    statuses = WARC_VERSIONS if warc else None
    try:
        want = _parse_crlf_block(block, 0, len(block), statuses)
    except ValueError:  # not a WARC version line: the general parser says what it is
        want = None
    got = inf.headers(0, len(block), warc)
    names = ("content-length", "location", "x-empty", "absent")
    picked = inf.headers(0, len(block), warc, names)
    if got is None:  # declined: the Python parser reads it (never a block it reads fast)
        assert want is None or not block.isascii()
        assert picked is None  # declined whichever names are asked for
        return
    assert want is not None
    headers, end = want
    assert got == (headers.protocol, headers.statusline, headers.by_name, end)
    # asked for some names only: those of them the block has, the same values, nothing else
    kept = {k: v for k, v in headers.by_name.items() if k in names}
    assert picked == (*got[:2], kept, end)


def test_a_member_with_a_bad_crc_is_damage_at_its_offset_and_the_rest_is_indexed(
    oracle: Path, tmp_path: Path
) -> None:
    good = write_warc(tmp_path / "good.warc.gz", n=60)
    reference = reference_lines(oracle, good, "cdxj")
    indexed = sorted({int(line.split('"offset": "')[1].split('"')[0]) for line in reference})
    starts = _member_offsets(good)
    target = indexed[10]
    nxt = starts[starts.index(target) + 1]
    data = bytearray(good.read_bytes())
    data[nxt - 8] ^= 0xFF  # the member's CRC-32: its deflate data still inflates
    bad = tmp_path / "crc.warc.gz"
    bad.write_bytes(bytes(data))
    assert _inflater().member(bytes(data), target, 1 << 25) is None
    # the reference (no CRC check) loses its way after the damaged member and stops with an
    # error, after the lines before it
    ref = subprocess.run(
        [str(oracle / "bin" / "cdxj-indexer"), str(bad)], capture_output=True, text=True
    )
    assert ref.returncode != 0
    before = [line.replace(bad.name, good.name) for line in ref.stdout.splitlines()]
    assert len(before) == 10 and before == reference[:10]
    # ours names the member and its offset, and keeps every other record
    result = index_warc(bad)
    (damage,) = result.damages
    assert damage.offset == target
    assert "Incorrect checksum" in damage.reason
    assert f"next record at byte {nxt}" in damage.reason
    assert result.lines("cdxj", good.name) == [
        line for line in reference if f'"offset": "{target}"' not in line
    ]


def test_members_over_the_limit_are_streamed_with_the_same_lines(
    oracle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warc = write_warc(tmp_path / "big.warc.gz", n=40, seed=5)
    reference = reference_lines(oracle, warc, "cdxj")
    monkeypatch.setattr(gzmembers, "WHOLE_MAX", 2000)
    sizes = [len(gzip.decompress(warc.read_bytes()[a:b])) for a, b in _pairs(warc)]
    assert min(sizes) < 2000 < max(sizes)  # both paths in one file
    assert index_warc(warc).lines("cdxj") == reference


def _pairs(warc: Path) -> list[tuple[int, int]]:
    starts = _member_offsets(warc)
    return list(zip(starts, [*starts[1:], warc.stat().st_size], strict=True))
