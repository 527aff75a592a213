"""The functions the indexing DAG tasks call, in one place (plain arguments, small results).

Why one entry: the DAG files stay tables of contents, and what a task runs is found (and
tested) here rather than in the modules behind it, as :mod:`harvest.pipeline` is for harvest.
"""

from __future__ import annotations

from indexing.chain import ingest, pending_files, process_file
from indexing.cleanup import clean_arc_repository
from indexing.dedup_index import dedup_index_for_job
from indexing.documents.availability import check_new as check_documents
from indexing.documents.scan import extract_file as extract_documents
from indexing.documents.scan import pending_files as document_pending_files
from indexing.fulltext import extract_file as extract_text
from indexing.fulltext import pending_files as text_pending_files
from indexing.merge import bigmerge, daily_merge
from indexing.nrt import LiveWatcher, pywb_config

# indexing_chain: ingest() -> pending_files() -> process_file(name) per file (index, transfer,
#   backup, delete); beside it text_pending_files() -> extract_text(name) and
#   document_pending_files() -> extract_documents(name) -> check_documents().
# indexing_merge: daily_merge(day) -> bigmerge() -> clean_arc_repository(preserved=...) (and
#   access.pipeline.refresh_access()).
# Harvest and the continuous crawl: dedup_index_for_job (given to prepare_job), LiveWatcher
#   and pywb_config (the live index of the continuous crawl's WARCs).

__all__ = [
    "LiveWatcher",
    "bigmerge",
    "check_documents",
    "clean_arc_repository",
    "daily_merge",
    "dedup_index_for_job",
    "document_pending_files",
    "extract_documents",
    "extract_text",
    "ingest",
    "pending_files",
    "process_file",
    "pywb_config",
    "text_pending_files",
]
