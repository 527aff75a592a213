"""Fast scanner for record-per-member gzipped WARC files.

Why: indexing is the chain's bottleneck (20,000 files a day at the BnF). A general WARC reader
streams every payload byte through several Python layers; here each gzip member is inflated by one
``zlib.decompressobj`` fed straight from an ``mmap``, only the WARC and HTTP header blocks are
parsed, and the payload bytes are dropped as they come out (hashed only for the rare record
without a ``WARC-Payload-Digest``). The member boundaries give the CDX offset and length directly.
With the C extension (indexing/_gzmember.c) each member is inflated whole by libdeflate and its
usual header blocks parsed in C; any member it declines goes through the streaming path below.

Anything this scanner is not sure to read exactly like the reference (uncompressed files, a
member holding more than one record or trailing bytes, a missing Content-Length, a record cut
short by its member) raises :class:`Fallback`, and the caller re-reads the whole file with the
warcio-based scanner, so that the output is always the reference's.
"""

from __future__ import annotations

import base64
import hashlib
import mmap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvestflow.formats.cdx import mime_of
from indexing.gzmembers import (
    GZIP_MAGIC,
    Inflater,
    Member,
    Whole,
    open_member,
)
from indexing.record_model import (
    HTTP_RECORD_TYPES,
    INDEXED_TYPES,
    MAX_REQUEST_BODY,
    WARC_VERSIONS,
    Capture,
    Headers,
    NeedMore,
    NotAWarcError,
    RequestBody,
    WarcDamage,
    fix_target_uri,
    parse_headers,
)

HEAD_MAX = 1 << 22  # header blocks larger than this go to the fallback scanner
HEAD_FIRST = 1 << 13  # skipping mode: inflate this much first, usually all the headers
_BLANK = b" \t\r\n"


class Fallback(Exception):
    """This file needs the general (warcio) scanner; the reason says why."""


class SkipUnsafe(Exception):
    """The file's writer does not end each member with the record + CRLF CRLF: inflate all."""


class _ScanState:
    """Per-file state of the payload-skipping mode."""

    __slots__ = ("convention_seen", "skip")

    def __init__(self, skip: bool) -> None:
        self.skip = skip
        self.convention_seen = False


def _hash_b32(h: hashlib._Hash) -> str:
    return "sha1:" + base64.b32encode(h.digest()).decode("ascii")


def _read_more(m: Member | Whole, buf: bytes, block: str) -> tuple[bytes, bool]:
    """``buf`` with the member's next inflated bytes, and whether the member has no more; a
    header block larger than ``HEAD_MAX`` is left to the reference reader."""
    more = m.read()
    buf += more
    if len(buf) > HEAD_MAX:
        raise Fallback(f"very large {block} header block") from None
    return buf, not more


def _record_frame(warc: Headers) -> tuple[str, int, str | None, bool, bool] | None:
    """The record's type, block length, target URI, whether it gets a CDX line and whether its
    block starts with HTTP headers to read (both the streaming and the C path read them so);
    None without a Content-Length."""
    raw_len = warc.by_name.get("content-length")
    if raw_len is None:
        return None
    try:
        length = max(int(raw_len), 0)
    except ValueError:
        length = 0
    rec_type = warc.by_name.get("warc-type") or ""
    indexed = rec_type in INDEXED_TYPES and not (
        rec_type in ("resource", "metadata")
        and warc.by_name.get("content-type") == "application/warc-fields"
    )
    uri = fix_target_uri(warc.by_name.get("warc-target-uri"))
    http_block = bool(
        (indexed or rec_type == "request")
        and length
        and rec_type in HTTP_RECORD_TYPES
        and uri is not None
        and uri.startswith(("http:", "https:"))
    )
    return rec_type, length, uri, indexed, http_block


