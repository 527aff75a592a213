"""One job crawled by N host-partitioned child processes: the parent's side.

Why: one Scrapy process uses one core; a job split over N children (who owns which URL:
:mod:`crawler.partitioning.handoff`) uses N. Each child is an ordinary crawl of the same job
into ``state/part-<i>/``, dying with the parent. The parent starts them, detects the end
(every child idle and every inbox read), relays progress, and merges their WARCs, crawl.logs,
frontiers and summaries into the single-process job layout.
"""

from __future__ import annotations

import datetime as dt
import heapq
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from crawler import CrawlerError, jobspec
from crawler.crawllog_writer import PROGRESS_HEADER as HEADER
from crawler.jobspec import freeze_job
from crawler.partitioning.control_relay import DEFAULT_INTERVAL_S, ControlRelay
from crawler.partitioning.handoff import STOP_FILE, Partition, read_status
from crawler.reports import CRAWL_STATUS_TEXT, write_reports
from crawler.state import SCHEMA, CrawlState, FrontierState
from crawler.warc.metadata import write_metadata_warc
from harvestflow.atomic import atomic_open
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.summary import DomainSummary, JobSummary
from harvestflow.formats.stop_reasons import StopReason
from harvestflow.services.process import die_with_parent

log = logging.getLogger(__name__)
progress_log = logging.getLogger("crawler.progress")

POLL_S = 0.05  # a poll reads two small status files: cheap; the job's end waits for it
STATUS_RANK = {"complete": 0, "time_limit": 1, "stopped": 2, "unfinished": 3}


class PartitionFailed(CrawlerError, RuntimeError):
    """A partition child failed; the others were stopped and the output is left in place."""


def _part_dir(out: Path, index: int) -> Path:
    return JobDir(out).part(index).path


def _start_children(
    job_file: Path, out: Path, count: int, coord: Path, interval: float
) -> list[subprocess.Popen[bytes]]:
    children = []
    for i in range(count):
        part = _part_dir(out, i)
        JobDir(part).logs.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "crawler",
            "--job",
            str(job_file),
            "--out",
            str(part),
            "--partition",
            f"{i}/{count}",
            "--coord",
            str(coord),
            "--progress-interval",
            str(interval),
        ]
        with (JobDir(part).logs / "child-output.log").open("ab") as fh:
            children.append(
                subprocess.Popen(
                    cmd, stdout=fh, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
                )
            )
    log.info("started %d partition children: %s", count, [c.pid for c in children])
    return children


def _all_drained(children: list[subprocess.Popen[bytes]], part: Partition) -> bool:
    statuses = [read_status(part.status_file(i)) for i in range(part.count)]
    for child, status in zip(children, statuses, strict=True):
        if status is None or status.get("pid") != child.pid or not status.get("idle"):
            return False
    for i, status in enumerate(statuses):
        inbox = part.inbox(i)
        size = inbox.stat().st_size if inbox.exists() else 0
        if size != status["consumed"]:  # type: ignore[index]
            return False
    return True


class _Progress:
    """One aggregated progress line (task log) and progress-statistics.log line per interval."""

    def __init__(self, job_id: int, part: Partition, path: Path, interval: float) -> None:
        self.job_id, self.part, self.interval = job_id, part, interval
        self.path = path
        new = not self.path.exists()
        self.fh = self.path.open("a", encoding="utf-8", buffering=1)
        if new:
            self.fh.write(HEADER + "\n")
        self.started = self.last_t = time.monotonic()
        self.last_urls = 0

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_t < self.interval:
            return
        statuses = [read_status(self.part.status_file(i)) or {} for i in range(self.part.count)]
        total = {
            k: sum(int(s.get(k, 0)) for s in statuses)
            for k in ("urls_done", "bytes_done", "failures", "queued", "discovered", "busy")
        }
        rate_now = (total["urls_done"] - self.last_urls) / max(now - self.last_t, 1e-6)
        rate_avg = total["urls_done"] / max(now - self.started, 1e-6)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.fh.write(
            f"{stamp} {total['discovered']:>11} {total['queued']:>11} {total['urls_done']:>11}"
            f" {rate_now:>7.2f}({rate_avg:.2f})"
            f" {total['bytes_done'] / 1024 / max(now - self.last_t, 1e-6):>7.0f}"
            f"({total['bytes_done'] / 1024 / max(now - self.started, 1e-6):.0f})"
            f" {total['failures']:>13} {total['busy']:>13} {0:>12} {0:>13} {0:>12} {0:>11}"
            f" {0:>11}\n"
        )
        per = ", ".join(f"p{i}:{s.get('urls_done', 0)}" for i, s in enumerate(statuses))
        progress_log.info(
            "crawl job %s: %d URLs done, %d queued, %.1f MB, %.1f URLs/s (%.1f now),"
            " %d failures | processes: %s",
            self.job_id,
            total["urls_done"],
            total["queued"],
            total["bytes_done"] / 1e6,
            rate_avg,
            rate_now,
            total["failures"],
            per,
        )
        self.last_t, self.last_urls = now, total["urls_done"]

    def close(self, status: str) -> None:
        self.tick(force=True)
        end = {"complete": "CRAWL ENDED - Finished", "time_limit": "CRAWL ENDING - Timelimit hit"}
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.fh.write(f"{stamp} {end.get(status, 'CRAWL ENDING - Ended by operator')}\n")
        self.fh.close()


