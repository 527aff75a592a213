"""Preservation ingest (SPAR-like): one BagIt package per job into S3 storage, ARKs, verification.

Entry points (plain arguments, small dict results; no Airflow here):

- ``preservation.ingest.jobs_ready_for_preservation(settings=None, *, include_unindexed=False)``
- ``preservation.staging.stage_package(job_id, settings=None)``
- ``preservation.ingest.ingest_job(job_id, settings=None)``
- ``preservation.report.preservation_report(day, settings=None)``
- ``preservation.manual_queue.preservation_queue(settings=None)`` / ``release_job(job_id, ...)``
- ``preservation.ark.verify(ark)``; CLI: ``harvestflow preservation`` and ``harvestflow ark``
"""
