"""The base of the own errors of full-text search,
under :class:`harvestflow.errors.HarvestflowError`.

Catch :class:`SearchError` to handle any failure this package raises on purpose; each message says
what failed, where, and what to do.
"""

from __future__ import annotations

from harvestflow.errors import HarvestflowError


class SearchError(HarvestflowError):
    """A failure raised on purpose by the search package (not a bug)."""
