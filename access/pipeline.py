"""The functions the DAG tasks call into access, in one place (plain arguments, small results).

Why one entry: the DAG files stay tables of contents, and what a task runs is found (and
tested) here rather than in the modules behind it, as :mod:`harvest.pipeline` is for harvest.
"""

from __future__ import annotations

from typing import Any

from access import definition_index
from access.index import reindex
from access.publish import publish


def refresh_access(*, force: bool = False) -> dict[str, Any]:
    """After a big merge (the indexing_merge DAG, ``harvestflow access reindex``): the ZipNum
    indexes of every collection, then each definition's, then what is served from the harvest
    database (rules, definition collections, job views, home page). ``force``: rebuild the
    indexes even when their inputs did not change."""
    result = reindex(force=force)
    result["definitions"] = definition_index.reindex(force=force)  # harvest-<id> ZipNums
    result["published"] = publish()
    return result


__all__ = ["refresh_access"]
