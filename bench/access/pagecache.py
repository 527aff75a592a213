"""Evicting index files from the page cache: what makes a lookup "cold" in the access benchmarks.

Standard library only: imported by ``bench_access.py`` (the project's venv) and by
``pywb_readers.py`` (the replay venv), both run as scripts from this folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def drop_cache(paths: Iterable[str | Path]) -> None:
    """Evict the files' pages from the page cache (no root needed for clean pages)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
