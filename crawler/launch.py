"""Running a crawl job as a child process and relaying its progress to a logger.

Why a child process: Twisted's reactor cannot be restarted inside one process, and a crawl
must not take its Airflow worker down with it. The child (``python -m crawler``) prints one
``PROGRESS …`` line per interval on stdout; we relay each to the task's logger as it comes, keep
the tail of stderr for the error message, and return summary.json read through its model.
"""

from __future__ import annotations

import collections
import functools
import logging
import signal
import subprocess
import sys
import threading
from pathlib import Path

from crawler import EXIT_REFUSED, CrawlerError
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.summary import JobSummary
from harvestflow.services.process import die_with_parent

log = logging.getLogger(__name__)


class CrawlFailed(CrawlerError, RuntimeError):
    """The crawl child process failed; its output directory is left in place."""


class CrawlRefused(CrawlFailed):
    """The crawler refused its job (exit status :data:`crawler.EXIT_REFUSED`: a job spec that
    breaks the contract) and crawled nothing.

    Why apart from other failures: running the same job again is refused the same way, so a
    caller that retries failed crawls (the harvest DAG's crawl task) fails this one at once
    instead of paying for more crawler starts; the job spec must be fixed first.
    """


class CrawlUnfinished(CrawlFailed):
    """The crawl ended before the job did (SIGTERM, a lost lease, a crash the crawler survived):
    summary.json says ``unfinished`` and the frontier is saved, so a rerun resumes the job.

    Why a failure and not a success with a partial result: URLs of the job were never fetched
    and nothing will fetch them unless the job is run again; a green task and a DONE job would
    send a partial harvest to indexing and QA as a finished one. The crawl task's retry resumes
    it in the same directory (as it does for a killed crawler) and finishes it.
    """

    def __init__(self, message: str, summary: JobSummary) -> None:
        super().__init__(message)
        self.summary = summary


def crawl_in_subprocess(
    job_path: Path,
    out_dir: Path,
    *,
    logger: logging.Logger | None = None,
    progress_interval_s: float = 10,
    python: str | None = None,
    processes: int | None = None,
) -> JobSummary:
    """Run ``python -m crawler --job JOB --out DIR``; returns its summary.json.

    Raises :class:`CrawlUnfinished` when the crawl ended before the job did (exit code 3,
    summary.json ``unfinished``), :class:`CrawlRefused` when the crawler refused the job,
    :class:`CrawlFailed` when the child failed otherwise, and
    :class:`~harvestflow.contracts.ContractError` when summary.json has a field of a wrong type.
    """
    logger = logger or log
    out_dir = Path(out_dir)
    cmd = [
        python or sys.executable,
        "-m",
        "crawler",
        "--job",
        str(job_path),
        "--out",
        str(out_dir),
        "--progress-interval",
        str(progress_interval_s),
        # host-partitioned processes; None leaves it to the job's template (default 1)
        *(["--processes", str(processes)] if processes else []),
    ]
    logger.info("starting crawl: %s", " ".join(cmd))
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        # the crawl ends with the process that runs it (a killed task runner or worker):
        # SIGHUP (crawler.ownerwatch), so it saves its frontier and exits unfinished; never an
        # unsupervised orphan
        preexec_fn=functools.partial(die_with_parent, signal.SIGHUP),
    )
    tail: collections.deque[str] = collections.deque(maxlen=40)

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line.rstrip())

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        if line.startswith("PROGRESS "):
            logger.info("%s", line[len("PROGRESS ") :])
        elif line.startswith("SUMMARY "):
            logger.info("crawl finished: %s", line[len("SUMMARY ") :][:500])
    code = proc.wait()
    thread.join(timeout=5)
    summary_path = JobDir(out_dir).summary_json
    detail = "\n".join(tail) or "(no error output)"
    if code == EXIT_REFUSED:
        raise CrawlRefused(f"the crawler refused {job_path} (nothing crawled):\n{detail}")
    if code not in (0, 3) or not summary_path.exists():
        raise CrawlFailed(
            f"crawl of {job_path} failed with exit code {code}; output left in {out_dir} (a rerun"
            f" resumes from it once the cause below is fixed); last error lines:\n{detail}"
        )
    summary = JobSummary.read(summary_path)
    if code == 3 or not summary.finished:
        raise CrawlUnfinished(
            f"crawl of {job_path} ended unfinished (status {summary.status!r}, exit code {code},"
            f" {summary.urls} URLs fetched); its frontier is saved in {out_dir}: running the job"
            " again (the task's retry) resumes it",
            summary,
        )
    return summary
