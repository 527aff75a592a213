"""CDX lines (11-field CDX and CDXJ) for a WARC or ARC file, identical to the reference indexer's.

Why this module: the chain, the CLI and the tests all need "the lines of this WARC" from the same
code. Lines are built from :class:`~indexing.record_model.Capture` records, whichever scanner
read them: the fast gzip scanner first, the warcio-based one when the fast one declines the file.
The lines themselves are the shared CDX model's (:mod:`harvestflow.formats.cdx`, which says what
each field holds), so the crawler's CDX and the chain's cannot differ. ARC files are read as the
reference reads them: converted to WARC records. POST and PUT responses are keyed under their
request body (:mod:`indexing.postpair`), as the reference does with ``-p``.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harvestflow.formats.cdx import CDX11_HEADER, FORMATS, cdx11_line, cdxj_line
from indexing.postpair import with_post_keys
from indexing.record_model import Capture, NotAWarcError, WarcDamage, sniff_format
from indexing.warcscan import Fallback, SkipUnsafe, scan_gzip

log = logging.getLogger(__name__)

SUFFIX = {"cdxj": ".cdxj", "cdx11": ".cdx"}


@dataclass
class IndexResult:
    """The captures of one WARC or ARC file, and the damage found (empty when it is sound)."""

    path: Path
    captures: list[Capture] = field(default_factory=list)
    damages: list[WarcDamage] = field(default_factory=list)
    scanner: str = "fast"

    @property
    def damage(self) -> WarcDamage | None:
        """The first damage (None when the file is sound)."""
        return self.damages[0] if self.damages else None

    def damage_text(self) -> str | None:
        """Every damage in one sentence (None when the file is sound)."""
        return "; ".join(str(d) for d in self.damages) or None

    def lines(self, fmt: str, filename: str | None = None) -> list[str]:
        """The file's index lines in record order (CDX11 with its header line first)."""
        name = filename or self.path.name
        if fmt == "cdxj":
            return [cdxj_line(c, name) for c in self.captures]
        if fmt == "cdx11":
            return [CDX11_HEADER] + [cdx11_line(c, name) for c in self.captures]
        raise ValueError(f"unknown CDX format {fmt!r} (expected one of {', '.join(FORMATS)})")


def index_warc(path: Path | str, *, verify: bool = True) -> IndexResult:
    """Read every indexed record of ``path`` (a WARC or ARC file, gzipped or not).

    Raises :class:`NotAWarcError` for a file that is neither. A damaged file does not raise:
    the result holds the captures of every readable record (the scan resynchronises on the next
    record after a damaged one) and ``damages`` says where and why.
    ``verify=False`` does not inflate payloads (faster; corrupt payload bytes go unnoticed).
    """
    path = Path(path)
    if sniff_format(path) == "arc":
        return _index_reference(path, arc=True)
    result = IndexResult(path, scanner="fast" if verify else "skip")
    try:
        try:
            _collect(result, scan_gzip(path, verify=verify))
            return result
        except SkipUnsafe as why:
            log.debug("%s: inflating every member (%s)", path, why)
            result = IndexResult(path)
            _collect(result, scan_gzip(path, verify=True))
            return result
    except Fallback as why:
        log.debug("%s: general scanner (%s)", path, why)
    return _index_reference(path, arc=False)


def _index_reference(path: Path, *, arc: bool) -> IndexResult:
    # imported here: warcio (and the fsspec it pulls in) costs ~0.1 CPU-second to import, and
    # only ARC files and the fast scanner's fallbacks need it
    from indexing.refscan import scan_reference

    result = IndexResult(path, scanner="warcio")
    _collect(result, scan_reference(path, arc=arc))
    return result


def _collect(result: IndexResult, items: Iterable[Capture | WarcDamage]) -> None:
    # the scan allocates ~10^4 objects per file and makes no reference cycles: the cyclic
    # collector's passes over them were ~1 % of the CPU (perf), so it waits until the end
    collecting = gc.isenabled()
    gc.disable()
    try:
        for item in with_post_keys(items):
            if isinstance(item, WarcDamage):
                result.damages.append(item)
            else:
                result.captures.append(item)
    finally:
        if collecting:
            gc.enable()


def sorted_lines(lines: Iterable[str]) -> list[str]:
    """Byte-order sort (``LC_ALL=C``) of index lines, dropping exact duplicates."""
    return sorted(set(lines), key=lambda s: s.encode("utf-8"))


def write_lines_atomic(lines: Iterable[str], dest: Path) -> Path:
    """Write ``lines`` to ``dest`` through a temporary name (a crash never leaves a half file)."""
    # imported here: harvestflow.atomic pulls in shutil and uuid, which ``index cdx`` (lines on
    # stdout, its start measured against cdxj-indexer's) never needs
    from harvestflow.atomic import atomic_open

    with atomic_open(dest, "w", newline="\n") as out:
        for line in lines:
            out.write(line)
            out.write("\n")
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
