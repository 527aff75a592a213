"""Validation of what people type into seed lists and selection files.

The checks live in the core (:mod:`harvestflow.formats.seeds`), shared with the crawler's
command line (``harvestflow crawl --seed``); the selection import, the QA feedback and the
feeds import them from here.
"""

from __future__ import annotations

from harvestflow.formats.seeds import (
    MAX_FIELD_BYTES,
    MAX_URL_CHARS,
    SeedError,
    check_seed_url,
    check_text,
)

__all__ = ["MAX_FIELD_BYTES", "MAX_URL_CHARS", "SeedError", "check_seed_url", "check_text"]
