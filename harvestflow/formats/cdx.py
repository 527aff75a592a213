"""The CDX line model: 11-field CDX and CDXJ lines exactly as cdxj-indexer writes them.

Why one model: the indexing chain, the crawler and the dedup index all write or read these
lines, and written twice they drifted. Here each format's fields are listed once, as pywb's
``cdxobject`` does, each value derived as cdxj-indexer (the reference, a test oracle only)
derives it; a POST/PUT response is keyed with its body (:mod:`harvestflow.formats.postquery`).
The fields are listed in docs/architecture.md ("CDX and CDXJ").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from harvestflow.formats.postquery import appended_url
from harvestflow.formats.surt import surt_or_url

__all__ = [
    "CDX11_HEADER",
    "FORMATS",
    "Cdx11Line",
    "CdxEntry",
    "cdx11_line",
    "cdxj_line",
    "http_mime",
    "line_key",
    "mime_of",
    "parse_cdx11",
    "timestamp14",
    "warc_date",
]

CDX11_HEADER = " CDX N b a m s k r M S V g"
FORMATS = ("cdxj", "cdx11")
_MIME_SPLIT = re.compile(r"[;\s]")
_DATE_SPLIT = re.compile(r"[^\d]")
_PLAIN_DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d*)?Z$")
# values json.dumps writes unchanged (printable ASCII without quote or backslash)
_JSON_PLAIN = re.compile(r"[ !#-\[\]-~]*\Z")


@dataclass(slots=True)
class CdxEntry:
    """What a CDX line is made of (``None`` where the reference writes nothing).

    The crawler builds one as it writes each record; the indexing chain's ``Capture`` extends
    it with what a scanner also reads. ``date`` is the record's ``WARC-Date`` and ``digest``
    its ``WARC-Payload-Digest`` (``sha1:…``). ``method`` is set (upper-case) only for a POST/PUT
    response keyed under its request body, ``request_body`` then being the body's query (None:
    a request with a bad Content-Length).
    """

    url: str | None
    date: str | None
    mime: str | None
    status: str | None
    digest: str | None
    length: int
    offset: int
    method: str | None = None
    request_body: str | None = None


@dataclass(frozen=True, slots=True)
class Cdx11Line:
    """The fields of one CDX11 line as read back (``-`` kept as written)."""

    key: str
    timestamp: str
    url: str
    mime: str
    status: str
    digest: str
    redirect: str
    meta: str
    length: int
    offset: int
    filename: str


def mime_of(value: str | None) -> str | None:
    """The CDX MIME field of a ``Content-Type`` value: the media type without parameters."""
    if value:
        return _MIME_SPLIT.split(value, 1)[0].strip()
    return value


def http_mime(headers: Iterable[tuple[str, str]]) -> str | None:
    """The MIME field the reference gives a response whose HTTP header lines are ``headers``.

    ``headers`` must be the lines as written into the WARC (warcio percent-encodes non-ASCII
    values in place when it writes a record, so read them after the write). Read back, a name
    loses its trailing blanks and a value its surrounding white space, and the first
    ``Content-Type`` wins — as warcio's header parser, which the reference reads with, does.
    """
    for name, value in headers:
        if name.rstrip(" \t").lower() == "content-type":
            return mime_of(value.strip())
    return None


def timestamp14(date: str) -> str:
    """WARC-Date (ISO 8601) as the 14-digit CDX timestamp."""
    if _PLAIN_DATE.match(date):
        return date[0:4] + date[5:7] + date[8:10] + date[11:13] + date[14:16] + date[17:19]
    nums = _DATE_SPLIT.split(date)
    if nums[-1] == "":
        nums = nums[:-1]
    if len(nums) == 7:
        nums[6] = (nums[6][:6] + "000000")[:6]
    parts = [int(n) for n in nums]
    return datetime(*parts).strftime("%Y%m%d%H%M%S")  # type: ignore[arg-type]


def warc_date(timestamp: str) -> str:
    """A CDX timestamp (14 digits, or fewer: the missing ones are zero) as a WARC-Date."""
    s = (timestamp + "00000000000000")[:14]
    return f"{s[0:4]}-{s[4:6]}-{s[6:8]}T{s[8:10]}:{s[10:12]}:{s[12:14]}Z"


def _key_and_time(rec: CdxEntry) -> tuple[str, str]:
    if rec.url and rec.method:
        key = surt_or_url(appended_url(rec.url, rec.method, rec.request_body))
    else:
        key = surt_or_url(rec.url) if rec.url else "-"
    return key, timestamp14(rec.date) if rec.date else "-"


def _json_fields(rec: CdxEntry, filename: str) -> dict[str, str]:
    index: dict[str, str] = {}
    if rec.url is not None:
        index["url"] = rec.url
    if rec.mime is not None:
        index["mime"] = rec.mime
    if rec.status is not None:
        index["status"] = rec.status
    if rec.digest is not None:
        index["digest"] = rec.digest
    index["length"] = str(rec.length)
    index["offset"] = str(rec.offset)
    index["filename"] = filename
    return index


def cdxj_line(rec: CdxEntry, filename: str) -> str:
    """The CDXJ line of ``rec`` stored in ``filename``."""
    key, ts = _key_and_time(rec)
    fields = _json_fields(rec, filename)
    if rec.method:  # a POST/PUT key: the body's query (null when unreadable) and the method
        keyed: dict[str, str | None] = {**fields, "requestBody": rec.request_body}
        keyed["method"] = rec.method
        return f"{key} {ts} {json.dumps(keyed)}"
    if _JSON_PLAIN.match("".join(fields.values())):
        # json.dumps' own output for such values, without its per-call encoder set-up
        body = ", ".join([f'"{k}": "{v}"' for k, v in fields.items()])
        return f"{key} {ts} {{{body}}}"
    return f"{key} {ts} {json.dumps(fields)}"


def cdx11_line(rec: CdxEntry, filename: str) -> str:
    """The CDX11 line of ``rec`` stored in ``filename`` (no trailing newline)."""
    key, ts = _key_and_time(rec)
    digest = rec.digest.split(":")[-1] if rec.digest is not None else "-"
    parts = (
        key,
        ts,
        rec.url,
        rec.mime,
        rec.status,
        digest,
        "-",
        "-",
        str(rec.length),
        str(rec.offset),
        filename,
    )
    return " ".join("-" if p is None else p for p in parts)


def parse_cdx11(line: str) -> Cdx11Line | None:
    """The fields of a CDX11 line; None for the header, a blank line or a malformed line.

    Fields are split on single spaces, as pywb reads them: an empty MIME (a server's empty
    ``Content-Type``) is an empty field, not a missing one.
    """
    line = line.rstrip("\r\n")
    if not line.strip() or line.startswith(" CDX"):
        return None
    fields = line.split(" ")
    if len(fields) != 11:
        return None
    try:
        length, offset = int(fields[8]), int(fields[9])
    except ValueError:
        return None
    key, stamp, url, mime, status, digest, redirect, meta = fields[:8]
    return Cdx11Line(
        key, stamp, url, mime, status, digest, redirect, meta, length, offset, fields[10]
    )


def line_key(line: bytes) -> bytes | None:
    """``<urlkey> <timestamp>`` of a CDXJ or CDX11 line (what sorted indexes are searched by);
    None when the line does not start with a key and a timestamp of digits.

    Bytes, not text: merges and ZipNum blocks handle index files of tens of gigabytes as bytes.
    """
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[1][:14].isdigit():
        return None
    return parts[0] + b" " + parts[1]
