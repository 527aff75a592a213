"""Full-text search of the archive: text extraction from captured payloads and a search backend.

Why a package of its own: the indexing chain (``indexing.fulltext``) feeds it, the CLI and the
access pages query it, and a future backend (OpenSearch, Solr; see docs/scaling.md) replaces
one module of it (:mod:`search.pg`) behind the narrow interface of :mod:`search.model`.
Nothing here imports Airflow or another stage package's tables.
"""
