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
import re
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordbuilder import RecordBuilder

from indexing.capture import INDEXED_TYPES, Capture, NotAWarcError, WarcDamage, mime_of


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


# a record's first line: a WARC version line, or an ARC v1 header line
# (``URL IP-address Archive-date Content-type Archive-length``, the URL may hold spaces)
_WARC_LINE = re.compile(rb"WARC/(?:1\.0|1\.1|0\.17|0\.18)\r?\n")
_ARC_LINE = re.compile(rb"\S[^\n]* \S+ \d{12,18} \S* ?\d+\r?\n")
_ARC_LIKE = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*:\S* ")  # starts with a URL and a space
_RESYNC_WINDOW = 1 << 20
HEADER_MAX = 1 << 22
_FIELD = rb"[^\x00-\x08\x0a-\x1f\x7f]*"  # a field value: no control character but TAB
_HEADER_BLOCK = re.compile(
    rb"WARC/(?:1\.0|1\.1|0\.17|0\.18)(\r?\n)"
    rb"(?:(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+:|[ \t])" + _FIELD + rb"\r?\n)*\r?\n\Z"
)
_WARC_TYPES = frozenset(
    (
        "warcinfo",
        "response",
        "resource",
        "request",
        "metadata",
        "revisit",
        "conversion",
        "continuation",
    )
)
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_VERSION_LINES = tuple(v + b"\r\n" for v in (b"WARC/1.0", b"WARC/1.1", b"WARC/0.17", b"WARC/0.18"))
_MANDATORY = ("warc-type", "warc-record-id", "warc-date", "content-length")
_WARC_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z\Z")


def _resync_from(fh: BinaryIO, start: int, arc: bool) -> int:
    """Where to look for the next record after damage at ``start``: after the damaged record's
    header block (its length cannot be trusted, and may have swallowed the next records), or
    right after ``start`` when no WARC record starts there (junk bytes before a record)."""
    head = os.pread(fh.fileno(), 1 << 16, start)
    if head.startswith(b"WARC/"):
        for sep in (b"\r\n\r\n", b"\n\n"):
            idx = head.find(sep)
            if idx >= 0:
                return start + idx + len(sep)
    if not arc:
        return start + 1
    nl = head.find(b"\n")
    return start + (nl + 1 if nl >= 0 else len(head))


def _next_header(fh: BinaryIO, start: int, size: int, arc: bool) -> int | None:
    """The offset of the first valid record start line at or after ``start`` (None: none)."""
    pattern = _ARC_LINE if arc else _WARC_LINE
    lead = b"\n" if arc else b"WARC/"
    skip = 1 if arc else 0  # an ARC header starts a line; a WARC one may follow junk bytes
    pos = start
    while pos < size:
        chunk = os.pread(fh.fileno(), _RESYNC_WINDOW + 4096, pos)
        if not chunk:
            return None
        idx = chunk.find(lead)
        while 0 <= idx < _RESYNC_WINDOW:
            if pattern.match(chunk, idx + skip):
                return pos + idx + skip
            idx = chunk.find(lead, idx + 1)
        pos += _RESYNC_WINDOW
    return None


def _bad_arc_line(fh: BinaryIO, offset: int) -> str | None:
    """Why the ARC record header line at ``offset`` is invalid, or None.

    warcio reads any line with five fields as an ARC header (junk included, and a length of
    ``-1`` or ``abc`` as an empty record): the line must end with a date of 12 to 18 digits
    (14 in ARC v1; some writers wrote more, which the reference truncates), a content type and
    a non-negative length.
    """
    line = os.pread(fh.fileno(), 4096, offset).split(b"\n", 1)[0]
    if _ARC_LINE.match(line + b"\n"):
        return None
    return f"invalid ARC record header line {line[:120].decode('latin-1')!r}"


