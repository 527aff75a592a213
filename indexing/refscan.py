"""General WARC and ARC scanner on warcio, reading records exactly the way the reference
indexer does.

Why: the fast scanner (:mod:`indexing.warcscan`) only takes the common, well-formed layout (one
gzip member per record). Every other file (uncompressed WARCs, odd members, missing lengths, ARC
files) is read here with warcio's ``ArchiveIterator`` configured like cdxj-indexer (record
parsing on, HTTP status lines not verified, ARC records converted to WARC ones), so that both
paths give the reference's lines.

Unlike the reference, a record whose length does not land on the next record (warcio then skips a
line with a warning, and may read the next records wrongly or not at all) is damage: it is
reported with its offset and the scan resumes at the next valid record header.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordbuilder import RecordBuilder

from harvestflow.formats.cdx import mime_of
from indexing.boundaries import (
    bad_arc_line,
    bad_header,
    find_bytes,
    next_header,
    off_boundary,
    resync_from,
)
from indexing.record_model import (
    INDEXED_TYPES,
    MAX_REQUEST_BODY,
    Capture,
    NotAWarcError,
    RequestBody,
    WarcDamage,
)


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


class _QuietIterator(ArchiveIterator):
    """warcio's iterator without its stderr warning on a bad record end (we report it)."""

    INC_RECORD = ""


def scan_reference(path: Path, *, arc: bool = False) -> Iterator[Capture | WarcDamage]:
    """Yield a :class:`Capture` per record (``indexed`` False for those that get no line) and a
    :class:`WarcDamage` per damaged spot.

    ``arc``: the file is an ARC file (read as warcio's ``arc2warc`` does, like the reference
    indexer). Damage (whatever warcio raises on bytes it cannot parse, a record whose block ends
    before its Content-Length, or, in an uncompressed file, a record whose Content-Length does
    not land on a record boundary) is yielded at the damaged record's offset; the damaged record
    itself is not indexed. In an uncompressed file the scan then resynchronises on the next
    valid record header after the damaged record's header (so a Content-Length that swallowed
    the records after it loses none of them) and goes on; in a gzipped one on the next gzip
    member that reads.
    """
    builder = RecordBuilder()
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        plain = os.pread(fh.fileno(), 2, 0) != b"\x1f\x8b"  # uncompressed: offsets are bytes
        start: int | None = 0
        pending: WarcDamage | None = None  # gzip: reported once a member reads again
        while start is not None:
            damage, read = yield from _scan_from(fh, start, size, plain, arc, builder)
            if pending is not None and (read or damage is None or damage.offset != start):
                yield WarcDamage(pending.offset, f"{pending.reason} (next record at byte {start})")
                pending = None
            if damage is None:
                return
            if plain:
                start = next_header(fh, resync_from(fh, damage.offset, arc), size, arc)
                after = "no record after it" if start is None else f"next record at byte {start}"
                yield WarcDamage(damage.offset, f"{damage.reason} ({after})")
                continue
            # gzip: the next member start (1f 8b 08); a false match, those bytes inside
            # compressed data, fails at once and the search goes on
            pending = pending or damage
            start = find_bytes(fh, b"\x1f\x8b\x08", damage.offset + 1, size)
            if start is None:
                yield WarcDamage(pending.offset, f"{pending.reason} (no record after it)")


def _scan_from(
    fh: BinaryIO, start: int, size: int, plain: bool, arc: bool, builder: RecordBuilder
) -> Generator[Capture, None, tuple[WarcDamage | None, int]]:
    """Captures from ``start`` on; returns the damage that stopped the scan (None: the end of
    the file) and how many records were read before it."""
    damage = yield from _scan_records(fh, start, size, plain, arc, builder, read := [0])
    return damage, read[0]


