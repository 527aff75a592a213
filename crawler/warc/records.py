"""Building the WARC records of one fetch: request, response or revisit, metadata.

Why here and not inline in the middleware: these are pure functions of what was sent and
received, so they can be tested on their own against ``warcio check`` and the WARC 1.1 rules
(payload digest over the entity as received — content coding kept, chunked framing removed —;
request line with the real query string; every repeated header kept).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from http import HTTPStatus
from io import BytesIO
from typing import Any
from urllib.parse import quote, urlsplit

from warcio.recordbuilder import RecordBuilder
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser

from crawler.warc.files import WARC_VERSION
from harvestflow.formats.fields import clean_field

PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
_builder = RecordBuilder(warc_version=WARC_VERSION)
# record types warcio gives no payload digest of its own (RecordBuilder.NO_PAYLOAD_DIGEST_TYPES)
_NO_PAYLOAD_DIGEST = frozenset(RecordBuilder.NO_PAYLOAD_DIGEST_TYPES)


def _record(
    uri: str,
    kind: str,
    body: bytes,
    *,
    http_headers: StatusAndHeaders | None = None,
    warc_headers_dict: dict[str, str] | None = None,
    warc_content_type: str = "",
    payload_digest: str | None = None,
) -> ArcWarcRecord:
    """A WARC record of ``kind`` holding ``body``, its digests already in its header.

    Why the digests here: warcio's builder and then its writer each read the record again for
    the digests they miss (a SHA-1 and a pure-Python base32 each: 6 per fetched URL, besides
    the capture's own payload digest). Given here — the payload digest the caller already has
    (``payload_digest``), the block digest over the HTTP header bytes warcio writes
    (``compute_headers_buffer``, no header filter, as our writers have) and the body — both
    skip them. The header order is warcio's own (its ``_init_warc_headers``, then payload and
    block digests); ``warcio check`` and the indexers read the same records as before.
    """
    fields = dict(warc_headers_dict or {})
    headers = StatusAndHeaders("", list(fields.items()), protocol=WARC_VERSION)
    headers.add_header("WARC-Type", kind)
    if "WARC-Record-ID" not in fields:
        headers.add_header("WARC-Record-ID", new_record_id())
    if uri:
        headers.add_header("WARC-Target-URI", uri)
    if "WARC-Date" not in fields:
        headers.add_header("WARC-Date", warc_date(dt.datetime.now(dt.UTC)))
    block = hashlib.sha1()
    if http_headers is not None:
        http_headers.compute_headers_buffer()
        block.update(http_headers.headers_buff)
    block.update(body)
    if kind not in _NO_PAYLOAD_DIGEST and "WARC-Payload-Digest" not in fields:
        if payload_digest is None:
            if http_headers is None:
                payload_digest = _digest(block)
            else:
                payload_digest = sha1_digest(body) if body else _EMPTY_DIGEST
        headers.add_header("WARC-Payload-Digest", payload_digest)
    headers.add_header("WARC-Block-Digest", _digest(block))
    return _builder.create_warc_record(
        uri,
        kind,
        payload=BytesIO(body),
        length=len(body),
        warc_content_type=warc_content_type,
        warc_headers=headers,
        http_headers=http_headers,
    )


# Twisted consumes Transfer-Encoding (the body we get is de-chunked); should a handler ever pass
# the header through, it is renamed so that parsers do not try to de-chunk the stored body.
RENAMED_HEADERS = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}


# base32 of 10 bits at a time: a SHA-1 (160 bits) is 16 look-ups (base64.b32encode is pure
# Python in 3.11, 1.5 x slower for a digest)
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B32_PAIRS = [a + b for a in _B32 for b in _B32]
_SHIFTS = tuple(range(150, -1, -10))


def _digest(sha1: Any) -> str:
    """``sha1:<BASE32>`` of a finished hashlib SHA-1 object."""
    n = int.from_bytes(sha1.digest(), "big")
    return "sha1:" + "".join([_B32_PAIRS[(n >> s) & 1023] for s in _SHIFTS])


def sha1_digest(data: bytes) -> str:
    """``sha1:<BASE32>`` as WARC and Heritrix write digests."""
    return _digest(hashlib.sha1(data))


_EMPTY_DIGEST = sha1_digest(b"")  # a GET's request record's payload


def warc_date(when: dt.datetime) -> str:
    """WARC 1.1 date with microseconds (``2026-11-22T03:15:00.123456Z``)."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_record_id() -> str:
    """A new ``<urn:uuid:…>`` WARC-Record-ID, made as warcio makes its own (public API)."""
    return StatusAndHeadersParser.make_warc_id()