def _bad_header(fh: BinaryIO, offset: int, record: object, size: int = 0) -> tuple[str | None, int]:
    """Why the WARC header block at ``offset`` (uncompressed file) is damaged, or None; and the
    separator length its writer uses (4: CRLF CRLF, 2: a writer of LF-only lines).

    warcio reads a garbled block without a word (a line without a colon is dropped, a damaged
    WARC-Type makes a record silently unindexed): the block must be well-formed, with the
    mandatory fields of ISO 28500 and a known record type. One ``pread`` of the header bytes
    (``size``: how many; by default twice what warcio read, in characters).
    """
    size = size or (record.rec_headers.total_len or 0) * 2 + 256  # type: ignore[attr-defined]
    head = os.pread(fh.fileno(), size, offset)
    headers = record.rec_headers  # type: ignore[attr-defined]
    stop, separator = head.find(b"\r\n\r\n"), 4
    block = head[: stop + 4]
    lines = block.count(b"\n")
    # the common case without a regular expression over the block: CRLF line ends only (as
    # many CRs as LFs), no control character, as many lines as fields warcio kept (it drops a
    # line without a colon), and the exact version line (warcio takes "WARC/1.0junk")
    plain = (
        stop >= 0
        and block.count(b"\r") == lines
        and lines - 2 == len(headers.headers)
        and block.startswith(_VERSION_LINES)
        and not _CONTROL.search(block)
    )
    if not plain:
        lf = head.find(b"\n\n")
        if lf >= 0 and (stop < 0 or lf < stop):  # a writer of LF-only lines
            stop, separator = lf, 2
        elif stop < 0 and len(head) == size < HEADER_MAX:  # a very long block
            return _bad_header(fh, offset, record, HEADER_MAX)
        block = head[: stop + separator] if stop >= 0 else head
    if not plain and not _HEADER_BLOCK.fullmatch(block):
        return "malformed WARC header block (a line that is not a field)", separator
    fields = dict.fromkeys(_MANDATORY, "")
    for name, value in headers.headers:
        key = name.lower()
        if key in fields and not fields[key]:
            fields[key] = value
    rec_type = fields["warc-type"]
    if rec_type not in _WARC_TYPES:
        return f"unknown WARC-Type {rec_type[:40]!r}", separator
    if not fields["warc-record-id"]:
        return "no WARC-Record-ID", separator
    if not _WARC_DATE.match(fields["warc-date"]):
        return f"invalid WARC-Date {fields['warc-date'][:40]!r}", separator
    if not fields["content-length"].isdigit():
        return "invalid Content-Length", separator
    return None, separator


def _off_boundary(
    fh: BinaryIO,
    size: int,
    it: ArchiveIterator,
    offset: int,
    errors: int,
    arc: bool,
    separator: int = 4,
) -> bool:
    """True when a record's block (uncompressed file) does not end on the record separator.

    warcio counts a record followed by a line that is not blank (``err_count``), then skips
    that line; between a WARC record and the next one the separator is exactly CRLF CRLF (a
    Content-Length a few bytes short would otherwise pass as extra blank lines). Cheap: both are
    numbers warcio keeps anyway. ``separator``: 2 for a writer of LF-only lines.
    """
    if it.err_count != errors:
        return True
    gap = it.offset - (offset + it.get_record_length())
    if not arc:
        return gap != separator
    # ARC writers end a record with one LF, some with none or more blank lines, so the gap
    # proves little: the record's length must land on an ARC header line (or the end); one
    # that starts like a header but is invalid is the next record's damage, not this one's
    if it.offset >= size:
        return False
    line = os.pread(fh.fileno(), 4096, it.offset).split(b"\n", 1)[0]
    return not (_ARC_LIKE.match(line) and line.count(b" ") >= 4)


def scan_reference(path: Path, *, arc: bool = False) -> Iterator[Capture | WarcDamage]:
    """Yield a :class:`Capture` per indexed record and a :class:`WarcDamage` per damaged spot.

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
                start = _next_header(fh, _resync_from(fh, damage.offset, arc), size, arc)
                after = "no record after it" if start is None else f"next record at byte {start}"
                yield WarcDamage(damage.offset, f"{damage.reason} ({after})")
                continue
            # gzip: the next member start (1f 8b 08); a false match, those bytes inside
            # compressed data, fails at once and the search goes on
            pending = pending or damage
            start = _find(fh, b"\x1f\x8b\x08", damage.offset + 1, size)
            if start is None:
                yield WarcDamage(pending.offset, f"{pending.reason} (no record after it)")


def _find(fh: BinaryIO, needle: bytes, start: int, size: int) -> int | None:
    """Offset of the first ``needle`` at or after ``start`` (read by windows), or None."""
    pos = start
    while pos < size:
        chunk = os.pread(fh.fileno(), _RESYNC_WINDOW + len(needle), pos)
        idx = chunk.find(needle)
        if idx >= 0:
            return pos + idx
        pos += _RESYNC_WINDOW
    return None


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
            why = _bad_arc_line(fh, offset)
            if why is not None:
                return WarcDamage(offset, why)
        elif plain:
            why, separator = _bad_header(fh, offset, record)
            if why is not None:
                return WarcDamage(offset, why)
        first = False
        block = record.raw_stream  # ensure_digest may replace it with a copy it read
        try:
            capture = _capture(record, it, builder) if _is_indexed(record) else None
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
        if plain and _off_boundary(fh, size, it, offset, errors, arc, separator):
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