def _run_children(
    job_file: Path, out: Path, part: Partition, spec: jobspec.JobSpec, interval: float
) -> None:
    job_id = spec.job_id
    progress = _Progress(job_id, part, JobDir(out).progress_log, interval)
    # operators' actions (crawler/control.py): polled here once for the job, relayed to each child
    relay = (
        ControlRelay(
            job_id,
            part.coord_dir,
            part.count,
            JobDir(out).actions_log,
            spec.job_control_interval_s or DEFAULT_INTERVAL_S,
        )
        if spec.job_control
        else None
    )
    children = _start_children(job_file, out, part.count, part.coord_dir, interval)
    stopping = False
    try:
        while True:
            codes = [c.poll() for c in children]
            if all(code is not None for code in codes):
                break
            failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0, 3)]
            if failed:
                raise PartitionFailed(
                    f"partition child(ren) {failed} failed; see "
                    f"{_part_dir(out, failed[0][0])}/logs/child-output.log"
                )
            if not stopping and (
                any(code is not None for code in codes) or _all_drained(children, part)
            ):
                # all idle and drained, or one child ended on its own (time limit): stop all
                part.stop_file.touch()
                stopping = True
                log.info("partitioned job %s: stopping the children", job_id)
            progress.tick()
            if relay is not None:
                relay.tick()
            time.sleep(POLL_S)
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            child.wait()
    status = _merged_status(out, part.count)
    if relay is not None:
        relay.finish(status)
    progress.close(status)


def _merged_status(out: Path, count: int) -> str:
    status = "complete"
    for i in range(count):
        path = JobDir(out).part(i).summary_json
        s = (JobSummary.read(path).status or "unfinished") if path.exists() else "unfinished"
        if STATUS_RANK.get(s, 2) > STATUS_RANK[status]:
            status = s
    return status


# --- merging ------------------------------------------------------------------------------------
def _merge_crawl_logs(sources: list[Path], target: Path) -> None:
    """Merge the children's crawl.log by their (leading, ISO) timestamps."""
    handles = [p.open(encoding="utf-8") for p in sources if p.exists()]
    try:
        with atomic_open(target, "w") as fh:
            fh.writelines(heapq.merge(*handles, key=lambda line: line[:24]))
    finally:
        for h in handles:
            h.close()


def _merge_states(sources: list[Path], target: Path) -> CrawlState:
    """One state database from the children's (handed-off rows left out) for the reports."""
    target.unlink(missing_ok=True)
    db = sqlite3.connect(str(target), isolation_level=None)
    db.executescript(SCHEMA)
    for i, src in enumerate(sources):
        if not src.exists():
            continue
        db.execute(f"ATTACH DATABASE ? AS c{i}", (str(src),))
        db.execute("BEGIN")
        db.execute(
            f"INSERT OR IGNORE INTO urls SELECT * FROM c{i}.urls WHERE status != ?",
            (FrontierState.HANDED_OFF,),
        )
        db.execute(f"INSERT OR IGNORE INTO seeds SELECT * FROM c{i}.seeds")
        db.execute(
            f"INSERT OR IGNORE INTO meta SELECT * FROM c{i}.meta WHERE key LIKE 'redirect:%'"
        )
        db.execute("COMMIT")
        db.execute(f"DETACH DATABASE c{i}")
    db.close()
    return CrawlState(target)


def _merge_domains(summaries: list[JobSummary]) -> dict[str, DomainSummary]:
    """Per-domain objects and bytes summed; the stop reason of the partition that stopped it."""
    merged: dict[str, DomainSummary] = {}
    for s in summaries:
        for name, d in s.domains.items():
            m = merged.setdefault(
                name,
                replace(
                    d, objects=0, bytes=0, stop_reason=StopReason.DOWNLOAD_COMPLETE, in_job=False
                ),
            )
            m.objects += d.objects
            m.bytes += d.bytes
            m.in_job = m.in_job or d.in_job
            if (
                d.stop_reason != StopReason.DOWNLOAD_COMPLETE
                and m.stop_reason == StopReason.DOWNLOAD_COMPLETE
            ):
                m.stop_reason = d.stop_reason
    return merged


