"""The base of the indexing chain's own errors,
under :class:`harvestflow.errors.HarvestflowError`.

Catch :class:`IndexingError` to handle any failure this package raises on purpose; each message
says what failed, where (file, offset), and what to do.
"""

from __future__ import annotations

from harvestflow.errors import HarvestflowError


class IndexingError(HarvestflowError):
    """A WARC/ARC file or an index the chain cannot process as it is (not a bug)."""
