"""The functions the harvest DAG tasks call, in one place (plain arguments, small results).

Why one entry: the DAG files stay tables of contents, and what a task runs is found (and
tested) here rather than in a module behind it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crawler.launch import CrawlRefused
    from harvest.bootstrap import ensure_reference_data
    from harvest.channels import split_by_channel
    from harvest.crawltask import crawl_prepared_job
    from harvest.definitions import advance_schedule, due_definitions
    from harvest.jobs import list_jobs, mark_started, prepare_job
    from harvest.oneoff import (
        PARAMS_SCHEMA,
        create_seedlist_harvest,
        finish_oneoff,
        start_oneoff,
        validate_params,
    )
    from harvest.planning import generate_due_jobs, generate_jobs
    from harvest.preload.dnstask import dns_check_chunk
    from harvest.preload.redirects import probe_redirects
    from harvest.preload.sources import collect_sources
    from harvest.preload.transfer import preload_report
    from harvest.preload.transfer import transfer as transfer_domains
    from harvest.recovery import find_dead_jobs, resubmit_dead_jobs, resubmit_job
    from harvest.results import record_job_results
    from harvest.selection.importer import import_file
    from harvest.selection.transfer import transfer_selection_records
    from harvest.snapshot import (
        create_snapshot_definition,
        create_step2_definition,
        domains_for_step2,
    )

# name -> the module that owns it: imported when first asked for (PEP 562), so a task imports
# what it runs and no more (the crawl's modules pull in Scrapy and Twisted: ~1 CPU-second that
# every preload, indexing or bookkeeping task paid at start)
_HOMES = {
    "ensure_reference_data": "harvest.bootstrap",
    "split_by_channel": "harvest.channels",
    "crawl_prepared_job": "harvest.crawltask",
    "CrawlRefused": "crawler.launch",  # what crawl_prepared_job raises for a refused spec
    "advance_schedule": "harvest.definitions",
    "due_definitions": "harvest.definitions",
    "list_jobs": "harvest.jobs",
    "mark_started": "harvest.jobs",
    "prepare_job": "harvest.jobs",
    "PARAMS_SCHEMA": "harvest.oneoff",
    "create_seedlist_harvest": "harvest.oneoff",
    "finish_oneoff": "harvest.oneoff",
    "start_oneoff": "harvest.oneoff",
    "validate_params": "harvest.oneoff",
    "generate_due_jobs": "harvest.planning",
    "generate_jobs": "harvest.planning",
    "dns_check_chunk": "harvest.preload.dnstask",
    "probe_redirects": "harvest.preload.redirects",
    "collect_sources": "harvest.preload.sources",
    "preload_report": "harvest.preload.transfer",
    "transfer_domains": "harvest.preload.transfer:transfer",
    "find_dead_jobs": "harvest.recovery",
    "resubmit_dead_jobs": "harvest.recovery",
    "resubmit_job": "harvest.recovery",
    "record_job_results": "harvest.results",
    "import_file": "harvest.selection.importer",
    "transfer_selection_records": "harvest.selection.transfer",
    "create_snapshot_definition": "harvest.snapshot",
    "create_step2_definition": "harvest.snapshot",
    "domains_for_step2": "harvest.snapshot",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = home.partition(":")
    value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


# Order of a ``selective_harvest_<frequency>`` run::
#
#     ensure_reference_data()
#     transfer_selection_records(frequency)            # curators' records -> definitions
#     ids = due_definitions(frequency, logical_date)
#     jobs = generate_due_jobs(ids, logical_date)      # generate_jobs per definition; one
#                                                      # that fails is deactivated, others go on
#     path = prepare_job(job_id, data_dir)             # per job, then crawl it
#     crawl_prepared_job(job_id, path)                 # mark_started, the crawl under the
#                                                      # job's lease (unfinished: raises)
#     record_job_results(job_id)
#     advance_schedule(harvest_id, logical_date)
#
# Broad crawl: ``create_snapshot_definition`` (step 1), ``create_step2_definition`` (step 2), then
# the same ``generate_jobs`` / ``prepare_job`` / ``record_job_results``. One-off harvests:
# ``validate_params`` then ``create_seedlist_harvest`` (or an existing definition id), then
# ``generate_jobs``, then ``finish_oneoff`` (a scheduled definition's schedule is not moved).
# Maintenance: ``resubmit_dead_jobs``. Crawl channels: ``split_by_channel``. Broad-crawl
# preload: ``collect_sources``, ``dns_check_chunk``, ``probe_redirects``, ``transfer_domains``,
# ``preload_report``. (The continuous crawl's DAGs call its own entry, harvest.continuous.service.)

__all__ = [
    "PARAMS_SCHEMA",
    "CrawlRefused",
    "advance_schedule",
    "collect_sources",
    "crawl_prepared_job",
    "create_seedlist_harvest",
    "create_snapshot_definition",
    "create_step2_definition",
    "dns_check_chunk",
    "domains_for_step2",
    "due_definitions",
    "ensure_reference_data",
    "find_dead_jobs",
    "finish_oneoff",
    "generate_due_jobs",
    "generate_jobs",
    "import_file",
    "list_jobs",
    "mark_started",
    "preload_report",
    "prepare_job",
    "probe_redirects",
    "record_job_results",
    "resubmit_dead_jobs",
    "resubmit_job",
    "split_by_channel",
    "start_oneoff",
    "transfer_domains",
    "transfer_selection_records",
    "validate_params",
]
