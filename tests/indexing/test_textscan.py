"""Text extraction's record reader names a record cut in the middle of a gzip WARC.

A gzip member cut short and followed by the next member is a case warcio reads past quietly
(about one file in fifteen, depending on the compressed bytes): its decoder runs on into the
next member and either stops without an error or builds a record of the wrong bytes. The file
variants below are made with fixed record ids, so the same bytes are tested on every run, and
the test asserts that some of them are exactly the quiet case.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

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
