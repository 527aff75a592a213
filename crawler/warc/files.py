"""WARC files: size-based rotation, ``.open`` while written, repair of files a crash left open.

Why: a WARC under its final name must be complete, so readers (indexing, preservation) never see
half a file; a crawler killed with -9 leaves ``*.warc.gz.open`` files whose last record may be
cut, and a restart must close them *without losing the complete records before the cut*.
Every record is one gzip member, flushed to the OS as soon as it is written, so everything up to
the last complete member survives a process crash.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord
from warcio.warcwriter import WARCWriter

from harvestflow.atomic import commit

log = logging.getLogger(__name__)

OPEN_SUFFIX = ".open"
WARC_VERSION = "WARC/1.1"


def ts17(when: dt.datetime | None = None) -> str:
    """Heritrix's 17-digit timestamp (yyyyMMddHHmmssSSS, UTC)."""
    when = when or dt.datetime.now(dt.UTC)
    return when.strftime("%Y%m%d%H%M%S") + f"{when.microsecond // 1000:03d}"


def repair_open_file(path: Path) -> tuple[Path, int]:
    """Cut an ``.open`` WARC after its last complete record and give it its final name.

    Returns (final path, number of complete records kept). A file with no complete record is
    kept as ``<name>.damaged`` rather than deleted: we never delete what is not stored elsewhere.
    """
    good_end = 0
    count = 0
    size = path.stat().st_size
    with path.open("rb") as fh:
        it = ArchiveIterator(fh, check_digests=True)
        try:
            for record in it:
                # a cut record reads short without an error: its block digest tells
                while record.raw_stream.read(1 << 16):
                    pass
                it.read_to_end(record)
                end = it.get_record_offset() + it.get_record_length()
                has_digest = bool(record.rec_headers.get_header("WARC-Block-Digest"))
                passed = record.digest_checker.passed
                if passed is False or (passed is None and has_digest) or end > size:
                    log.warning("%s: record at %d is incomplete", path, it.get_record_offset())
                    break
                good_end = end
                count += 1
        except Exception as exc:  # a cut gzip member or header: everything before is kept
            log.warning("%s: damaged after offset %d (%s); cutting there", path, good_end, exc)
    if good_end < size:
        with path.open("r+b") as fh:
            fh.truncate(good_end)
    final = path.with_name(path.name[: -len(OPEN_SUFFIX)])
    if count == 0:
        final = path.with_name(path.name[: -len(OPEN_SUFFIX)] + ".damaged")
    commit(path, final)  # the ".open" name is the WARC's own temporary name
    log.info("closed %s: %d complete records, %d bytes cut", final.name, count, size - good_end)
    return final, count


class RotatingWarcWriter:
    """Writes records to ``<prefix>-<ts17>-<serial5>-<host>.warc.gz``, rotating at a size.

    The serial number continues after the highest one already in the directory, so a resumed
    job never reuses a name. ``on_close`` (optional) is called with the final path of each file
    right after its ``.open`` rename, so a caller can hand it on at once (the continuous crawl
    indexes it for replay); an exception in the hook is logged, never lost with the file.
    """

    def __init__(
        self,
        directory: Path,
        prefix: str,
        max_size: int,
        warcinfo: dict[str, str],
        hostname: str | None = None,
        on_close: Callable[[Path], None] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.max_size = max_size
        self.warcinfo = warcinfo
        self.on_close = on_close
        self.hostname = re.sub(r"[^A-Za-z0-9.-]", "-", hostname or socket.gethostname())
        self.serial = self._next_serial()
        self.closed_files: list[str] = []
        self._fh: Any = None
        self._writer: WARCWriter | None = None
        self._path: Path | None = None
        self.bytes_written = 0

    def _next_serial(self) -> int:
        pattern = re.compile(re.escape(self.prefix) + r"-\d{17}-(\d{5})-")
        serials = [
            int(m.group(1)) for p in self.directory.iterdir() if (m := pattern.match(p.name))
        ]
        return max(serials) + 1 if serials else 0

    @property
    def current_name(self) -> str | None:
        return self._path.name[: -len(OPEN_SUFFIX)] if self._path else None

    def _open(self) -> None:
        name = f"{self.prefix}-{ts17()}-{self.serial:05d}-{self.hostname}.warc.gz"
        self.serial += 1
        self._path = self.directory / (name + OPEN_SUFFIX)
        self._fh = self._path.open("xb")
        self._writer = WARCWriter(self._fh, gzip=True, warc_version=WARC_VERSION)
        info = self._writer.create_warcinfo_record(name, dict(self.warcinfo))
        self._writer.write_record(info)
        self._fh.flush()

    def write(self, *records: ArcWarcRecord) -> list[tuple[str, int, int]]:
        """Write records together in one file; returns (file name, offset, length) of each."""
        if self._writer is None:
            self._open()
        assert self._writer is not None and self._path is not None
        placed = []
        name = self.current_name or ""
        for record in records:
            offset = self._fh.tell()
            self._writer.write_record(record)
            placed.append((name, offset, self._fh.tell() - offset))
        self._fh.flush()
        size = self._fh.tell()
        self.bytes_written += sum(p[2] for p in placed)
        if size >= self.max_size:
            self.close()
        return placed

    def close(self) -> None:
        """Close the current file and give it its final name."""
        if self._fh is None or self._path is None:
            return
        self._fh.close()
        final = self._path.with_name(self._path.name[: -len(OPEN_SUFFIX)])
        # streamed under its own ".open" name (salvage finds it there after a crash)
        commit(self._path, final)
        self.closed_files.append(final.name)
        self._fh = self._writer = self._path = None
        if self.on_close is not None:
            try:
                self.on_close(final)
            except Exception:  # the file is closed and named: the hook's failure is its own
                log.exception("on_close hook failed for %s", final.name)
