"""General WARC scanner on warcio, reading records exactly the way the reference indexer does.

Why: the fast scanner (:mod:`indexing.warcscan`) only takes the common, well-formed layout (one
gzip member per record). Every other file (uncompressed WARCs, odd members, missing lengths) is
read here with warcio's ``ArchiveIterator`` configured like cdxj-indexer (record parsing on, HTTP
status lines not verified), so that both paths give the reference's lines.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

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


def scan_reference(path: Path) -> Iterator[Capture]:
    """Yield a :class:`Capture` per indexed record, raising like :func:`warcscan.scan_gzip`."""
    builder = RecordBuilder()
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh, no_record_parse=False, arc2warc=False, verify_http=False)
        first = True
        try:
            for record in it:
                if record.format != "warc":
                    raise NotAWarcError(f"not a WARC file: {record.format.upper()} record found")
                first = False
                if not _is_indexed(record):
                    continue
                rec_type = record.rec_type
                http = record.http_headers
                if rec_type == "revisit":
                    mime: str | None = "warc/revisit"
                elif rec_type in ("response", "request"):
                    mime = mime_of(http.get_header("content-type")) if http else None
                else:
                    mime = mime_of(record.rec_headers.get_header("content-type"))
                status = None
                if rec_type in ("response", "revisit") and http:
                    status = http.get_statuscode()
                digest = _payload_digest(record, builder)
                yield Capture(
                    rec_type,
                    record.rec_headers.get_header("WARC-Target-URI"),
                    record.rec_headers.get_header("WARC-Date"),
                    mime,
                    status,
                    digest,
                    it.get_record_offset(),
                    it.get_record_length(),
                    record.rec_headers.get_header("WARC-Record-ID"),
                    http.get_header("etag") if http else None,
                    http.get_header("last-modified") if http else None,
                )
        except (ArchiveLoadFailed, zlib.error, EOFError, ValueError, OSError) as exc:
            reason = " ".join(str(exc).split())[:300]
            if first and isinstance(exc, ArchiveLoadFailed):
                raise NotAWarcError(f"not a WARC file: {reason}") from exc
            raise WarcDamage(it.offset, reason) from exc
