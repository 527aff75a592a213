"""General WARC scanner on warcio, reading records exactly the way the reference indexer does.

Why: the fast scanner (:mod:`indexing.warcscan`) only takes the common, well-formed layout (one
gzip member per record). Every other file (uncompressed WARCs, odd members, missing lengths) is
read here with warcio's ``ArchiveIterator`` configured like cdxj-indexer (record parsing on, HTTP
status lines not verified), so that both paths give the reference's lines.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordbuilder import RecordBuilder

from harvestflow.formats.cdx import mime_of
from indexing.capture import INDEXED_TYPES, Capture, NotAWarcError, WarcDamage


def _is_indexed(record: object) -> bool:
    rec_type = record.rec_type  # type: ignore[attr-defined]
    if rec_type not in INDEXED_TYPES:
        return False
    return not (
        rec_type in ("resource", "metadata")
        and record.rec_headers.get_header("Content-Type")  # type: ignore[attr-defined]
        == "application/warc-fields"
    )


def _payload_digest(record: object, builder: RecordBuilder) -> str | None:
    headers = record.rec_headers  # type: ignore[attr-defined]
    value = headers.get_header("WARC-Payload-Digest")
    if not value:
        # computes sha1 over the rest of the record (payload after the HTTP headers)
        builder.ensure_digest(record, block=False, payload=True)
        value = headers.get_header("WARC-Payload-Digest")
    return value


def _missing(stream: object) -> int:
    """Bytes of a record's block (its ``LimitReader``, read to the end) that the file lacks."""
    return max(int(getattr(stream, "limit", 0) or 0), 0)


def _tail_is_data(fh: BinaryIO, start: int, size: int) -> bool:
    """True when ``fh[start:size]`` holds more than blank lines."""
    fh.seek(start)
    return bool(fh.read(min(size - start, 1 << 16)).strip())


def _header_block_ends(fh: BinaryIO, record: object, it: ArchiveIterator) -> bool:
    """False for a record (uncompressed file) whose WARC header block the file cuts short.

    A record with a Content-Length always had its header block ended (warcio found the length
    in it); one without may be a header block that ran into the end of the file.
    """
    declared = record.rec_headers.get_header("Content-Length")  # type: ignore[attr-defined]
    if declared and declared.strip().isdigit():
        return True
    start, length = it.get_record_offset(), it.get_record_length()
    here = fh.tell()
    fh.seek(start)
    head = fh.read(min(length, 1 << 22))
    fh.seek(here)
    return b"\r\n\r\n" in head or b"\n\n" in head


def _damage(offset: int, exc: BaseException) -> WarcDamage:
    reason = " ".join(str(exc).split())[:300] or type(exc).__name__
    if isinstance(exc, (AttributeError, TypeError, KeyError, IndexError)):
        # warcio itself fails on some cut or garbled header blocks (e.g. a truncated record
        # whose WARC-Target-URI never arrived): say so in words, not as a traceback
        reason = f"unreadable WARC record ({type(exc).__name__} in warcio: {reason})"
    return WarcDamage(offset, reason)


def scan_reference(path: Path) -> Iterator[Capture]:
    """Yield a :class:`Capture` per indexed record, raising like :func:`warcscan.scan_gzip`.

    Damage (whatever warcio raises on bytes it cannot parse, or a record whose block ends before
    its Content-Length) raises :class:`WarcDamage` at the damaged record's offset, after the
    captures of the records before it; the damaged record itself is not indexed.
    """
    builder = RecordBuilder()
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        plain = os.pread(fh.fileno(), 2, 0) != b"\x1f\x8b"  # uncompressed: offsets are bytes
        fh.seek(0)
        it = ArchiveIterator(fh, no_record_parse=False, arc2warc=False, verify_http=False)
        first = True
        while True:
            offset = it.offset  # start of the record about to be read
            try:
                record = next(it)
            except StopIteration:
                # warcio ends quietly on a header block cut by the end of the file: bytes left
                # over after the last record read are a truncated record
                if plain and it.offset < size and _tail_is_data(fh, it.offset, size):
                    raise WarcDamage(
                        it.offset, "truncated record (the file ends inside its header block)"
                    ) from None
                return
            except Exception as exc:  # any parse failure of warcio is damage
                if first and isinstance(exc, ArchiveLoadFailed):
                    reason = " ".join(str(exc).split())[:300]
                    raise NotAWarcError(f"not a WARC file: {reason}") from exc
                raise _damage(offset, exc) from exc
            if record.format != "warc":
                raise NotAWarcError(f"not a WARC file: {record.format.upper()} record found")
            first = False
            block = record.raw_stream  # ensure_digest may replace it with a copy it read
            try:
                capture = _capture(record, it, builder) if _is_indexed(record) else None
                it.read_to_end()
            except (ArchiveLoadFailed, zlib.error, EOFError, ValueError, OSError) as exc:
                raise _damage(offset, exc) from exc
            if plain and not _header_block_ends(fh, record, it):
                raise WarcDamage(offset, "truncated record (the file ends inside its header block)")
            missing = _missing(block)
            if missing:
                raise WarcDamage(
                    offset, f"truncated record (file ends {missing} bytes before its end)"
                )
            if capture is not None:
                yield capture


def _capture(record: object, it: ArchiveIterator, builder: RecordBuilder) -> Capture:
    rec_type = record.rec_type  # type: ignore[attr-defined]
    http = record.http_headers  # type: ignore[attr-defined]
    rec_headers = record.rec_headers  # type: ignore[attr-defined]
    if rec_type == "revisit":
        mime: str | None = "warc/revisit"
    elif rec_type in ("response", "request"):
        mime = mime_of(http.get_header("content-type")) if http else None
    else:
        mime = mime_of(rec_headers.get_header("content-type"))
    status = None
    if rec_type in ("response", "revisit") and http:
        status = http.get_statuscode()
    digest = _payload_digest(record, builder)
    return Capture(
        rec_type,
        rec_headers.get_header("WARC-Target-URI"),
        rec_headers.get_header("WARC-Date"),
        mime,
        status,
        digest,
        it.get_record_offset(),
        it.get_record_length(),
        rec_headers.get_header("WARC-Record-ID"),
        http.get_header("etag") if http else None,
        http.get_header("last-modified") if http else None,
    )
