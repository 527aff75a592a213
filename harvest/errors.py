"""The base of the own errors of harvest planning (jobs, schedules, selection, preload),
under :class:`harvestflow.errors.HarvestflowError`.

Catch :class:`HarvestError` to handle any failure this package raises on purpose; each message says
what failed, where, and what to do.
"""

from __future__ import annotations

from harvestflow.errors import HarvestflowError


class HarvestError(HarvestflowError):
    """A failure raised on purpose by the harvest package (not a bug)."""
