"""CDX lines (11-field CDX and CDXJ) for a WARC file, identical to the reference indexer's.

Why this module: the chain, the CLI and the tests all need "the lines of this WARC" from the same
code. Lines are built from :class:`~indexing.capture.Capture` records, whichever scanner read them:
the fast gzip scanner first, the warcio-based one when the fast one declines the file. The lines
themselves are the shared CDX model's (:mod:`harvestflow.formats.cdx`, which says what each field
holds), so the crawler's CDX and the chain's cannot differ.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harvestflow.formats.cdx import CDX11_HEADER, FORMATS, cdx11_line, cdxj_line
from indexing.capture import Capture, NotAWarcError, WarcDamage
from indexing.refscan import scan_reference
from indexing.warcscan import Fallback, SkipUnsafe, scan_gzip

log = logging.getLogger(__name__)

SUFFIX = {"cdxj": ".cdxj", "cdx11": ".cdx"}


@dataclass
class IndexResult:
    """The captures of one WARC, and the damage found (None when the file is sound)."""

    path: Path
    captures: list[Capture] = field(default_factory=list)
    damage: WarcDamage | None = None
    scanner: str = "fast"

    def lines(self, fmt: str, filename: str | None = None) -> list[str]:
        """The file's index lines in record order (CDX11 with its header line first)."""
        name = filename or self.path.name
        if fmt == "cdxj":
            return [cdxj_line(c, name) for c in self.captures]
        if fmt == "cdx11":
            return [CDX11_HEADER] + [cdx11_line(c, name) for c in self.captures]
        raise ValueError(f"unknown CDX format {fmt!r} (expected one of {', '.join(FORMATS)})")


def index_warc(path: Path | str, *, verify: bool = True) -> IndexResult:
    """Read every indexed record of ``path``.

    Raises :class:`NotAWarcError` for a file that is not a WARC. A damaged file does not raise:
    the result holds the captures before the damage and ``damage`` says where and why.
    ``verify=False`` does not inflate payloads (faster; corrupt payload bytes go unnoticed).
    """
    path = Path(path)
    result = IndexResult(path, scanner="fast" if verify else "skip")
    try:
        try:
            for cap in scan_gzip(path, verify=verify):
                result.captures.append(cap)
            return result
        except SkipUnsafe as why:
            log.debug("%s: inflating every member (%s)", path, why)
            result = IndexResult(path)
            for cap in scan_gzip(path, verify=True):
                result.captures.append(cap)
            return result
    except Fallback as why:
        log.debug("%s: general scanner (%s)", path, why)
    except WarcDamage as damage:
        result.damage = damage
        return result
    result = IndexResult(path, scanner="warcio")
    try:
        for cap in scan_reference(path):
            result.captures.append(cap)
    except WarcDamage as damage:
        result.damage = damage
    return result


def sorted_lines(lines: Iterable[str]) -> list[str]:
    """Byte-order sort (``LC_ALL=C``) of index lines, dropping exact duplicates."""
    return sorted(set(lines), key=lambda s: s.encode("utf-8"))


def write_lines_atomic(lines: Iterable[str], dest: Path) -> Path:
    """Write ``lines`` to ``dest`` through a temporary name (a crash never leaves a half file)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as out:
        for line in lines:
            out.write(line)
            out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, dest)
    return dest


__all__ = [
    "SUFFIX",
    "IndexResult",
    "NotAWarcError",
    "WarcDamage",
    "index_warc",
    "sorted_lines",
    "write_lines_atomic",
]
