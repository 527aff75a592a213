"""The daily QA's document figures: per watched target, documents found, available, catalogued.

Why in the daily QA: the document harvest of watched targets is only worth its crawls if
their publications reach the catalogue; a target whose documents stay unavailable (not replayed)
or uncatalogued shows here day after day, beside the crawl figures. The figures are read from
the document step (:func:`indexing.documents.store.counts_by_target`) as they stand when the
QA runs, with the documents first found on the QA's day.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy.engine import Engine

from harvest.selection.watched import watched_targets
from indexing.documents.store import counts_by_target


def document_figures(engine: Engine, day: date) -> list[dict[str, Any]]:
    """One entry per watched target (and per target that had documents), in record order."""
    with engine.connect() as conn:
        targets = {t.record_id: t for t in watched_targets(conn)}
        counts = counts_by_target(conn, day)
    zero = {"found": 0, "found_on_day": 0, "available": 0, "catalogued": 0, "broken": 0}
    return [
        {
            "record_id": record_id,
            "title": targets[record_id].title if record_id in targets else None,
            "watched": record_id in targets,
            **counts.get(record_id, zero),
        }
        for record_id in sorted(set(targets) | set(counts))
    ]
