"""What the indexer extracts from one WARC record, and the header parsing both scanners share.

Why a shared record shape: the fast gzip scanner (:mod:`indexing.warcscan`) and the warcio-based
scanner (:mod:`indexing.refscan`, used for files the fast one does not handle) must give exactly
the same CDX lines, so both produce :class:`Capture` and one module turns captures into lines.

The header parsing mimics warcio's ``StatusAndHeadersParser`` (what the reference indexer reads
with): lines end at LF, each is decoded as UTF-8 or else Latin-1 and right-stripped, the block
ends at the first blank line, ``name: value`` pairs keep the first occurrence on lookup and
continuation lines are glued on.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from harvestflow.formats.cdx import CdxEntry
from indexing.errors import IndexingError

WARC_VERSIONS = ("WARC/1.1", "WARC/1.0", "WARC/0.17", "WARC/0.18")
INDEXED_TYPES = frozenset(("response", "revisit", "resource", "metadata"))
HTTP_RECORD_TYPES = frozenset(("response", "request", "revisit"))
# a POST/PUT body read for its response's key: the reference reads it whole, then keeps at most
# 4,096 characters of its query; a body beyond this bound is keyed by its first bytes
MAX_REQUEST_BODY = 16 * 1024 * 1024


class NotAWarcError(IndexingError):
    """The file is neither a WARC nor an ARC file (rejected, nothing indexed)."""


class WarcDamage(IndexingError):
    """A WARC damaged from ``offset`` on; the records before it were indexed."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"damaged at byte offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


@dataclass(slots=True)
class RequestBody:
    """What a POST/PUT request record gives the key of its response (:mod:`indexing.postpair`):
    the method as on the request line, the HTTP Content-Type and Content-Length header values,
    and the body (at most :data:`MAX_REQUEST_BODY` bytes)."""

    method: str
    content_type: str | None
    content_length: str | None
    body: bytes


@dataclass(slots=True, kw_only=True)
class Capture(CdxEntry):
    """One record as a scanner reads it: its CDX fields, and its type, ids and validators.

    Scanners yield every record, ``indexed`` False for those that get no line (requests,
    warcinfo…): a POST response's key depends on the request record next to it, found by
    ``record_id`` / ``concurrent_to`` (:mod:`indexing.postpair`).
    """

    rec_type: str
    record_id: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    concurrent_to: str | None = None
    indexed: bool = True
    request: RequestBody | None = None  # a POST/PUT request record's method, headers and body


def sniff_format(path: Path) -> str:
    """``"warc"`` or ``"arc"`` from the file's first line (inflated if gzipped).

    Why: an ARC file is read as ARC (its first record is always the ``filedesc://`` header),
    anything else must start with a WARC version line; warcio alone would read a text file as an
    ARC record. Raises :class:`NotAWarcError` naming what was found. A gzip start that does not
    inflate is left to the scanners, which report it as damage at offset 0.
    """
    with open(path, "rb") as fh:
        head = fh.read(1 << 14)
    if not head:
        raise NotAWarcError("not a WARC or ARC file: empty file")
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(31).decompress(head, 4096)
        except zlib.error:
            return "warc"
    # blank lines before the first record are damage the scanners report (the records after
    # them are still read), not a reason to reject the file
    start = head.lstrip(b"\r\n")
    if start.startswith(b"WARC/"):
        return "warc"
    if start.startswith(b"filedesc://"):
        return "arc"
    first = head.split(b"\n", 1)[0][:80]
    raise NotAWarcError(f"not a WARC or ARC file: first line {_decode(first)!r}")


class Headers:
    """Parsed status line + headers; lookups are case-insensitive and return the first match."""

    __slots__ = ("by_name", "protocol", "statusline")

    def __init__(self, protocol: str, statusline: str, headers: list[tuple[str, str]]) -> None:
        self.protocol = protocol
        self.statusline = statusline
        self.by_name: dict[str, str] = {}
        for name, value in headers:
            self.by_name.setdefault(name.lower(), value)

    def get(self, name: str) -> str | None:
        return self.by_name.get(name.lower())

    def __bool__(self) -> bool:
        return bool(self.statusline or self.by_name)