def _member_capture(m: Member | Whole, first_member: bool, state: _ScanState) -> Capture | None:
    """Parse the record in member ``m`` and inflate the member to its end (or skip to it)."""
    # when skipping payloads, inflate a little first: usually all the headers, little payload
    buf = m.read(HEAD_FIRST, HEAD_FIRST) if state.skip and state.convention_seen else m.read()
    member_done = False
    # --- WARC header block
    while True:
        try:
            warc, hdr_end = parse_headers(
                buf, 0, len(buf), final=member_done, statuses=WARC_VERSIONS
            )
            break
        except NeedMore:
            buf, done = _read_more(m, buf, "WARC")
            member_done |= done
        except ValueError as exc:
            if first_member:
                raise NotAWarcError(
                    f"not a WARC or ARC file: first line {exc.args[0][:80]!r}"
                ) from None
            reason = f"invalid WARC record, first line {exc.args[0][:80]!r}"
            raise WarcDamage(m.start, reason) from None
    if warc is None:  # empty member: the reference skips it too
        while m.read():
            pass
        return None
    if not warc:
        raise Fallback("empty WARC status line")
    frame = _record_frame(warc)
    if frame is None:
        raise Fallback("record without Content-Length")
    rec_type, length, uri, indexed, http_block = frame
    block_end = hdr_end + length
    http: Headers | None = None
    payload_start = hdr_end
    if http_block:
        while True:
            final = member_done or len(buf) >= block_end
            try:
                http, payload_start = parse_headers(
                    buf, hdr_end, min(block_end, len(buf)), final=final, statuses=None
                )
                break
            except NeedMore:
                buf, done = _read_more(m, buf, "HTTP")
                member_done |= done
        if http is None and rec_type not in ("revisit", "request"):
            raise Fallback("response without HTTP headers")
    # a POST/PUT request: its body makes its response's key (indexing/postpair.py)
    request: RequestBody | None = None
    if rec_type == "request" and http is not None and http.protocol.upper() in ("POST", "PUT"):
        if http.get("transfer-encoding") or http.get("content-encoding"):
            raise Fallback("request body with a transfer or content coding")
        request = RequestBody(
            http.protocol, http.get("content-type"), http.get("content-length"), b""
        )
    body_parts: list[bytes] = [buf[payload_start:block_end]] if request is not None else []
    digest = warc.by_name.get("warc-payload-digest")
    hasher = None
    if indexed and not digest and rec_type != "revisit":
        hasher = hashlib.sha1()
        hasher.update(buf[payload_start:block_end])
    total = len(buf)  # inflated so far
    # --- skip the payload without inflating it (see find_end), once the file showed that its
    # members hold exactly the record and CRLF CRLF
    if (
        state.skip
        and isinstance(m, Member)
        and hasher is None
        and request is None
        and not m.d.eof
        and state.convention_seen
    ):
        end = m.find_end(block_end + 4)
        if end is not None:
            m.forced_end = end
            member_done = True
            total = block_end + 4
            buf = b""
    # --- inflate the rest of the member, hashing the payload when needed
    trailing_ok = not buf[block_end:].strip(_BLANK)
    if isinstance(m, Whole) and hasher is None and request is None:
        # already inflated: only its size and the bytes after the record are looked at
        member_done = True
        total = m.size
        trailing_ok = m.inf.blank(block_end, total)
    while not member_done:
        out = m.read()
        if not out:
            break
        if total < block_end:
            if hasher is not None:
                hasher.update(out[: block_end - total])
            if request is not None and total - payload_start < MAX_REQUEST_BODY:
                body_parts.append(out[: block_end - total])
            if total + len(out) > block_end and out[block_end - total :].strip(_BLANK):
                trailing_ok = False
        elif out.strip(_BLANK):
            trailing_ok = False
        total += len(out)
    if total < block_end:
        raise Fallback("record shorter than its Content-Length")
    if not trailing_ok:
        raise Fallback("bytes after the record inside its gzip member")
    if state.skip and isinstance(m, Member) and m.forced_end is None:
        if total == block_end + 4:
            state.convention_seen = True
        elif state.convention_seen or total > block_end:
            raise SkipUnsafe("members do not all end with the record + CRLF CRLF")
    if request is not None and not indexed:
        request.body = b"".join(body_parts)[:MAX_REQUEST_BODY]
    if hasher is not None:
        digest = _hash_b32(hasher)
    return _capture(rec_type, uri, warc, http, indexed, digest, request, m.start, m.end - m.start)


def _capture(
    rec_type: str,
    uri: str | None,
    warc: Headers,
    http: Headers | None,
    indexed: bool,
    digest: str | None,
    request: RequestBody | None,
    offset: int,
    length: int,
) -> Capture:
    """The record's :class:`Capture` from its parsed header blocks."""
    if not indexed:
        return Capture(
            rec_type=rec_type,
            url=uri,
            date=warc.by_name.get("warc-date"),
            mime=None,
            status=None,
            digest=None,
            offset=offset,
            length=length,
            record_id=warc.by_name.get("warc-record-id"),
            concurrent_to=warc.by_name.get("warc-concurrent-to"),
            indexed=False,
            request=request,
        )
    if rec_type == "revisit":
        mime: str | None = "warc/revisit"
    elif rec_type in ("response", "request"):
        mime = mime_of(http.by_name.get("content-type")) if http else None
    else:
        mime = mime_of(warc.by_name.get("content-type"))
    status = None
    if http and rec_type in ("response", "revisit"):
        status = http.statusline.split(" ", 1)[0]
    return Capture(
        rec_type=rec_type,
        url=uri,
        date=warc.by_name.get("warc-date"),
        mime=mime,
        status=status,
        digest=digest,
        offset=offset,
        length=length,
        record_id=warc.by_name.get("warc-record-id"),
        etag=http.by_name.get("etag") if http else None,
        last_modified=http.by_name.get("last-modified") if http else None,
        concurrent_to=warc.by_name.get("warc-concurrent-to"),
    )


