"""A job's record writing: its rolling WARC writer (the warcinfo every file starts with), the
CDX lines of its data records as they are written, its ``dns:`` records.

Why here and not in the crawl's context: what the warcinfo says (software, operator,
publisher, what the job is part of, template, robots policy, user agent) is WARC output,
decided once per job from its spec; the CDX lines written with the records spare re-reading
the WARCs at the end.
"""

from __future__ import annotations

import datetime as dt
import socket
from pathlib import Path

from warcio.recordloader import ArcWarcRecord

from crawler.jobspec import JobSpec
from crawler.warc.files import RotatingWarcWriter
from crawler.warc.records import dns_record, warc_date
from harvestflow.contracts.jobdir import JobDir
from harvestflow.formats.cdx import CdxEntry, cdx11_line

SOFTWARE = "harvestflow-crawler/0.1 (Scrapy, warcio)"


def job_warc_writer(spec: JobSpec, warc_dir: Path, partition: int | None) -> RotatingWarcWriter:
    """The job's writer; ``partition`` (a partitioned job's process index) keeps the names of
    its WARCs unique across the job's processes."""
    t = spec.template
    return RotatingWarcWriter(
        warc_dir,
        spec.warc_prefix,
        t.warc_max_size,
        {
            "software": SOFTWARE,
            "format": "WARC File Format 1.1",
            "conformsTo": "http://iipc.github.io/warc-specifications/specifications/"
            "warc-format/warc-1.1/",
            "operator": spec.operator,
            "publisher": spec.organisation,
            "isPartOf": f"job {spec.job_id} of harvest {spec.harvest_id} {spec.harvest_name}",
            "description": f"template {t.name}, scope {t.scope}, max hops {t.max_hops}",
            "robots": "obey" if t.obey_robots else "ignore",
            "http-header-user-agent": spec.user_agent,
            "http-header-from": spec.from_email,
        },
        # the process part keeps the names of a partitioned job's WARCs unique
        hostname=None if partition is None else f"{socket.gethostname()}-p{partition}",
    )


class JobRecords:
    """The job's WARC writer, with the recorded CDX lines and the ``dns:`` records."""

    def __init__(self, spec: JobSpec, jobdir: JobDir, partition: int | None) -> None:
        self.writer = job_warc_writer(spec, jobdir.warcs, partition)
        # CDX lines of the data WARCs, written as records are (no re-reading at the end)
        self._cdx = jobdir.recorded_cdx.open("a", encoding="utf-8", buffering=1)
        self.dns_recorded: set[str] = set()  # hosts whose dns: record is written

    def write(self, *records: ArcWarcRecord) -> list[tuple[str, int, int]]:
        """Write records together (one file): their (file name, offset, length)."""
        return self.writer.write(*records)

    def record_dns(self, host: str, address: str) -> None:
        """A ``dns:`` record for a host name looked up in DNS (once per host and run).

        Why: the archive then says which address a host had when it was crawled (Heritrix
        writes the same). Addresses given with ``resolve`` are not DNS answers and get none;
        no crawl.log line either (readers of crawl.log count URLs, not lookups).
        """
        host = host.lower()
        if host in self.dns_recorded:
            return
        self.dns_recorded.add(host)
        record = dns_record(host, address, dt.datetime.now(dt.UTC))
        ((name, offset, length),) = self.write(record)
        # no HTTP headers: the reference indexer gives a dns record no MIME and no status
        headers = record.rec_headers
        entry = CdxEntry(
            f"dns:{host}",
            headers.get_header("WARC-Date"),
            None,
            None,
            headers.get_header("WARC-Payload-Digest"),
            length,
            offset,
        )
        self.record_cdx(entry, name)

    def record_cdx(self, entry: CdxEntry, filename: str) -> None:
        """The CDX11 line of a record just written to data WARC ``filename``."""
        self._cdx.write(cdx11_line(entry, filename) + "\n")

    def close(self) -> None:
        self._cdx.close()
        self.writer.close()

    @staticmethod
    def now_warc_date() -> str:
        return warc_date(dt.datetime.now(dt.UTC))
