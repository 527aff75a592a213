"""A crawl job's status: NetarchiveSuite's ``JobStatus``, stored as its number in ``jobs.status``.

Why one enum: the harvest database (sql/001's CHECK and forward-only trigger), the job
generator, the crawl pipeline, recovery, indexing, preservation, QA and the curator pages all
read or write these numbers; naming them once keeps SQL and Python from drifting apart. SQL
text takes the numbers from here (``f"status = {JobStatus.DONE:d}"`` or a bound parameter),
never as bare literals.
"""

from __future__ import annotations

from harvestflow.formats.codes import StoredCode


class JobStatus(StoredCode):
    """NetarchiveSuite's job status; it only moves forward, except FAILED_REJECTED → FAILED."""

    NEW = 0
    """Generated, not yet prepared for a crawler."""
    SUBMITTED = 1
    """Its frozen spec (job.json) is written: a crawler may take it."""
    STARTED = 2
    """A crawler runs it."""
    DONE = 3
    """Crawled; its history and reports are recorded (an operator's stop ends DONE too)."""
    FAILED = 4
    """The crawl failed; its partial output is kept."""
    RESUBMITTED = 5
    """Its crawler died; a new job with the same spec replaces it (``resubmitted_as_job``)."""
    FAILED_REJECTED = 6
    """A failure an operator rejected (NetarchiveSuite's); may still move back to FAILED."""


RUNNING = frozenset({JobStatus.SUBMITTED, JobStatus.STARTED})
"""Handed to a crawler and not finished: the only jobs an operator's action can reach."""
FAILURES = frozenset({JobStatus.FAILED, JobStatus.FAILED_REJECTED})
"""The failed states counted together on the curator pages."""