# the header names the C path's records are read by (_record_frame, _whole_capture, _capture):
# the C parser makes str objects of these only
_C_WARC_NAMES = (
    "content-length",
    "content-type",
    "warc-concurrent-to",
    "warc-date",
    "warc-payload-digest",
    "warc-record-id",
    "warc-target-uri",
    "warc-type",
)
_C_HTTP_NAMES = ("content-type", "etag", "last-modified")


def _c_headers(inf: Any, a: int, b: int, warc: bool) -> tuple[Headers, int] | None:
    got = inf.headers(a, b, warc, _C_WARC_NAMES if warc else _C_HTTP_NAMES)
    if got is None:
        return None
    headers = Headers(got[0], got[1], [])
    headers.by_name = got[2]
    return headers, got[3]


def _whole_capture(m: Whole) -> Capture | None:
    """The common record of a member inflated whole, parsed in C (indexing/_gzmember.c), or
    None for anything else (odd header blocks, no payload digest, a POST/PUT request, bytes
    after the record...): :func:`_member_capture` then reads the member as usual."""
    inf = m.inf
    got = _c_headers(inf, 0, m.size, True)
    if got is None:
        return None
    warc, hdr_end = got
    frame = _record_frame(warc) if warc else None
    if frame is None:
        return None
    rec_type, length, uri, indexed, http_block = frame
    block_end = hdr_end + length
    if block_end > m.size or not inf.blank(block_end, m.size):
        return None
    http: Headers | None = None
    if http_block:
        got = _c_headers(inf, hdr_end, block_end, False)
        if got is None:
            return None
        http = got[0]
        if rec_type == "request" and http.protocol.upper() in ("POST", "PUT"):
            return None
    digest = warc.by_name.get("warc-payload-digest")
    if indexed and not digest and rec_type != "revisit":
        return None
    return _capture(rec_type, uri, warc, http, indexed, digest, None, m.start, m.end - m.start)


def scan_gzip(path: Path, *, verify: bool = True) -> Iterator[Capture | WarcDamage]:
    """Yield a :class:`Capture` per record (in file order; ``indexed`` False for those that get
    no line) and a :class:`WarcDamage` per damaged stretch.

    Raises :class:`NotAWarcError` for a file that is not a WARC, and :class:`Fallback` (before
    anything was yielded only if the problem is in the first record) when the general scanner
    must be used. After a damaged member the scan resynchronises on the next gzip member that
    inflates to a WARC record (the damage's reason says where), so the records after it are
    kept.

    ``verify=False`` skips inflating payloads (member ends found from the gzip trailer): several
    times faster, same lines, but a corrupt payload (bad CRC) is then not noticed; it raises
    :class:`SkipUnsafe` if the file's members are not laid out as the skipping assumes.
    """
    state = _ScanState(skip=not verify)
    # skipping payloads reads only the headers: the whole-member inflater is for verify only
    inf = Inflater() if Inflater is not None and verify else None
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if size == 0:
            raise NotAWarcError("not a WARC or ARC file: empty file")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if mm[:2] != GZIP_MAGIC:
                raise Fallback("not gzip-compressed")
            pos = 0
            first = True
            damage: WarcDamage | None = None  # reported once the scan is back on its feet
            while pos < size:
                try:
                    if mm[pos : pos + 2] != GZIP_MAGIC:
                        raise WarcDamage(pos, "bytes that are not a gzip member")
                    m = open_member(mm, pos, size, inf)
                    cap = _whole_capture(m) if isinstance(m, Whole) else None
                    if cap is None:
                        cap = _member_capture(m, first, state)
                except WarcDamage as exc:
                    damage = damage or exc
                    # the next member start (1f 8b 08); a false match only fails again
                    nxt = mm.find(GZIP_MAGIC + b"\x08", pos + 1)
                    if nxt < 0:
                        break
                    pos = nxt
                    continue
                if damage is not None:
                    yield WarcDamage(damage.offset, f"{damage.reason} (next record at byte {pos})")
                    damage = None
                first = False
                pos = m.end
                if cap is not None:
                    yield cap
            if damage is not None:
                yield WarcDamage(damage.offset, f"{damage.reason} (no record after it)")
