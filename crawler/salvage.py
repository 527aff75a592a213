"""Finishing the output of a crawl whose process died, without crawling again.

Why: a worker can die mid-crawl (machine lost, OOM kill). What it wrote is real archive
content that may exist nowhere else by the time the job is run again, so NetarchiveSuite keeps
a dead job's partial output and post-processes it like any job's. Here that means doing
offline exactly what the crawler does when it finishes: repair the ``.open`` WARCs (cut to their
last complete record, see :func:`crawler.warcfiles.repair_open_file`), write the Heritrix
reports from the persisted crawl state and crawl.log, write the metadata WARC (job spec, logs,
reports, CDX of the data WARCs) and summary.json. The summary says ``"salvaged"`` so that the
harvest DB, the indexing chain and preservation know the harvest was partial.

The frontier is left as it is: running the same job directory again would still resume it.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from pathlib import Path
from typing import Any

from crawler import jobspec

log = logging.getLogger(__name__)

SUMMARY = "summary.json"


def salvage_output(out_dir: Path, reason: str = "crawler process died") -> dict[str, Any]:
    """Post-process a dead crawl's directory; returns the summary written to summary.json.

    Raises FileNotFoundError when there is no job.json or no crawl state (the crawl never
    started: there is nothing to salvage, and no history must be made up), and
    FileExistsError when the crawl already finished (summary.json present): a finished job's
    output must not be rewritten.
    """
    from crawler.context import CrawlContext
    from crawler.runner import _write_json, finish

    out_dir = Path(out_dir)
    job_file = out_dir / "job.json"
    if (out_dir / SUMMARY).exists():
        raise FileExistsError(f"{out_dir / SUMMARY} exists: the crawl finished, nothing to salvage")
    if not job_file.is_file():
        raise FileNotFoundError(f"{job_file}: no frozen job spec, the crawl never started here")
    if not (out_dir / "state" / "crawl.sqlite").is_file():
        raise FileNotFoundError(f"{out_dir}: no crawl state, the crawl never started here")
    spec = jobspec.load(job_file)
    open_before = {
        p.name: p.stat().st_size for p in (out_dir / "warcs").glob("*.open") if p.is_file()
    }
    # the context repairs the .open WARCs and reopens the persisted state, as a restart would
    ctx = CrawlContext(spec, out_dir)
    ctx.end_reason = "salvaged"
    summary = finish(ctx, job_file)
    repaired = []
    for name, size_before in sorted(open_before.items()):
        final = out_dir / "warcs" / name.removesuffix(".open")
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
    summary["salvaged"] = {
        "reason": reason,
        "at": dt.datetime.now(dt.UTC).isoformat(),
        "repaired_warcs": repaired,
    }
    _write_json(out_dir / SUMMARY, summary)
    log.warning(
        "job %s: salvaged partial output (%s URLs, %s bytes, %d WARCs, %d repaired): %s",
        spec.job_id,
        summary.get("urls"),
        summary.get("bytes"),
        len(summary.get("warcs", [])),
        len(repaired),
        reason,
    )
    return summary


def was_salvaged(job_dir: str | os.PathLike[str]) -> bool:
    """True when the job directory holds a summary written by :func:`salvage_output`."""
    try:
        data = json.loads((Path(job_dir) / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "salvaged" in data
