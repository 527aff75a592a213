"""What a rendering browser gets for a URL the job has already captured: the capture itself,
read back from the job's WARC.

Why: one capture per URL per job; a re-fetch for the browser would be unrecorded and outside
the host's delay queue. Captures are found from the CDX the crawler records as it writes
(every partition's too), bodies decoded by the bounded inflation; a URL still being fetched is
waited for (bounded), and a revisit resolves to its original when readable here.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord

from crawler import state as st
from crawler.dedup_lookup import EarlierCapture
from crawler.inflate import Inflater, inflater_of, record_body
from crawler.rendering.proxy import ProxyResponse
from crawler.warc.files import OPEN_SUFFIX
from harvestflow.contracts.jobdir import JobDir
from harvestflow.formats.cdx import parse_cdx11
from harvestflow.formats.urls import canonical_key

if TYPE_CHECKING:
    from crawler.context import CrawlContext

log = logging.getLogger(__name__)

FROM_ARCHIVE = "harvestflow/render/from_archive"  # crawler.stats: captured URLs served back
INFLATE_CUT = "harvestflow/render/inflate_cut"  # ...whose body was cut at the inflate bounds
POLL_S = 0.1


@dataclass(frozen=True)
class Location:
    """One capture's record: its WARC (the directory, the file's final name) and offset."""

    warc_dir: Path
    filename: str
    offset: int


class ArchivedCaptures:
    """The job's captures by seen-set key, from the CDX files of this process (and siblings)."""

    def __init__(
        self,
        sources: list[tuple[Path, Path]],
        dedup: dict[str, EarlierCapture],
        inflater: Inflater | None = None,
    ) -> None:
        # (CDX file, the WARC directory its file names are in) → bytes read so far
        self.sources = sources
        self.inflater = inflater or Inflater()
        self.cut = 0  # bodies cut at the inflate bounds
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
                if "__wb_method=" in line.key:
                    continue  # a POST/PUT answer (keyed under its body) is never a GET's
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
            got = record_body(record, self.inflater)
            if got.cut:
                self.cut += 1
                log.warning(
                    "render: %s at %s:%d inflates past the bounds: the browser gets its first"
                    " %d bytes (limit %d)",
                    key, loc.filename, loc.offset, len(got.body), self.inflater.limit,
                )  # fmt: skip
            response = _as_response(record, got.body, got.headers)
            if got.token is not None:
                got.token.held_by(response)
            return response

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
        # the original of a payload found at another URL is that URL's capture in the index
        earlier = self.dedup.get(target_key or key)
        digest = revisit.rec_headers.get_header("WARC-Payload-Digest")
        if earlier is not None and digest and earlier.digest != digest:
            earlier = None  # the index holds a newer capture of that URL, not this payload
        if original is None and earlier is not None:
            path = Path(earlier.filename)
            if path.is_absolute() and path.exists():
                original = self._read(key, Location(path.parent, path.name, earlier.offset), 1)
        if original is None or revisit.http_headers is None:
            return original
        if revisit.http_headers.get_statuscode() == "304":
            return original
        # the same payload as sent (identical digest): coded as the original's was
        coding = [(k, v) for k, v in original.headers if k.lower() == "content-encoding"]
        return _as_response(
            revisit,
            original.body,
            lambda heads: [(k, v) for k, v in heads if k.lower() != "content-encoding"] + coding,
        )


class JobCaptures:
    """A rendering browser's requests of URLs the job has seen: answered from their captures,
    once there (this process's, or in a partitioned job the owning partition's)."""

    def __init__(self, ctx: CrawlContext, crawler: Any) -> None:
        self.ctx = ctx
        self.crawler = crawler  # its stats are read when used (made after the renderer)
        sources = [(ctx.jobdir.recorded_cdx, ctx.jobdir.warcs)]
        self.root: JobDir | None = None
        if ctx.partition is not None:
            self.root = JobDir(ctx.partition.coord_dir.parent.parent)
            for i in range(ctx.partition.count):
                if i != ctx.partition.index:
                    sources.append((self.root.part(i).recorded_cdx, self.root.part(i).warcs))
        self.records = ArchivedCaptures(sources, ctx.dedup, inflater_of(crawler))
        self._owner_dbs: dict[int, sqlite3.Connection] = {}

    async def wait_for(self, url: str, key: str, timeout: float) -> ProxyResponse | None:
        """The capture of ``key`` for the browser, waiting (at most ``timeout`` s) while it is
        being fetched or its owner has yet to fetch it; 403/502 when the crawl refused it or
        failed; None when it is captured but its record cannot be read here."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            response = self._served(key)
            if response is not None:
                return response
            state = self._state(url, key)
            if state == st.FrontierState.REFUSED:
                return ProxyResponse(403, [("Content-Type", "text/plain")], b"", "Not Archived")
            if state == st.FrontierState.FAILED:
                return ProxyResponse(502, [("Content-Type", "text/plain")], b"", "Not Archived")
            if (
                state == st.FrontierState.DONE
            ):  # its CDX line came before: read once more, then give up
                return self._served(key)
            if loop.time() >= deadline:
                return ProxyResponse(504, reason="Gateway Timeout")
            await asyncio.sleep(POLL_S)

    def _served(self, key: str) -> ProxyResponse | None:
        """The capture of ``key`` read back, counted (and counted as cut when it was)."""
        cut = self.records.cut
        response = self.records.response(key)
        if response is not None:
            self.crawler.stats.inc_value(FROM_ARCHIVE)
            if self.records.cut > cut:
                self.crawler.stats.inc_value(INFLATE_CUT)
        return response

    def _state(self, url: str, key: str) -> int | None:
        """The frontier state of ``key`` here, or in the partition that owns it (read-only)."""
        row = self.ctx.state.db.execute("SELECT status FROM urls WHERE key=?", (key,)).fetchone()
        state = None if row is None else int(row[0])
        part = self.ctx.partition
        if state != st.FrontierState.HANDED_OFF or part is None or self.root is None:
            return state
        index = self.ctx.frontier.owner(url)
        db = self._owner_dbs.get(index)
        if db is None:
            path = self.root.part(index).crawl_state
            if not path.exists():
                return None
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            self._owner_dbs[index] = db
        try:
            row = db.execute("SELECT status FROM urls WHERE key=?", (key,)).fetchone()
        except sqlite3.Error:  # busy, or not made yet: asked again on the next turn
            return None
        return None if row is None else int(row[0])

    def close(self) -> None:
        for db in self._owner_dbs.values():
            db.close()
        self._owner_dbs.clear()


def _as_response(
    record: ArcWarcRecord,
    body: bytes,
    recode: Callable[[list[tuple[str, str]]], list[tuple[str, str]]],
) -> ProxyResponse:
    """Status, reason and header lines of a record's HTTP head (Content-Encoding as ``recode``
    says is left on ``body``), with ``body``."""
    http = record.http_headers
    code, _, reason = (http.statusline or "").partition(" ")
    return ProxyResponse(int(code or 200), recode(list(http.headers)), body, reason or "OK")
