"""Screenshots of rendered pages: WARC ``resource`` records, their CDX lines and the job's
``reports/screenshots-report.txt`` (page, kind, record URI, WARC file, offset, length).

Why records in the data WARCs: a screenshot is evidence of how the page looked when it was
captured, kept with the capture (Browsertrix and UKWA do the same), replayable and indexed like
any record; the report lets a curator (and the curator job page's report tables) find them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.warc.records import screenshot_record, sha1_digest
from harvestflow.formats.cdx import CdxEntry

if TYPE_CHECKING:
    from crawler.context import CrawlContext
    from crawler.rendering.model import Screenshot


SCREENSHOT_REPORT = "screenshots-report.txt"
SCREENSHOT_HEADER = "[page] [kind] [record-uri] [warc] [offset] [length]"


def write_screenshots(ctx: CrawlContext, url: str, cap: Any, shots: list[Screenshot]) -> None:
    """The screenshots of a rendered page into the data WARC (with their CDX lines) and a line
    each in ``reports/screenshots-report.txt`` (page, kind, WARC file, offset, length)."""
    report = ctx.jobdir.report(SCREENSHOT_REPORT)
    new = not report.exists()
    with report.open("a", encoding="utf-8") as fh:
        if new:
            fh.write(SCREENSHOT_HEADER + "\n")
        for shot in shots:
            uri = shot.uri_prefix + url
            date = ctx.records.now_warc_date()
            ((name, offset, length),) = ctx.records.write(
                screenshot_record(uri, date, shot.png, cap.record_id)
            )
            ctx.records.record_cdx(
                CdxEntry(uri, date, "image/png", None, sha1_digest(shot.png), length, offset), name
            )
            fh.write(f"{url} {shot.kind} {uri} {name} {offset} {length}\n")


def merge_screenshot_reports(sources: list[Path], target: Path) -> None:
    """One ``screenshots-report.txt`` from a partitioned job's children's (one header)."""
    from crawler.rendering.behaviours.report import merge_reports

    merge_reports(sources, target, SCREENSHOT_HEADER)
