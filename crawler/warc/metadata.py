"""The job's metadata WARC (``<job_id>-metadata-1.warc.gz``) and the CDX of its data WARCs.

Why: NetarchiveSuite keeps, next to the data WARCs, one WARC holding what is needed to
understand the crawl later — the job spec it ran, its logs and reports, and a CDX index of its
data WARCs — so that the archive is self-describing even without the database. Records are
named ``metadata://<organisation>/crawl/{setup,logs,reports,index}/<file>?harvestid=…&jobid=…``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from crawler.warc.files import WARC_VERSION
from crawler.warc.records import resource_record, warc_date
from harvestflow.atomic import commit
from harvestflow.formats.cdx import CDX11_HEADER, CdxEntry, cdx11_line, mime_of, parse_cdx11


def cdx_lines(warc_path: Path) -> list[str]:
    """CDX11 lines of a data WARC, read again (a file repaired after a crash, or not recorded).

    The crawler's data WARCs hold request, response, revisit and ``application/warc-fields``
    metadata records: the response and revisit records are the ones the reference indexer
    lists, with the fields it derives (see :mod:`harvestflow.formats.cdx`).
    """
    lines: list[str] = []
    name = warc_path.name
    with warc_path.open("rb") as fh:
        it = ArchiveIterator(fh)
        for record in it:
            rtype = record.rec_type
            if rtype not in ("response", "revisit"):
                continue
            headers, http = record.rec_headers, record.http_headers
            mime: str | None = "warc/revisit"
            if rtype != "revisit":  # a dns: response has no HTTP headers, hence no MIME
                mime = mime_of(http.get_header("Content-Type")) if http else None
            status = http.get_statuscode() if http else None
            url = headers.get_header("WARC-Target-URI")
            date = headers.get_header("WARC-Date")
            digest = headers.get_header("WARC-Payload-Digest")
            it.read_to_end(record)
            offset, length = it.get_record_offset(), it.get_record_length()
            entry = CdxEntry(url, date, mime, status, digest, length, offset)
            lines.append(cdx11_line(entry, name))
    return lines


def write_metadata_warc(
    warc_dir: Path,
    job_id: int,
    harvest_id: int,
    organisation: str,
    files: dict[str, list[Path]],
    data_warcs: list[Path],
    recorded_cdx: Path | None = None,
    reindex: set[str] | None = None,
) -> Path:
    """Write the metadata WARC; ``files`` maps a section (setup, logs, reports) to files.

    CDX lines come from ``recorded_cdx`` (written by the crawl as it wrote each record), except
    for the files in ``reindex`` (repaired after a crash) and files it does not cover, which
    are read again. A recorded line whose record lies past the end of its file (cut by a repair)
    is dropped.
    """
    name = f"{job_id}-metadata-1.warc.gz"
    final = warc_dir / name
    tmp = warc_dir / (name + ".open")
    date = warc_date(dt.datetime.now(dt.UTC))
    query = f"harvestid={harvest_id}&jobid={job_id}"
    with tmp.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version=WARC_VERSION)
        writer.write_record(
            writer.create_warcinfo_record(
                name,
                {
                    "software": "harvestflow-crawler/0.1",
                    "format": "WARC File Format 1.1",
                    "description": f"metadata of job {job_id}, harvest {harvest_id}",
                },
            )
        )
        for section, paths in files.items():
            for path in paths:
                if not path.exists():
                    continue
                ctype = "application/json" if path.suffix == ".json" else "text/plain"
                uri = f"metadata://{organisation}/crawl/{section}/{path.name}?{query}"
                writer.write_record(resource_record(uri, date, ctype, path.read_bytes()))
        cdx = [CDX11_HEADER]
        body: list[str] = []
        sizes = {w.name: w.stat().st_size for w in data_warcs}
        covered: set[str] = set()
        if recorded_cdx is not None and recorded_cdx.exists():
            for line in recorded_cdx.read_bytes().decode("utf-8").split("\n"):
                rec = parse_cdx11(line)
                if rec is None or rec.filename not in sizes or rec.filename in (reindex or ()):
                    continue
                if rec.offset + rec.length <= sizes[rec.filename]:
                    body.append(line)
                    covered.add(rec.filename)
        for warc in data_warcs:
            if warc.name not in covered or warc.name in (reindex or ()):
                body += cdx_lines(warc)
        body.sort(key=lambda s: s.encode("utf-8"))  # byte order, as LC_ALL=C sort
        cdx += body
        uri = f"metadata://{organisation}/crawl/index/cdx?{query}"
        writer.write_record(
            resource_record(uri, date, "application/x-cdx", ("\n".join(cdx) + "\n").encode())
        )
    commit(tmp, final)  # streamed under the ".open" name salvage knows
    return final
