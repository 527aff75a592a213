"""Indexing chain: CDX/CDXJ and PATH indexes of WARCs, transfer, backup, merges, dedup index.

Entry points for the DAGs (no Airflow here): :func:`indexing.chain.ingest`,
:func:`indexing.chain.process_file`, :func:`indexing.chain.pending_files`,
:func:`indexing.merge.daily_merge`, :func:`indexing.merge.bigmerge`,
:func:`indexing.cleanup.clean_arc_repository`, :func:`indexing.dedup_index.build_dedup_index`.
"""
