"""The base of the vocabularies stored as numbers (job statuses, stop reasons).

Why a base: the harvest database holds the numbers, and rows written by older versions may hold
one the enum no longer has; every reader names a code the same way, never failing on it.
"""

from __future__ import annotations

from enum import IntEnum


class StoredCode(IntEnum):
    """An integer vocabulary whose values are stored in the harvest database."""

    @classmethod
    def name_of(cls, code: int) -> str:
        """The member's name, or the number itself for a value outside the enum (old data)."""
        try:
            return cls(code).name
        except ValueError:
            return str(code)
