"""Regular expressions people type (operators' URL filters, curators' crawl.log searches):
compiled by RE2, whose matching time is linear in the text, with a bounded memory.

Why one home: a pattern from a form or the CLI is applied to URLs a server chose; a
backtracking engine could be made to hang on one, and each caller setting its own options would
drift.
"""

from __future__ import annotations

from typing import Any

import re2

from harvestflow.errors import HarvestflowError

MAX_MEMORY = 8 << 20  # bytes RE2 may use for one compiled pattern


class PatternError(HarvestflowError, ValueError):
    """A pattern RE2 refuses, with its reason as text."""


def compile_linear(pattern: str) -> Any:
    """``pattern`` compiled by RE2; :class:`PatternError` with RE2's reason when refused."""
    options = re2.Options()
    options.max_mem = MAX_MEMORY
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        if isinstance(reason, bytes):  # the binding raises with bytes (b'missing ]: [')
            reason = reason.decode("utf-8", errors="replace")
        raise PatternError(str(reason)) from None
