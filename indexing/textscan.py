"""WARC records with their payloads, for text extraction: damaged records named and skipped.

Why not the CDX scanners: those stop at the first damage (a file with damage is quarantined
whole), while extraction must keep every readable document of a file and name the record it
could not read. Records are read with warcio (which also undoes chunked transfer and gzip/br
content encodings); after a damaged record, reading resumes at the next gzip member that starts
a WARC record (the next ``WARC/`` line for an uncompressed file).
"""

from __future__ import annotations

import logging
import mmap
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord

log = logging.getLogger(__name__)

_GZIP_MEMBER = b"\x1f\x8b\x08"
_READ_ERRORS = (ArchiveLoadFailed, zlib.error, EOFError, OSError, ValueError, IndexError)


@dataclass
class Damage:
    """A record that could not be read: where, why, and where reading went on (None: the end)."""

    offset: int
    error: str
    resumed_at: int | None


@dataclass
class Record:
    offset: int
    record: ArcWarcRecord
    payload: bytes | None  # the decoded payload when ``want`` asked for it
    truncated: bool  # the payload is longer than the limit (only the limit was read)


def _next_start(mm: mmap.mmap, after: int, gz: bool) -> int | None:
    """The next offset after ``after`` where a WARC record starts."""
    pos = after + 1
    while True:
        if gz:
            pos = mm.find(_GZIP_MEMBER, pos)
            if pos < 0:
                return None
            try:
                head = zlib.decompressobj(31).decompress(mm[pos : pos + 512], 16)
            except zlib.error:
                head = b""
            if head.startswith(b"WARC/"):
                return pos
        else:
            pos = mm.find(b"WARC/1.", pos)
            if pos < 0:
                return None
            if pos == 0 or mm[pos - 1 : pos] == b"\n":
                return pos
        pos += 1


def _member_ended(it: ArchiveIterator) -> bool:
    """Whether the gzip member just read ended with its trailer.

    warcio goes quietly past a member that never ends: a member cut in the middle of a file is
    decoded on into the next member's bytes, and a zlib error is written to stderr and read as
    the end of the data. Either way the decompressor has not reached the member's end, and the
    record, however whole it looks, is not the one that was written.
    """
    decompressor = getattr(it.reader, "decompressor", None)
    return decompressor is None or bool(getattr(decompressor, "eof", True))


def read_records(
    path: Path, start: int, want: Callable[[ArcWarcRecord], bool], max_payload: int
) -> Iterator[Record | Damage]:
    """Each record from ``start`` (a record boundary), in file order, or a :class:`Damage`."""
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if size == 0:
            return
        fh.seek(0)
        gz = fh.read(2) == b"\x1f\x8b"
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            pos: int | None = start
            while pos is not None and pos < size:
                fh.seek(pos)
                # gzip CRCs and the length check below catch damage; digests are not re-hashed
                it = ArchiveIterator(fh)
                current, in_record = pos, False
                try:
                    for rec in it:
                        current, in_record = it.offset, True
                        payload, truncated = None, False
                        if want(rec):
                            payload = rec.content_stream().read(max_payload + 1)
                            truncated = len(payload) > max_payload
                            payload = payload[:max_payload]
                        it.read_to_end()  # the rest of the record (CRC checked), its end found
                        missing = getattr(rec.raw_stream, "limit", 0)
                        if missing:
                            raise EOFError(
                                f"record cut short: {missing} bytes of its block missing"
                            )
                        if gz and not _member_ended(it):
                            raise EOFError("the record's gzip member does not end (cut or damaged)")
                        in_record = False
                        yield Record(current, rec, payload, truncated)
                    # warcio ends quietly when a record's headers cannot be read: the file ends
                    # inside them, or a cut member runs on into the next one's bytes
                    if it.offset < size and mm[it.offset : size].strip(b"\r\n\t "):
                        nxt = _next_start(mm, it.offset, gz)
                        if nxt is None:
                            missing = size - it.offset
                            why = f"file ends inside a record ({missing} bytes after the last whole one)"
                        else:
                            why = "EOFError: the record's headers could not be read"
                        yield Damage(it.offset, why, nxt)
                        pos = nxt
                        continue
                    return
                except _READ_ERRORS as exc:
                    # damage inside the record being read, or in the headers of the next one
                    bad = current if in_record else it.offset
                    nxt = _next_start(mm, bad, gz)
                    reason = ascii(str(exc))[1:-1][:200]
                    yield Damage(bad, f"{type(exc).__name__}: {reason}", nxt)
                    pos = nxt
