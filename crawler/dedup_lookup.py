"""The deduplication index: earlier captures by URL, for revisit records and conditional GETs.

File format (written by indexing/, sorted by URL in byte order), one capture per line:
``url \\t sha1:DIGEST \\t WARC-Date \\t warc file \\t offset \\t record id \\t etag|- \\t last-modified|-``.

Why keyed by canonical URL: the index may have been written from URLs spelled slightly
differently (case of the host, default port, query order); the crawler's seen-set key matches
them. When a URL appears several times the last line wins (the newest capture).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from harvestflow.formats.urls import canonical_key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EarlierCapture:
    url: str
    digest: str
    date: str
    filename: str
    offset: int
    record_id: str | None
    etag: str | None
    last_modified: str | None


def load_index(path: Path) -> dict[str, EarlierCapture]:
    """Read a dedup index; malformed lines are reported (file:line) and skipped."""
    index: dict[str, EarlierCapture] = {}
    bad = 0
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 5:
                bad += 1
                log.warning("%s:%d: dedup line with %d fields, skipped", path, lineno, len(parts))
                continue
            parts += ["-"] * (8 - len(parts))
            url, digest, date, filename, offset, rec_id, etag, lastmod = parts[:8]
            if not digest.startswith("sha1:"):
                digest = "sha1:" + digest
            try:
                off = int(offset)
            except ValueError:
                bad += 1
                log.warning("%s:%d: bad offset %r, skipped", path, lineno, offset)
                continue
            index[canonical_key(url)] = EarlierCapture(
                url=url,
                digest=digest.upper().replace("SHA1:", "sha1:"),
                date=date,
                filename=filename,
                offset=off,
                record_id=None if rec_id in ("", "-") else rec_id,
                etag=None if etag in ("", "-") else etag,
                last_modified=None if lastmod in ("", "-") else lastmod,
            )
    log.info("dedup index %s: %d captures (%d bad lines)", path, len(index), bad)
    return index


def by_digest(index: dict[str, EarlierCapture]) -> dict[str, EarlierCapture]:
    """Payload digest -> a capture holding it (the newest by date when several URLs do)."""
    found: dict[str, EarlierCapture] = {}
    for capture in index.values():
        held = found.get(capture.digest)
        if held is None or capture.date > held.date:
            found[capture.digest] = capture
    return found