def _decode(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("iso-8859-1")


class NeedMore(Exception):
    """The header block runs past the bytes available so far."""


def _split_status(first: str, statuses: tuple[str, ...] | None) -> tuple[str, str]:
    if statuses is None:
        protocol, _, rest = first.partition(" ")
        return protocol, rest
    upper = first.upper()
    for prefix in statuses:
        if upper.startswith(prefix):
            return upper[: len(prefix)], first[len(prefix) :]
    raise ValueError(first)


def crlf_text(block: bytes) -> str | None:
    """A header block (its end excluded) as text when every line ends with CRLF and it is UTF-8
    (None otherwise: the general line-by-line parsing is needed)."""
    # every LF after a CR and every CR before an LF (counted on the bytes: decoding keeps them)
    crlf = block.count(b"\r\n")
    if block.count(b"\n") != crlf or block.count(b"\r") != crlf:
        return None
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError:
        return None


def crlf_header_pairs(lines: list[str]) -> list[tuple[str, str]] | None:
    """The (name, value) pairs of a block's header lines (CRLFs split off), names and values
    stripped; None when a line is not a plain ``name: value`` one (a continuation, blank-looking
    or colon-less line): the general line-by-line parsing is needed."""
    pairs = []
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name or name[0].isspace():
            return None
        pairs.append((name.rstrip(" \t"), value.strip()))
    return pairs


def _parse_crlf_block(
    buf: bytes, pos: int, end: int, statuses: tuple[str, ...] | None
) -> tuple[Headers, int] | None:
    """The common case in one pass: CRLF lines, no blank-looking or continuation lines.

    Returns None whenever the general line-by-line parser is needed.
    """
    stop = buf.find(b"\r\n\r\n", pos, end)
    if stop < 0:
        return None
    text = crlf_text(buf[pos:stop])
    if text is None:
        return None
    lines = text.split("\r\n")
    first = lines[0].rstrip()
    pairs = crlf_header_pairs(lines[1:])
    if not first or pairs is None:
        return None
    by_name: dict[str, str] = {}
    for name, value in pairs:  # the first occurrence of a name wins, as in warcio's lookups
        by_name.setdefault(name.lower(), value)
    protocol, status = _split_status(first, statuses)
    headers = Headers(protocol, status.strip(), [])
    headers.by_name = by_name
    return headers, stop + 4


def parse_headers(
    buf: bytes, pos: int, end: int, *, final: bool, statuses: tuple[str, ...] | None
) -> tuple[Headers | None, int]:
    """Parse a header block in ``buf[pos:end]``; returns (headers, position after the block).

    ``final`` says that ``end`` is a hard limit (record length or end of data); otherwise running
    into ``end`` raises :class:`NeedMore`. ``statuses`` are the accepted status-line prefixes
    (None: split protocol and status at the first space, as warcio does for HTTP). Returns
    ``None`` headers when the block is empty (end of data).
    """
    fast = _parse_crlf_block(buf, pos, end, statuses)
    if fast is not None:
        return fast
    if not final and buf.find(b"\r\n\r\n", pos, end) < 0 and buf.find(b"\n\n", pos, end) < 0:
        raise NeedMore
    lines: list[str] = []
    p = pos
    while True:
        if p >= end:
            if not final:
                raise NeedMore
            raw = b""
        else:
            nl = buf.find(b"\n", p, end)
            if nl < 0:
                if not final:
                    raise NeedMore
                raw, p = buf[p:end], end
            else:
                raw, p = buf[p : nl + 1], nl + 1
        text = _decode(raw).rstrip()
        if not lines and not raw:
            return None, p
        lines.append(text)
        if not text:
            break
    first = lines[0]
    if not first:
        return Headers("", "", []), p
    protocol, rest = _split_status(first, statuses)
    headers: list[tuple[str, str]] = []
    name: str | None = None
    value: str | None = None
    for text in lines[1:-1] if len(lines) > 1 else ():
        if text.startswith((" ", "\t")) and name is not None:
            if value is not None:
                value += text
            continue
        if name is not None and value is not None:
            headers.append((name, value))
        key, sep, val = text.partition(":")
        name, value = (key.rstrip(" \t"), val.lstrip()) if sep else (key, None)
    if name is not None and value is not None:
        headers.append((name, value))
    return Headers(protocol, rest.strip(), headers), p


def fix_target_uri(uri: str | None) -> str | None:
    """warcio's repair of WARC-Target-URI: strip <brackets> (wget 1.19), %-encode spaces."""
    if uri is None:
        return None
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1]
    if " " in uri:
        uri = uri.replace(" ", "%20")
    return uri
