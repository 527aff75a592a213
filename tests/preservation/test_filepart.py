"""A file part as a request body: the bytes of its range, rewound for a retry, never short."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from preservation.errors import ChecksumMismatch
from preservation.filepart import FilePart


def test_a_part_reads_its_range_in_blocks_and_rewinds_for_a_retry(tmp_path: Path) -> None:
    path = tmp_path / "f.warc.gz"
    data = os.urandom(10_000)
    path.write_bytes(data)
    with path.open("rb") as fh:
        part = FilePart(path, fh.fileno(), 4_000, 3_000)
        assert len(part) == 3_000
        blocks = [part.read(1_024) for _ in range(4)]
        assert b"".join(blocks) == data[4_000:7_000] and blocks[-1] == b""
        assert part.seek(0) == 0 and part.tell() == 0
        assert part.read() == data[4_000:7_000]  # a second attempt sends the whole part again
        part.seek(0, 2)
        assert part.read(10) == b""


def test_a_file_that_shrank_under_a_part_is_refused_not_sent_short(tmp_path: Path) -> None:
    path = tmp_path / "f.warc.gz"
    path.write_bytes(os.urandom(10_000))
    with path.open("r+b") as fh:
        part = FilePart(path, fh.fileno(), 8_000, 2_000)
        fh.truncate(9_000)
        with pytest.raises(ChecksumMismatch, match="shorter than when staged"):
            part.read(4_096)
