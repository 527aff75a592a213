"""Broad-crawl preload: sources, normalisation, DNS check, redirect discovery, transfer.

The ``broad_crawl_preload`` DAG is a table of contents over these functions (plain arguments,
small dict results; nothing here imports Airflow):

1. :func:`harvest.preload.sources.collect_sources` ``(run_id, sources, settings=None)`` reads
   the sources in order of precedence, normalises every line to a registrable domain, writes
   ``<data_dir>/preload/<run_id>/rejects.tsv`` and chunk files, records origins; returns the
   per-source counts and ``chunks`` (paths to map over).
2. :func:`harvest.preload.dnstask.dns_check_chunk` ``(run_id, chunk_path, nameservers=None,
   settings=None, hosts_file=None, static_only=None)`` — mapped, resumable (skips what is in
   ``dns_checks`` for the run).
3. :func:`harvest.preload.redirects.probe_redirects` ``(run_id, chunk_path=None, settings=None,
   connect_to=None, hosts_file=None, nameservers=None, static_only=None)`` — mappable over the
   same chunks; DNS-checks the domains it discovers.
4. :func:`harvest.preload.transfer.transfer` ``(run_id, settings=None)`` then
   :func:`harvest.preload.transfer.preload_report` ``(run_id)`` (``transfer`` returns it too).

:func:`harvest.preload.run_all.run_all` runs every step in one process (CLI ``preload run``,
demo). The same DNS code runs from ``harvestflow preload check-dns FILE --nameserver HOST[:PORT]``
(:mod:`app.cli.preload`).
"""
