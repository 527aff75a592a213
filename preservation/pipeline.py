"""The functions the preservation DAG tasks call, in one place (plain arguments, small results).

Why one entry: the DAG files stay tables of contents, and what a task runs is found (and
tested) here rather than in the modules behind it, as :mod:`harvest.pipeline` is for harvest.
"""

from __future__ import annotations

from preservation.fixity import audit, summary_lines
from preservation.ingest import ingest_job, jobs_ready_for_preservation
from preservation.outcomes import outcome_of
from preservation.records import file_preserved
from preservation.report import preservation_report

# preservation_ingest: jobs_ready_for_preservation() -> ingest_job(job_id) per job (its
#   outcome_of(result) says whether a person must act) -> preservation_report(day).
# fixity_audit: audit() then summary_lines(result) for the task log.
# indexing_merge's cleanup asks file_preserved before a repository copy is deleted.

__all__ = [
    "audit",
    "file_preserved",
    "ingest_job",
    "jobs_ready_for_preservation",
    "outcome_of",
    "preservation_report",
    "summary_lines",
]
