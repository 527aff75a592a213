"""The base of the own errors of the daily quality assurance,
under :class:`harvestflow.errors.HarvestflowError`.

Catch :class:`QaError` to handle any failure this package raises on purpose; each message says
what failed, where, and what to do.
"""

from __future__ import annotations

from harvestflow.errors import HarvestflowError


class QaError(HarvestflowError):
    """A failure raised on purpose by the qa package (not a bug)."""