def merge(out: Path, count: int, spec: jobspec.JobSpec, job_file: Path) -> JobSummary:
    """The job's outputs from its children's (idempotent: a rerun merges again)."""
    job = JobDir(out)
    parts = [job.part(i) for i in range(count)]
    warc_dir, log_dir, report_dir = job.warcs, job.logs, job.reports
    for d in (warc_dir, log_dir, report_dir):
        d.mkdir(parents=True, exist_ok=True)
    for part in parts:
        for p in sorted(part.warcs.glob("*.warc.gz*")):
            if not p.name.endswith(".open"):
                # a move of a closed WARC (committed by its writer), not a write: no helper
                os.replace(p, warc_dir / p.name)
        if part.crawler_log.exists():
            shutil.copyfile(part.crawler_log, log_dir / f"crawler-{part.path.name}.log")
    _merge_crawl_logs([p.crawl_log for p in parts], job.crawl_log)
    summaries = [JobSummary.read(p.summary_json) for p in parts]
    status = _merged_status(out, count)
    started = min(dt.datetime.fromisoformat(s.started) for s in summaries)
    state = _merge_states([p.crawl_state for p in parts], job.state / "merged.sqlite")
    try:
        write_reports(
            report_dir,
            job.crawl_log,
            state,
            spec.seeds,
            f"job-{spec.job_id}",
            CRAWL_STATUS_TEXT[status],
            started.timestamp(),
        )
    finally:
        state.close()
    if spec.template.render != "none":
        from crawler.rendering.shots import SCREENSHOT_REPORT, merge_screenshot_reports

        merge_screenshot_reports(
            [p.report(SCREENSHOT_REPORT) for p in parts], job.report(SCREENSHOT_REPORT)
        )
        from crawler.rendering.behaviours.report import (
            BEHAVIOUR_HEADER,
            BEHAVIOUR_REPORT,
            merge_reports,
        )

        merge_reports(
            [p.report(BEHAVIOUR_REPORT) for p in parts],
            job.report(BEHAVIOUR_REPORT),
            BEHAVIOUR_HEADER,
        )
        from harvestflow.contracts.qa_report import merge_qa_reports

        merge_qa_reports([p.reports for p in parts], job.reports)  # the QA pass's
    cdx = job.recorded_cdx
    with cdx.open("wb") as fh:
        for part in parts:
            src = part.recorded_cdx
            if src.exists():
                fh.write(src.read_bytes())
    repaired = sorted({name for s in summaries for name in s.repaired_warcs})
    data_warcs = sorted(warc_dir.glob(f"{spec.warc_prefix}-*.warc.gz"))
    meta = write_metadata_warc(
        warc_dir,
        spec.job_id,
        spec.harvest_id,
        spec.organisation,
        {
            "setup": [job_file],
            "logs": sorted(log_dir.glob("*.log")),
            "reports": sorted(report_dir.glob("*.txt")),
        },
        data_warcs,
        recorded_cdx=cdx,
        reindex=set(repaired),
    )
    summary = JobSummary(
        job_id=spec.job_id,
        status=status,
        started=started.isoformat(),
        ended=dt.datetime.now(dt.UTC).isoformat(),
        urls=sum(s.urls for s in summaries),
        bytes=sum(s.bytes for s in summaries),
        warcs=[p.name for p in data_warcs],
        metadata_warc=meta.name,
        domains=_merge_domains(summaries),
        repaired_warcs=repaired,
        processes=count,
        # the children's peak resident sizes added up (the parent's own is small)
        peak_rss_kb=sum(s.peak_rss_kb or 0 for s in summaries),
    )
    summary.write(job.summary_json)
    return summary


def run_partitioned(
    job_path: Path, out_dir: Path, processes: int, *, progress_interval_s: float = 10.0
) -> JobSummary:
    """Crawl the job of ``job_path`` into ``out_dir`` with ``processes`` children; running it
    again on the same ``out_dir`` resumes every partition (with the same number of processes)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    job_file = freeze_job(Path(job_path), out)
    spec = jobspec.load(job_file)
    coord = JobDir(out).partitions
    coord.mkdir(parents=True, exist_ok=True)
    JobDir(out).logs.mkdir(exist_ok=True)
    recorded = coord / "processes"
    if recorded.exists() and int(recorded.read_text()) != processes:
        # the partition of a host must not change mid-job: keep the first run's number
        log.warning(
            "job %s was started with %s processes; keeping that",
            spec.job_id,
            recorded.read_text().strip(),
        )
        processes = int(recorded.read_text())
    recorded.write_text(f"{processes}\n")
    (coord / STOP_FILE).unlink(missing_ok=True)
    for p in coord.glob("status-*.json*"):
        p.unlink()
    JobDir(out).summary_json.unlink(missing_ok=True)
    part = Partition(-1, processes, coord)
    _run_children(job_file, out, part, spec, progress_interval_s)
    return merge(out, processes, spec, job_file)
