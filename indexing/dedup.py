"""Deduplication index per harvest definition: URL + payload digest → the original capture.

Why: the crawler of the next job writes a revisit record instead of the payload when a URL comes
back with the same digest, and needs the original's URI, date, file and offset for it (without
them pywb cannot replay the revisit). The index module writes, per WARC, the captures of its
response records (``<file>.dedup``, sorted); :func:`build_dedup_index` merges those of a harvest
definition, keeping the earliest capture per (URL, digest). The captures come from the same pass
that writes the CDX (it has the WARC-Record-ID, ETag and Last-Modified that neither the CDX nor the
crawl log carries).

File format (read by the crawler), UTF-8, one line per original capture, sorted by URL in byte
order and, for one URL, by date (the crawler takes a URL's last line as its newest capture):
``url \\t sha1:DIGEST \\t WARC-Date \\t file \\t offset \\t WARC-Record-ID \\t etag|- \\t last-modified|-``
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path

from harvestflow.settings import Settings, get_settings
from indexing.capture import Capture
from indexing.files import tmp_name
from indexing.layout import Layout

log = logging.getLogger(__name__)


def _clean(value: str | None) -> str:
    if not value:
        return "-"
    return value.replace("\t", " ").replace("\n", " ").replace("\r", " ")


def sidecar_lines(captures: Iterable[Capture], filename: str) -> list[str]:
    """Dedup-index lines for the response records of one WARC, byte-order sorted."""
    lines = {
        "\t".join(
            (
                _clean(c.url),
                _clean(c.digest),
                _clean(c.date),
                filename,
                str(c.offset),
                _clean(c.record_id),
                _clean(c.etag),
                _clean(c.last_modified),
            )
        )
        for c in captures
        if c.rec_type == "response" and c.url and c.digest
    }
    return sorted(lines, key=lambda s: s.encode("utf-8"))


def _date_file_offset(line: bytes) -> tuple[bytes, bytes, int]:
    fields = line.split(b"\t", 5)
    return fields[2], fields[3], int(fields[4])


def build_dedup_index(
    harvest_id: int,
    out_path: Path | str,
    settings: Settings | None = None,
    job_ids: Iterable[int] | None = None,
) -> Path:
    """Write the dedup index of harvest definition ``harvest_id`` to ``out_path``.

    ``job_ids`` restricts it to those jobs' files (e.g. the previous run of a selective
    definition); by default every indexed file of the definition counts. Streaming merge:
    memory does not grow with the index.
    """
    settings = settings or get_settings()
    layout = Layout.from_settings(settings)
    src_dir = layout.dedup_dir(harvest_id, layout.collection_of(harvest_id))
    wanted = {str(j) for j in job_ids} if job_ids is not None else None
    inputs = sorted(
        p
        for p in (src_dir.glob("*.dedup") if src_dir.is_dir() else [])
        if wanted is None or p.name.split("-", 1)[0] in wanted
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_name(out_path)
    written = 0
    with ExitStack() as stack, open(tmp, "wb") as out:
        files = [stack.enter_context(open(p, "rb")) for p in inputs]
        merged = heapq.merge(*files, key=lambda s: s.removesuffix(b"\n"))
        for _url, group in itertools.groupby(merged, key=lambda s: s.split(b"\t", 1)[0]):
            originals: dict[bytes, bytes] = {}
            for line in group:  # one URL: its captures, by digest then date
                digest = line.split(b"\t", 2)[1]
                originals.setdefault(digest, line if line.endswith(b"\n") else line + b"\n")
            # the crawler takes the last line of a URL as the newest: order by date, file, offset
            for line in sorted(originals.values(), key=_date_file_offset):
                out.write(line)
                written += 1
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, out_path)
    log.info(
        "dedup index of harvest %s: %d captures from %d files -> %s",
        harvest_id,
        written,
        len(inputs),
        out_path,
    )
    return out_path