def request_line_target(url: str) -> str:
    """Path and query exactly as put on the request line."""
    parts = urlsplit(url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return target


def request_record(
    url: str,
    method: str,
    headers: list[tuple[str, str]],
    body: bytes,
    date: str,
    concurrent_to: str,
    record_id: str | None = None,
) -> ArcWarcRecord:
    """The request as sent: ``GET /path?q HTTP/1.1``, Host first, then the headers, and the
    body (a POST's: with its ``Content-Length`` as sent, which indexers read it by)."""
    if body and not any(k.lower() == "content-length" for k, _ in headers):
        headers = [*headers, ("Content-Length", str(len(body)))]
    http = StatusAndHeaders(
        f"{method} {request_line_target(url)} HTTP/1.1", headers, is_http_request=True
    )
    fields = {"WARC-Date": date, "WARC-Concurrent-To": concurrent_to}
    if record_id:
        fields["WARC-Record-ID"] = record_id
    return _record(url, "request", body, http_headers=http, warc_headers_dict=fields)


def response_http_headers(
    status: int, protocol: str, headers: list[tuple[str, str]]
) -> StatusAndHeaders:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    kept = [(RENAMED_HEADERS.get(k.lower(), k), v) for k, v in headers]
    http = StatusAndHeaders(f"{status} {reason}".strip(), kept, protocol=protocol or "HTTP/1.1")
    if not all(k.isascii() and v.isascii() for k, v in http.headers):
        _percent_encode(http)
    return http


# every printable ASCII character but '%' stays as is when a header is percent-encoded
_HEADER_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) != "%")


def _percent_encode(http: StatusAndHeaders) -> None:
    """Non-ASCII header names and values percent-encoded (UTF-8), as warcio does when it writes.

    Why here: warcio encodes them at write time, but leaves some non-ASCII in place (any name;
    a value with parameters whose non-ASCII text is outside them, such as a server's
    ``Content-Type: t\u00e9xt/html; charset=utf-8``) and then fails the write, so the capture
    would be lost. warcio's own encoding is applied first (what it would have written), and
    whatever is left non-ASCII is encoded whole.
    """
    http.percent_encode_non_ascii_headers()
    http.headers = [
        (
            k if k.isascii() else quote(k, safe=_HEADER_SAFE),
            v if v.isascii() else quote(v, safe=_HEADER_SAFE + " "),
        )
        for k, v in http.headers
    ]


def response_record(
    url: str,
    http: StatusAndHeaders,
    body: bytes,
    date: str,
    record_id: str,
    ip: str | None,
    truncated: str | None,
    concurrent_to: str | None = None,
    payload_digest: str | None = None,
) -> ArcWarcRecord:
    """The response with the body exactly as received (after de-chunking only).

    ``concurrent_to``: its request record, written just before it. The pair then names each
    other, so that indexers (pywb, ``cdxj-indexer -p``) pair them: a POST response is found
    under its request body only when its record names the request before it.
    ``payload_digest``: ``sha1_digest(body)`` when the caller has it already."""
    fields = {"WARC-Date": date, "WARC-Record-ID": record_id}
    if concurrent_to:
        fields["WARC-Concurrent-To"] = concurrent_to
    if ip:
        fields["WARC-IP-Address"] = ip
    if truncated:
        fields["WARC-Truncated"] = truncated
    return _record(
        url,
        "response",
        body,
        http_headers=http,
        warc_headers_dict=fields,
        payload_digest=payload_digest,
    )


