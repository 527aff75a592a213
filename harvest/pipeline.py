"""The functions the harvest DAG tasks call, in one place (plain arguments, small results).

Order of a ``selective_harvest_<frequency>`` run::

    ensure_reference_data()
    transfer_selection_records(frequency)            # curators' records -> definitions
    ids = due_definitions(frequency, logical_date)
    jobs = generate_jobs(harvest_id, logical_date)   # per definition
    path = prepare_job(job_id, data_dir)             # per job, then crawl it
    mark_started(job_id); ...crawl...; record_job_results(job_id)
    advance_schedule(harvest_id, logical_date)
"""

from __future__ import annotations

from harvest.bootstrap import ensure_reference_data
from harvest.definitions import advance_schedule, due_definitions
from harvest.demo import create_demo_definition
from harvest.jobs import list_jobs, mark_started, prepare_job
from harvest.planning import generate_jobs
from harvest.results import record_job_results

__all__ = [
    "advance_schedule",
    "create_demo_definition",
    "due_definitions",
    "ensure_reference_data",
    "generate_jobs",
    "list_jobs",
    "mark_started",
    "prepare_job",
    "record_job_results",
]
