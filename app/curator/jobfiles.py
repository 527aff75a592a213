"""Read a job directory for the curator pages: summary, reports as tables, crawl progress.

Why parse here: the crawler writes Heritrix-style text reports (a header line of ``[column]``
names, or ``key: value`` lines) and a progress-statistics log; curators want them as tables and
figures, not as files to open. Every reader tolerates a missing or partial file (a running or
failed job), and every path is checked to stay inside its job directory.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvestflow.contracts import ContractError
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.summary import JobSummary
from harvestflow.formats.integers import ascii_int

log = logging.getLogger(__name__)

REPORT_ORDER = (
    "crawl-report.txt",
    "seeds-report.txt",
    "hosts-report.txt",
    "mimetype-report.txt",
    "responsecode-report.txt",
    "source-report.txt",
    "frontier-report.txt",
)
_BRACKETED = re.compile(r"\[([^\]]+)\]")
MAX_REPORT_ROWS = 2000


@dataclass
class Table:
    """A report rendered as rows; ``truncated`` says rows were left out."""

    name: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    truncated: int = 0


def inside(base: Path, *parts: str) -> Path:
    """``base/parts`` resolved, refused (ValueError) if it leaves ``base``."""
    target = base.joinpath(*parts).resolve()
    root = base.resolve()
    if target != root and root not in target.parents:
        raise ValueError(f"{'/'.join(parts)!r} is outside {root}")
    return target


def read_summary(job_dir: Path | None) -> JobSummary | None:
    """The crawler's summary.json, or None (job not crawled yet, or file unreadable)."""
    if job_dir is None:
        return None
    path = JobDir(job_dir).summary_json
    try:
        return JobSummary.read(path)
    except FileNotFoundError:
        return None
    except (OSError, ContractError) as exc:
        log.warning("%s: unreadable summary: %s", path, exc)
        return None


def parse_report(name: str, text: str, max_rows: int = MAX_REPORT_ROWS) -> Table:
    """One report file as a table: bracketed header, 'key: value' lines, or plain columns."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return Table(name, [])
    header = _BRACKETED.findall(lines[0])
    if header:
        columns, body = header, lines[1:]
    elif all(":" in line for line in lines):
        table = Table(name, ["measure", "value"])
        for line in lines[:max_rows]:
            key, _, value = line.partition(":")
            table.rows.append([key.strip(), value.strip()])
        table.truncated = max(len(lines) - max_rows, 0)
        return table
    else:
        columns, body = [], lines[1:]
        for token in lines[0].split():  # "lastCost (averageCost)" is one column
            if token.startswith("(") and columns:
                columns[-1] += " " + token
            else:
                columns.append(token)
    table = Table(name, columns, truncated=max(len(body) - max_rows, 0))
    width = len(columns)
    for line in body[:max_rows]:
        cells = line.split(maxsplit=width - 1) if width else line.split()
        table.rows.append(cells + [""] * (width - len(cells)))
    return table


def read_reports(job_dir: Path | None) -> list[Table]:
    """Every report of the job, best-known first, each parsed into a table."""
    if job_dir is None:
        return []
    names = [p.name for p in JobDir(job_dir).report_files()]
    ordered = [n for n in REPORT_ORDER if n in names] + [n for n in names if n not in REPORT_ORDER]
    tables = []
    for name in ordered:
        try:
            text = inside(job_dir, "reports", name).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            log.warning("%s/reports/%s: %s", job_dir, name, exc)
            continue
        tables.append(parse_report(name.removesuffix(".txt"), text))
    return tables


def read_progress(job_dir: Path | None, max_points: int = 500) -> list[dict[str, Any]]:
    """progress-statistics.log samples (time, discovered, queued, downloaded, rates), oldest
    first, thinned to ``max_points``; an 'ended' key marks the CRAWL ENDED line."""
    if job_dir is None:
        return []
    path = JobDir(job_dir).progress_log
    if not path.exists():
        return []
    samples: list[dict[str, Any]] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) >= 3 and fields[1] == "CRAWL":
                if samples:
                    samples[-1]["ended"] = " ".join(fields[1:])
                continue
            counts = [ascii_int(f) for f in fields[1:4]]
            if len(fields) < 7 or None in counts:
                continue  # the header, or a torn line of a running job
            samples.append(
                {
                    "time": fields[0],
                    "discovered": counts[0],
                    "queued": counts[1],
                    "downloaded": counts[2],
                    "docs_per_s": fields[4],
                    "kb_per_s": fields[5],
                    "failures": fields[6],
                }
            )
    if len(samples) > max_points:
        step = len(samples) / max_points
        thinned = [samples[int(i * step)] for i in range(max_points)]
        samples = [*thinned[:-1], samples[-1]]
    return samples


SCREENSHOT_REPORT = "screenshots-report.txt"  # written by the crawler when it renders pages
MAX_SCREENSHOTS = 50


@dataclass
class ScreenshotRef:
    """One line of a job's screenshots report: where the PNG record is."""

    index: int
    page: str
    kind: str
    record_uri: str
    warc: str
    offset: int


def read_screenshots(job_dir: Path | None, kind: str | None = "viewport") -> list[ScreenshotRef]:
    """The job's screenshots (of ``kind``; None: all) in report order, at most
    ``MAX_SCREENSHOTS``; ``index`` is the line's number, which the image route takes."""
    if job_dir is None:
        return []
    path = JobDir(job_dir).report(SCREENSHOT_REPORT)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return []
    out: list[ScreenshotRef] = []
    for index, line in enumerate(lines):
        fields = line.split()
        offset = ascii_int(fields[4]) if len(fields) == 6 else None
        if offset is None or offset < 0:
            continue  # a torn last line of a running job
        if kind is None or fields[1] == kind:
            out.append(ScreenshotRef(index, fields[0], fields[1], fields[2], fields[3], offset))
            if len(out) >= MAX_SCREENSHOTS:
                break
    return out


def read_screenshot_png(job_dir: Path, index: int) -> bytes | None:
    """The PNG of report line ``index``, read from its record in the job's WARC; None if the
    line, the file (moved by the indexing chain) or a matching image record is missing."""
    refs = [r for r in read_screenshots(job_dir, None) if r.index == index]
    if not refs:
        return None
    ref = refs[0]
    try:
        warc = inside(job_dir, "warcs", ref.warc)
        with warc.open("rb") as fh:
            fh.seek(ref.offset)
            from warcio.archiveiterator import ArchiveIterator

            record = next(iter(ArchiveIterator(fh)), None)
            if (
                record is None
                or record.rec_headers.get_header("WARC-Target-URI") != ref.record_uri
                or record.rec_headers.get_header("Content-Type") != "image/png"
            ):
                return None
            return bytes(record.content_stream().read())
    except (OSError, ValueError) as exc:
        log.warning("%s: screenshot %d unreadable: %s", job_dir, index, exc)
        return None