def revisit_record(
    url: str,
    http: StatusAndHeaders,
    payload_digest: str,
    date: str,
    record_id: str,
    ip: str | None,
    profile: str,
    refers_to_uri: str,
    refers_to_date: str,
    refers_to_id: str | None,
) -> ArcWarcRecord:
    """A revisit: the HTTP headers kept, the payload left out, pointing at the original."""
    fields = {
        "WARC-Date": date,
        "WARC-Record-ID": record_id,
        "WARC-Profile": profile,
        "WARC-Refers-To-Target-URI": refers_to_uri,
        "WARC-Refers-To-Date": refers_to_date,
        "WARC-Payload-Digest": payload_digest,
        "WARC-Truncated": "length",
    }
    if refers_to_id:
        fields["WARC-Refers-To"] = refers_to_id
    if ip:
        fields["WARC-IP-Address"] = ip
    return _record(url, "revisit", b"", http_headers=http, warc_headers_dict=fields)


def page_fields(
    hf: dict[str, Any], fetch_time_ms: int, links: list[tuple[str, str, str]]
) -> list[tuple[str, str]]:
    """A fetched page's metadata fields, as Heritrix writes them: via, hopsFromSeed, sourceTag,
    fetchTimeMs (the empty ones left out), then one ``outlink`` per link (URL, hop, context).

    Why one builder: the plain and the rendered paths both write this record. A link's URL is
    the page's text: cleaned to one field, so no server can add a warc-fields line.
    """
    fields = [
        ("via", hf.get("via") or ""),
        ("hopsFromSeed", hf["hops"]),
        ("sourceTag", hf.get("seed") or ""),
        ("fetchTimeMs", str(fetch_time_ms)),
    ]
    fields = [(k, v) for k, v in fields if v]
    return fields + [("outlink", f"{clean_field(u)} {h} {c}") for u, h, c in links]


def metadata_record(
    url: str, date: str, concurrent_to: str, fields: list[tuple[str, str]]
) -> ArcWarcRecord:
    """``application/warc-fields``: via, hopsFromSeed, sourceTag, fetchTimeMs, outlinks."""
    body = "".join(f"{k}: {v}\r\n" for k, v in fields).encode("utf-8")
    return _record(
        url,
        "metadata",
        body,
        warc_content_type="application/warc-fields",
        warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": concurrent_to},
    )


def video_info_record(
    uri: str, date: str, body: bytes, content_type: str, concurrent_to: str
) -> ArcWarcRecord:
    """What yt-dlp found on a page (:mod:`crawler.rendering.video`): a ``metadata`` record
    (``youtube-dl:URL``, as brozzler names it) tied to the page's response record."""
    return _record(
        uri,
        "metadata",
        body,
        warc_content_type=content_type,
        warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": concurrent_to},
    )


def resource_record(uri: str, date: str, content_type: str, body: bytes) -> ArcWarcRecord:
    """A ``metadata`` record holding a file (logs, reports, CDX) of the metadata WARC."""
    return _record(
        uri, "metadata", body, warc_content_type=content_type, warc_headers_dict={"WARC-Date": date}
    )


def screenshot_record(uri: str, date: str, png: bytes, concurrent_to: str) -> ArcWarcRecord:
    """A rendered page's screenshot: a ``resource`` record (``urn:screenshot:URL``, as
    Browsertrix names them) tied to the page's response record by ``WARC-Concurrent-To``."""
    return _record(
        uri,
        "resource",
        png,
        warc_content_type="image/png",
        warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": concurrent_to},
    )


def dns_record(host: str, address: str, when: dt.datetime) -> ArcWarcRecord:
    """A ``dns:`` response record as Heritrix writes one (``text/dns``): the lookup time, then
    the answer in zone-file form. The TTL is left out (optional in that form): the system
    resolver does not tell it, and a made-up one would be a false record."""
    rr_type = "AAAA" if ":" in address else "A"
    stamp = when.astimezone(dt.UTC).strftime("%Y%m%d%H%M%S")
    body = f"{stamp}\n{host}.\tIN\t{rr_type}\t{address}\n".encode("ascii", "replace")
    return _record(
        f"dns:{host}",
        "response",
        body,
        warc_content_type="text/dns",
        warc_headers_dict={"WARC-Date": warc_date(when)},
    )
