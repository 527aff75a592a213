"""CDX lines (11-field CDX and CDXJ) for a WARC or ARC file, identical to the reference indexer's.

Why this module: the chain, the CLI and the tests all need "the lines of this WARC" from the same
code. Lines are built from :class:`~indexing.capture.Capture` records, whichever scanner read them:
the fast gzip scanner first, the warcio-based one when the fast one declines the file (and for
ARC files, read as the reference reads them: converted to WARC records).

Formats (what cdxj-indexer writes, and its ``-11`` mode):
- CDXJ: ``<surt> <timestamp> {"url", "mime", "status", "digest", "length", "offset",
  "filename"}`` in that key order, a key left out when the record has no such value;
- CDX11: header `` CDX N b a m s k r M S V g`` then ``surt timestamp url mime status digest
  redirect meta length offset filename`` with ``-`` for a missing value and the digest without
  its ``sha1:`` prefix.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from indexing.capture import Capture, NotAWarcError, WarcDamage, sniff_format, timestamp14
from indexing.refscan import scan_reference
from indexing.surt import surt_or_url
from indexing.warcscan import Fallback, SkipUnsafe, scan_gzip

log = logging.getLogger(__name__)

CDX11_HEADER = " CDX N b a m s k r M S V g"
FORMATS = ("cdxj", "cdx11")
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


def _fields(cap: Capture, filename: str) -> dict[str, str]:
    index: dict[str, str] = {}
    if cap.url is not None:
        index["url"] = cap.url
    if cap.mime is not None:
        index["mime"] = cap.mime
    if cap.status is not None:
        index["status"] = cap.status
    if cap.digest is not None:
        index["digest"] = cap.digest
    index["length"] = str(cap.length)
    index["offset"] = str(cap.offset)
    index["filename"] = filename
    return index


def _key_and_time(cap: Capture) -> tuple[str, str]:
    key = surt_or_url(cap.url) if cap.url else "-"
    return key, timestamp14(cap.date) if cap.date else "-"


# values json.dumps writes unchanged (printable ASCII without quote or backslash)
_JSON_PLAIN = re.compile(r"[ !#-\[\]-~]*\Z")


def cdxj_line(cap: Capture, filename: str) -> str:
    key, ts = _key_and_time(cap)
    fields = _fields(cap, filename)
    if _JSON_PLAIN.match("".join(fields.values())):
        # json.dumps' own output for such values, without its per-call encoder set-up
        body = ", ".join([f'"{k}": "{v}"' for k, v in fields.items()])
        return f"{key} {ts} {{{body}}}"
    return f"{key} {ts} {json.dumps(fields)}"


def cdx11_line(cap: Capture, filename: str) -> str:
    key, ts = _key_and_time(cap)
    digest = cap.digest.split(":")[-1] if cap.digest is not None else "-"
    parts = (
        key,
        ts,
        cap.url,
        cap.mime,
        cap.status,
        digest,
        "-",
        "-",
        str(cap.length),
        str(cap.offset),
        filename,
    )
    return " ".join("-" if p is None else p for p in parts)


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
    result = IndexResult(path, scanner="warcio")
    _collect(result, scan_reference(path, arc=arc))
    return result


def _collect(result: IndexResult, items: Iterable[Capture | WarcDamage]) -> None:
    for item in items:
        if isinstance(item, WarcDamage):
            result.damages.append(item)
        else:
            result.captures.append(item)


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
    "CDX11_HEADER",
    "FORMATS",
    "SUFFIX",
    "IndexResult",
    "NotAWarcError",
    "WarcDamage",
    "cdx11_line",
    "cdxj_line",
    "index_warc",
    "sorted_lines",
    "write_lines_atomic",
]
