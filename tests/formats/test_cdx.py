"""The CDX line model against cdxj-indexer (the oracle): records written with warcio, each with
a URL whose key is easy to get wrong and a ``Content-Type`` header line no server should send
(blank, control characters, parameters, a name with trailing blanks, duplicates, 10 kB); our
CDX11 and CDXJ lines, built from the header lines as written, equal the oracle's."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvestflow.formats.cdx import (
    CDX11_HEADER,
    CdxEntry,
    cdx11_line,
    cdxj_line,
    http_mime,
    line_key,
    parse_cdx11,
    timestamp14,
    warc_date,
)

SID = "0123456789abcdef0123456789abcdef"
URLS = [
    "http://www.example.com/dir/",
    f"http://example.com/a?jsessionid={SID}&b=1",
    f"http://www2.example.com:8080/p?PHPSESSID={SID}",
    f"http://example.com/?sid={SID}",
    "http://example.com/p%2541/%7Euser",
    "http://example.com//a//b/",
    "http://xn--bcher-kva.example/idn",
    "https://WWW.Example.COM:443/X?b=2&a=1",
    "http://example.com:99999/bad-port",
]
CONTENT_TYPES: list[list[tuple[str, str]]] = [
    [("Content-Type", "Text/HTML; charset=UTF-8")],
    [("Content-Type", "")],
    [("Content-Type", "   ")],
    [("Content-Type", "\x1c\x1dtext/html")],
    [("Content-Type", "text/html\tx\x0by")],
    [("Content-Type", "text/ht\x00ml")],
    [("Content-Type", "a" * 10_000)],
    [("content-type \t", "text/spaced-name")],
    [("Content-Type", "text/first"), ("CONTENT-TYPE", "text/second")],
    [("X-Other", "1")],
    [("Content-Type", "text/html\r stray carriage return")],
]


def _write(path: Path) -> list[tuple[CdxEntry, str]]:
    """A WARC with one response per (URL, header set); our entries for its records."""
    entries = []
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        cases = [(u, CONTENT_TYPES[0]) for u in URLS] + [(URLS[0], h) for h in CONTENT_TYPES]
        for i, (url, headers) in enumerate(cases):
            http = StatusAndHeaders("200 OK", list(headers), protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url if i < len(URLS) else f"{url}?case={i}",
                "response",
                payload=io.BytesIO(b"body %d" % i),
                length=len(b"body %d" % i),
                http_headers=http,
            )
            offset = fh.tell()
            writer.write_record(record)
            rec = record.rec_headers
            entry = CdxEntry(
                rec.get_header("WARC-Target-URI"),
                rec.get_header("WARC-Date"),
                http_mime(record.http_headers.headers),  # as written
                "200",
                rec.get_header("WARC-Payload-Digest"),
                fh.tell() - offset,
                offset,
            )
            entries.append((entry, path.name))
    return entries


def _oracle(oracle: Path, warc: Path, *args: str) -> list[str]:
    out = subprocess.run(
        [str(oracle / "bin" / "cdxj-indexer"), *args, str(warc)], check=True, capture_output=True
    ).stdout.decode("utf-8")
    return [ln for ln in out.split("\n") if ln]


def test_cdx11_and_cdxj_lines_equal_cdxj_indexer(oracle: Path, tmp_path: Path):
    warc = tmp_path / "t.warc.gz"
    entries = _write(warc)
    assert [cdx11_line(e, n) for e, n in entries] == _oracle(oracle, warc, "-11")[1:]
    assert _oracle(oracle, warc, "-11")[0] == CDX11_HEADER
    assert [cdxj_line(e, n) for e, n in entries] == _oracle(oracle, warc)


def test_cdx11_lines_read_back_field_by_field(oracle: Path, tmp_path: Path):
    warc = tmp_path / "t.warc.gz"
    entries = _write(warc)
    for (entry, name), line in zip(entries, _oracle(oracle, warc, "-11")[1:], strict=True):
        parsed = parse_cdx11(line)
        assert parsed is not None, line
        assert (parsed.url, parsed.length, parsed.offset, parsed.filename) == (
            entry.url,
            entry.length,
            entry.offset,
            name,
        )
        assert parsed.mime == (entry.mime if entry.mime is not None else "-")
    assert parse_cdx11(CDX11_HEADER) is None
    assert parse_cdx11("too few fields") is None


def test_keys_and_dates_read_back_from_the_oracles_lines(oracle: Path, tmp_path: Path):
    """The readers' side of the model (ZipNum blocks, the dedup index built from a CDX) on the
    oracle's own CDXJ and CDX11 lines: the key and timestamp as it wrote them, its timestamp
    back to the record's WARC-Date."""
    warc = tmp_path / "t.warc.gz"
    entries = _write(warc)
    for args in ((), ("-11",)):
        lines = [ln for ln in _oracle(oracle, warc, *args) if not ln.startswith(" CDX")]
        for (entry, _), line in zip(entries, lines, strict=True):
            key, stamp = line.split(" ")[:2]
            assert line_key(line.encode()) == f"{key} {stamp}".encode()
            assert entry.date is not None
            assert warc_date(stamp) == entry.date.split(".")[0].rstrip("Z") + "Z"
            assert timestamp14(warc_date(stamp)) == stamp
    assert line_key(CDX11_HEADER.encode()) is None
    assert line_key(b"no-timestamp here") is None
