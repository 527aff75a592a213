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
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BufferedReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.limitreader import LimitReader
from warcio.recordloader import ArcWarcRecord, ArcWarcRecordLoader
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser

from indexing.record_model import crlf_header_pairs, crlf_text

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


HEAD_PEEK = 8192  # bytes of the reader's buffer looked at for a whole header block


class _Parser(StatusAndHeadersParser):
    """warcio's header parser, taking a header block held whole in the reader's buffer at once.

    Why: warcio reads headers a line at a time through three Python layers (a limit reader, a
    decompressing reader, a BytesIO), which was most of the CPU of reading a WARC (measured on
    a crawl's WARC). The common block (UTF-8, every line ended by CRLF, each a ``name: value``
    line) is decoded at once and split into the same ``StatusAndHeaders`` warcio makes; any
    other block (a continuation or blank-looking line, another encoding or line end, a block
    not whole in the buffer or longer than its record) is left to warcio's own ``parse``.
    """

    def parse(self, stream: Any, full_statusline: Any = None) -> StatusAndHeaders:
        reader, limit = stream, HEAD_PEEK
        if type(stream) is LimitReader:
            reader, limit = stream.stream, min(limit, stream.limit)
        statusline = full_statusline
        if type(statusline) is bytes:  # the line after the blank ones (uncompressed WARCs)
            try:
                statusline = statusline.decode("utf-8")
            except UnicodeDecodeError:
                statusline = None
        if not isinstance(reader, BufferedReader) or (statusline is None) != (
            full_statusline is None
        ):
            return super().parse(stream, full_statusline)
        reader._fillbuff()
        got = None if reader.empty() else self._whole_block(reader.buff, limit, statusline)
        if got is None:
            return super().parse(stream, full_statusline)
        if type(stream) is LimitReader:
            stream.limit -= got[1]
        return got[0]

    def _whole_block(
        self, buff: Any, limit: int, statusline: str | None
    ) -> tuple[StatusAndHeaders, int] | None:
        """The headers at the buffer's position and their size, the buffer moved past them
        (None, the buffer left where it was: not a block this parser reads)."""
        start = buff.tell()
        chunk = buff.read(limit)
        buff.seek(start)
        stop = chunk.find(b"\r\n\r\n")
        if stop < 0:
            return None
        text = crlf_text(chunk[:stop])
        if text is None:
            return None
        lines = text.split("\r\n")
        total = len(text) + 4
        if statusline is None:
            statusline = lines.pop(0)
        else:
            total += len(statusline)
        first = statusline.rstrip()
        if not first:
            return None
        if self.verify:
            first_fields = self.split_prefix(first, self.statuslist)
            if not first_fields:
                return None  # warcio raises, naming the line
        else:
            first_fields = first.split(" ", 1)
        headers = crlf_header_pairs(lines)
        if headers is None:
            return None
        rest = first_fields[1].strip() if len(first_fields) > 1 else ""
        parsed = StatusAndHeaders(rest, [], protocol=first_fields[0], total_len=total)
        parsed.headers = headers  # already str pairs: warcio's conversion loop skipped
        buff.seek(start + stop + 4)
        return parsed, stop + 4


class _Loader(ArcWarcRecordLoader):
    """warcio's record loader, minus the HTTP headers of request records.

    Why: no reader of this module looks at a request (extraction wants responses and revisits),
    and parsing a request's headers in Python was a fifth of all header parsing (measured on
    a crawl's WARC). The request's block is still read to its end, so lengths and gzip CRCs are
    checked as before.
    """

    def __init__(self) -> None:
        super().__init__()
        self.warc_parser = _Parser(self.WARC_TYPES)
        self.http_parser = _Parser(self.HTTP_TYPES, False)

    def load_http_headers(self, rec_type: str, uri: str, stream: object, length: object) -> object:
        if rec_type == "request":
            return None
        return super().load_http_headers(rec_type, uri, stream, length)


def _iterator(fh: object) -> ArchiveIterator:
    it = ArchiveIterator(fh)
    it.loader = _Loader()
    return it


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
    """Each record from ``start`` (a record boundary), in file order, or a :class:`Damage`.

    A request record comes without its HTTP headers (``http_headers`` is None): see ``_Loader``.
    """
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
                it = _iterator(fh)
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
