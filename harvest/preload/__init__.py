"""Broad-crawl preload: sources, normalisation, DNS check, redirect discovery, transfer.

The ``broad_crawl_preload`` DAG is a table of contents over these steps (plain arguments, small
dict results, no Airflow): :func:`~harvest.preload.sources.collect_sources`, then the DNS check
and the redirect probe mapped over its chunks, then :func:`~harvest.preload.transfer.transfer`.
:func:`harvest.preload.run_all.run_all` runs them all in one process (CLI ``preload run``).
"""