def _scan_records(
    fh: BinaryIO,
    start: int,
    size: int,
    plain: bool,
    arc: bool,
    builder: RecordBuilder,
    read: list[int],
) -> Generator[Capture, None, WarcDamage | None]:
    fh.seek(start)
    it = _QuietIterator(fh, no_record_parse=False, arc2warc=arc, verify_http=False)
    first = start == 0
    while True:
        offset = it.offset  # start of the record about to be read
        errors = it.err_count
        try:
            record = next(it)
        except StopIteration:
            # warcio ends quietly on a header block cut by the end of the file: bytes left
            # over after the last record read are a truncated record
            if plain and it.offset < size and _tail_is_data(fh, it.offset, size):
                return WarcDamage(
                    it.offset, "truncated record (the file ends inside its header block)"
                )
            return None
        except Exception as exc:  # any parse failure of warcio is damage
            if first and isinstance(exc, ArchiveLoadFailed):
                reason = " ".join(str(exc).split())[:300]
                raise NotAWarcError(f"not a WARC or ARC file: {reason}") from exc
            return _damage(offset, exc)
        if record.format != "warc":  # an ARC record in a file sniffed as WARC
            return WarcDamage(offset, f"{record.format.upper()} record in a WARC file")
        separator = 4
        if plain and arc:
            why = bad_arc_line(fh, offset)
            if why is not None:
                return WarcDamage(offset, why)
        elif plain:
            why, separator = bad_header(fh, offset, record)
            if why is not None:
                return WarcDamage(offset, why)
        first = False
        block = record.raw_stream  # ensure_digest may replace it with a copy it read
        try:
            capture = _capture(record, it, builder) if _is_indexed(record) else _other(record, it)
            it.read_to_end()
        except (ArchiveLoadFailed, zlib.error, EOFError, ValueError, OSError) as exc:
            return _damage(offset, exc)
        if plain and not arc and not _header_block_ends(fh, record, it):
            return WarcDamage(offset, "truncated record (the file ends inside its header block)")
        missing = _missing(block)
        if missing:
            return WarcDamage(
                offset, f"truncated record (file ends {missing} bytes before its end)"
            )
        if plain and off_boundary(fh, size, it, offset, errors, arc, separator):
            # the bytes after the block are not the record separator: the block's declared
            # length does not end where the record ends (bytes inserted, lost or overwritten)
            declared = record.rec_headers.get_header("Content-Length")
            return WarcDamage(
                offset,
                f"record length {declared} does not end on a record boundary (no record"
                f" separator at byte {offset + it.get_record_length()})",
            )
        read[0] += 1
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
        rec_type=rec_type,
        url=rec_headers.get_header("WARC-Target-URI"),
        date=rec_headers.get_header("WARC-Date"),
        mime=mime,
        status=status,
        digest=digest,
        offset=it.get_record_offset(),
        length=it.get_record_length(),
        record_id=rec_headers.get_header("WARC-Record-ID"),
        etag=http.get_header("etag") if http else None,
        last_modified=http.get_header("last-modified") if http else None,
        concurrent_to=rec_headers.get_header("WARC-Concurrent-To"),
    )


def _other(record: object, it: ArchiveIterator) -> Capture:
    """A record that gets no line, kept for the pairing of requests and responses; a POST/PUT
    request with its body as the reference reads it (``content_stream``: codings removed)."""
    rec_headers = record.rec_headers  # type: ignore[attr-defined]
    http = record.http_headers  # type: ignore[attr-defined]
    request = None
    if record.rec_type == "request" and http is not None:  # type: ignore[attr-defined]
        method = http.protocol
        if method.upper() in ("POST", "PUT"):
            body = record.content_stream().read(MAX_REQUEST_BODY)  # type: ignore[attr-defined]
            request = RequestBody(
                method, http.get_header("Content-Type"), http.get_header("Content-Length"), body
            )
    return Capture(
        rec_type=record.rec_type,  # type: ignore[attr-defined]
        url=rec_headers.get_header("WARC-Target-URI"),
        date=rec_headers.get_header("WARC-Date"),
        mime=None,
        status=None,
        digest=None,
        offset=it.get_record_offset(),
        length=it.get_record_length(),
        record_id=rec_headers.get_header("WARC-Record-ID"),
        concurrent_to=rec_headers.get_header("WARC-Concurrent-To"),
        indexed=False,
        request=request,
    )
