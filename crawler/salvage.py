"""Finishing the output of a crawl whose process died, without crawling again.

Why: a worker can die mid-crawl (machine lost, OOM kill). What it wrote is real archive
content that may exist nowhere else by the time the job is run again, so NetarchiveSuite keeps
a dead job's partial output and post-processes it like any job's. Here that means doing
offline exactly what the crawler does when it finishes: repair the ``.open`` WARCs (cut to their
last complete record, see :func:`crawler.warc.files.repair_open_file`), write the Heritrix
reports from the persisted crawl state and crawl.log, write the metadata WARC (job spec, logs,
reports, CDX of the data WARCs) and summary.json. The summary says ``"salvaged"`` so that the
harvest DB, the indexing chain and preservation know the harvest was partial.

The frontier is left as it is: running the same job directory again would still resume it.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from pathlib import Path

from crawler import jobspec
from harvestflow.contracts import ContractError
from harvestflow.contracts.jobdir import SUMMARY_JSON, JobDir
from harvestflow.contracts.summary import JobSummary

log = logging.getLogger(__name__)

SUMMARY = SUMMARY_JSON


def salvage_output(out_dir: Path, reason: str = "crawler process died") -> JobSummary:
    """Post-process a dead crawl's directory; returns the summary written to summary.json.

    Raises FileNotFoundError when there is no job.json or no crawl state (the crawl never
    started: there is nothing to salvage, and no history must be made up), and
    FileExistsError when the crawl already finished (summary.json present): a finished job's
    output must not be rewritten.
    """
    from crawler.context import CrawlContext
    from crawler.runner import finish

    out_dir = Path(out_dir)
    job = JobDir(out_dir)
    job_file = job.job_json
    if job.summary_json.exists():
        raise FileExistsError(f"{job.summary_json} exists: the crawl finished, nothing to salvage")
    if not job_file.is_file():
        raise FileNotFoundError(f"{job_file}: no frozen job spec, the crawl never started here")
    if not job.crawl_state.is_file():
        raise FileNotFoundError(f"{out_dir}: no crawl state, the crawl never started here")
    spec = jobspec.load(job_file)
    open_before = {p.name: p.stat().st_size for p in job.warcs.glob("*.open") if p.is_file()}
    # the context repairs the .open WARCs and reopens the persisted state, as a restart would
    ctx = CrawlContext(spec, out_dir)
    ctx.end_reason = "salvaged"
    summary = finish(ctx, job_file)
    repaired = []
    for name, size_before in sorted(open_before.items()):
        final = job.warcs / name.removesuffix(".open")
        kept = final.stat().st_size if final.exists() else 0
        repaired.append({"file": final.name, "bytes_before": size_before, "bytes_kept": kept})
        if kept < size_before:
            log.warning(
                "job %s: %s cut from %d to %d bytes (incomplete last record)",
                spec.job_id,
                final.name,
                size_before,
                kept,
            )
    summary.salvaged = {
        "reason": reason,
        "at": dt.datetime.now(dt.UTC).isoformat(),
        "repaired_warcs": repaired,
    }
    summary.write(job.summary_json)
    log.warning(
        "job %s: salvaged partial output (%s URLs, %s bytes, %d WARCs, %d repaired): %s",
        spec.job_id,
        summary.urls,
        summary.bytes,
        len(summary.warcs),
        len(repaired),
        reason,
    )
    return summary


def was_salvaged(job_dir: str | os.PathLike[str]) -> bool:
    """True when the job directory holds a summary written by :func:`salvage_output`."""
    try:
        return JobSummary.read(JobDir(job_dir).summary_json).salvaged is not None
    except (OSError, ContractError):
        return False
