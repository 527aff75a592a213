"""What a rendering browser gets for a URL the job has already captured: the capture itself,
read back from the job's WARC.

Why: one capture per URL per job, and the site asked once — a resource the plain crawler (or
an earlier page's browser) archived is not fetched again for the browser (that re-fetch would
be unrecorded and outside the host's delay queue); the browser gets the recorded status,
headers and body. Where a capture lies is read from the CDX lines the crawler writes as it
writes records (``state/cdx.unsorted``: URL, WARC file, offset), tailed as they grow — so a
resumed crawl finds its earlier captures, and in a partitioned job the other partitions'
captures are found in their own CDX files and WARCs (``state/part-<i>/``) too.

The body is given as the browser expects it from a proxy that sends whole bodies: chunked
transfer coding and content coding (gzip, deflate, br) removed by warcio's decoding reader;
crawler/render_proxy.py drops the hop-by-hop headers and writes Content-Length itself. A
revisit record resolves to the original it refers to when that original is one of the job's
own captures, or an earlier job's WARC the dedup index names by a path readable here;
otherwise (an earlier job's WARC in the archive's store) :meth:`ArchivedCaptures.response`
gives None and the caller decides.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord

from crawler.dedup import EarlierCapture
from crawler.render_proxy import ProxyResponse
from crawler.warcfiles import OPEN_SUFFIX
from harvestflow.formats.cdx import parse_cdx11
from harvestflow.formats.urls import canonical_key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Location:
    """One capture's record: its WARC (the directory, the file's final name) and offset."""

    warc_dir: Path
    filename: str
    offset: int


class ArchivedCaptures:
    """The job's captures by seen-set key, from the CDX files of this process (and siblings)."""

    def __init__(self, sources: list[tuple[Path, Path]], dedup: dict[str, EarlierCapture]):
        # (CDX file, the WARC directory its file names are in) → bytes read so far
        self.sources = sources
        self.read_to = {cdx: 0 for cdx, _ in sources}
        self.where: dict[str, Location] = {}
        self.dedup = dedup

    def refresh(self) -> None:
        """Read the complete CDX lines written since the last call."""
        for cdx, warc_dir in self.sources:
            try:
                with cdx.open("rb") as fh:
                    fh.seek(self.read_to[cdx])
                    data = fh.read()
            except FileNotFoundError:
                continue
            end = data.rfind(b"\n")
            if end < 0:
                continue
            self.read_to[cdx] += end + 1
            for raw in data[: end + 1].splitlines():
                line = parse_cdx11(raw.decode("utf-8", "surrogateescape"))
                if line is None or not line.url.startswith(("http:", "https:")):
                    continue  # dns: and screenshot records are not the browser's business
                try:
                    key = canonical_key(line.url)
                except ValueError:
                    continue
                self.where[key] = Location(warc_dir, line.filename, line.offset)

    def find(self, key: str) -> Location | None:
        loc = self.where.get(key)
        if loc is None:
            self.refresh()
            loc = self.where.get(key)
        return loc

    def response(self, key: str) -> ProxyResponse | None:
        """The recorded response of ``key`` for the browser; None when it cannot be read."""
        loc = self.find(key)
        if loc is None:
            return None
        try:
            return self._read(key, loc, depth=0)
        except (OSError, ValueError, EOFError) as exc:  # a damaged record: the caller decides
            log.warning("render: %s at %s:%d unreadable: %s", key, loc.filename, loc.offset, exc)
            return None

    def _read(self, key: str, loc: Location, depth: int) -> ProxyResponse | None:
        path = loc.warc_dir / loc.filename
        if not path.exists():  # still being written
            path = loc.warc_dir / (loc.filename + OPEN_SUFFIX)
        with path.open("rb") as fh:
            fh.seek(loc.offset)
            record = next(iter(ArchiveIterator(fh)))
            if record.rec_type == "revisit":
                return self._original(key, record, depth)
            if record.rec_type != "response" or record.http_headers is None:
                return None
            return _as_response(record, record.content_stream().read())

    def _original(self, key: str, revisit: ArcWarcRecord, depth: int) -> ProxyResponse | None:
        """A revisit's original capture: with the revisit's own status and headers when the
        server sent the payload again (identical digest), the original's when it said 304."""
        if depth > 0:
            return None
        target = revisit.rec_headers.get_header("WARC-Refers-To-Target-URI") or ""
        try:
            target_key = canonical_key(target) if target else ""
        except ValueError:
            target_key = ""
        original: ProxyResponse | None = None
        own = self.where.get(target_key) if target_key and target_key != key else None
        if own is not None:
            original = self._read(target_key, own, depth + 1)
        earlier = self.dedup.get(key)
        if original is None and earlier is not None:
            path = Path(earlier.filename)
            if path.is_absolute() and path.exists():
                original = self._read(key, Location(path.parent, path.name, earlier.offset), 1)
        if original is None or revisit.http_headers is None:
            return original
        if revisit.http_headers.get_statuscode() == "304":
            return original
        return _as_response(revisit, original.body)


def _as_response(record: ArcWarcRecord, body: bytes) -> ProxyResponse:
    """Status, reason and header lines of a record's HTTP head, with ``body``."""
    http = record.http_headers
    code, _, reason = (http.statusline or "").partition(" ")
    return ProxyResponse(int(code or 200), list(http.headers), body, reason or "OK")
