"""Record boundaries of uncompressed WARC and ARC files: the checks and the resynchronisation.

Why: warcio (and the reference indexer) read a damaged uncompressed file without a word: a record
whose length no longer lands on the next record has its remainder skipped as a "line" and the
records after it may be misread or lost; a garbled header block loses fields, or its record
silently. These checks, run per record by :mod:`indexing.refscan`, use what warcio already
counted plus one ``pread`` of the header bytes, so they stay cheap; after damage, the scan
resumes at the next valid record start found here.
"""

from __future__ import annotations

import os
import re
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator

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


def resync_from(fh: BinaryIO, start: int, arc: bool) -> int:
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


def next_header(fh: BinaryIO, start: int, size: int, arc: bool) -> int | None:
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


def bad_arc_line(fh: BinaryIO, offset: int) -> str | None:
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


def bad_header(fh: BinaryIO, offset: int, record: object, size: int = 0) -> tuple[str | None, int]:
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
            return bad_header(fh, offset, record, HEADER_MAX)
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


def off_boundary(
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


def find_bytes(fh: BinaryIO, needle: bytes, start: int, size: int) -> int | None:
    """Offset of the first ``needle`` at or after ``start`` (read by windows), or None."""
    pos = start
    while pos < size:
        chunk = os.pread(fh.fileno(), _RESYNC_WINDOW + len(needle), pos)
        idx = chunk.find(needle)
        if idx >= 0:
            return pos + idx
        pos += _RESYNC_WINDOW
    return None
