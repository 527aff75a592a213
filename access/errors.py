"""The base of the own errors of the access (replay) service,
under :class:`harvestflow.errors.HarvestflowError`.

Catch :class:`AccessError` to handle any failure this package raises on purpose; each message says
what failed, where, and what to do.
"""

from __future__ import annotations

from harvestflow.errors import HarvestflowError


class AccessError(HarvestflowError):
    """A failure raised on purpose by the access package (not a bug)."""
