"""Deduplication index per harvest definition: URL + payload digest → the original capture.

Why: the crawler of the next job writes a revisit record instead of the payload when a URL comes
back with the same digest, and needs the original's URI, date, file and offset for it (without
them pywb cannot replay the revisit). The index module writes, per WARC, the captures of its
response records (``<file>.dedup``, sorted); :func:`build_dedup_index` merges those of a harvest
definition, keeping the earliest capture per (URL, digest). The captures come from the same pass
that writes the CDX (it has the WARC-Record-ID, ETag and Last-Modified that neither the CDX nor the
crawl log carries); the crawl logs of the jobs an index is built for say which URLs they wrote as
revisits, whose original captures (from earlier jobs) the index carries over.

File format (read by the crawler), UTF-8, one line per original capture, sorted by URL in byte
order and, for one URL, by date (the crawler takes a URL's last line as its newest capture):
``url \\t sha1:DIGEST \\t WARC-Date \\t file \\t offset \\t WARC-Record-ID \\t etag|- \\t last-modified|-``
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from harvestflow.atomic import atomic_open
from harvestflow.formats.crawllog import split_line
from harvestflow.settings import Settings, get_settings
from indexing.layout import Layout
from indexing.record_model import Capture

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


def duplicate_keys(crawl_log: Path) -> set[tuple[bytes, bytes]]:
    """(URI, digest) of the fetches a crawl.log marks as duplicates (written as revisits).

    Heritrix's fields: 4 the URI, 10 the digest (for a revisit, the original's), 12 the
    annotations, ``duplicate:digest`` or ``duplicate:server-not-modified``.
    """
    keys: set[tuple[bytes, bytes]] = set()
    bad, first = 0, ""
    with open(crawl_log, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            # one field rule for every reader: a shifted or forged line (a server's own digest
            # and duplicate:digest) must not put a key in the index
            fields, why = split_line(raw.decode("utf-8", "surrogateescape"))
            if why:
                bad += 1
                first = first or f"line {lineno}: {why}"
                continue
            if "duplicate:" in fields[11] and fields[9].startswith("sha1:"):
                keys.add((_raw(fields[3]), _raw(fields[9])))
    if bad:
        log.warning("%s: %d bad crawl.log line(s) skipped (first at %s)", crawl_log, bad, first)
    return keys


def _raw(field: str) -> bytes:
    return field.encode("utf-8", "surrogateescape")


def _job_crawl_logs(settings: Settings, job_ids: set[str]) -> list[Path]:
    import sqlalchemy as sa

    from harvestflow.db import get_engine

    with get_engine(settings.harvest_db_url).connect() as conn:
        dirs = conn.execute(
            sa.text("SELECT job_dir FROM jobs WHERE job_id = ANY(:j) AND job_dir IS NOT NULL"),
            {"j": sorted(int(j) for j in job_ids)},
        ).scalars()
        return [Path(d) / "logs" / "crawl.log" for d in dirs]


def _carried(fh: IO[bytes], keys: set[tuple[bytes, bytes]]) -> Iterator[bytes]:
    for line in fh:
        url, digest, _ = line.split(b"\t", 2)
        if (url, digest) in keys:
            yield line


def build_dedup_index(
    harvest_id: int,
    out_path: Path | str,
    settings: Settings | None = None,
    job_ids: Iterable[int] | None = None,
    crawl_logs: Iterable[Path] | None = None,
) -> Path:
    """Write the dedup index of harvest definition ``harvest_id`` to ``out_path``.

    ``job_ids`` restricts it to those jobs' files (e.g. the previous run of a selective
    definition); by default every indexed file of the definition counts. Streaming merge:
    memory does not grow with the index.

    Built from the captures the index module recorded beside the CDX (response records) and
    from the crawl logs of ``job_ids``: a URL those jobs wrote as a revisit (``duplicate:`` in
    its crawl.log line) keeps its original capture from an earlier job of the definition in the
    index. Without that, a page unchanged over three runs would be stored, then revisited, then
    stored again (the middle run holds only a revisit). ``crawl_logs`` defaults to
    ``<job_dir>/logs/crawl.log`` of each job (from the jobs table); the (URI, digest) pairs of
    their duplicates are held in memory (one run's revisits).
    """
    settings = settings or get_settings()
    layout = Layout.from_settings(settings)
    src_dir = layout.dedup_dir(harvest_id, layout.collection_of(harvest_id))
    wanted = {str(j) for j in job_ids} if job_ids is not None else None
    every = sorted(src_dir.glob("*.dedup")) if src_dir.is_dir() else []
    inputs = [p for p in every if wanted is None or p.name.split("-", 1)[0] in wanted]
    others = [p for p in every if p not in inputs]
    keys: set[tuple[bytes, bytes]] = set()
    if wanted is not None and others:
        logs = list(crawl_logs) if crawl_logs is not None else _job_crawl_logs(settings, wanted)
        for crawl_log in logs:
            if crawl_log.is_file():
                keys |= duplicate_keys(crawl_log)
            else:
                log.warning("dedup index of harvest %s: no crawl log %s", harvest_id, crawl_log)
    out_path = Path(out_path)
    written = 0
    with ExitStack() as stack, atomic_open(out_path, "wb") as out:
        files: list[Iterable[bytes]] = [stack.enter_context(open(p, "rb")) for p in inputs]
        if keys:
            files += [_carried(stack.enter_context(open(p, "rb")), keys) for p in others]
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
    log.info(
        "dedup index of harvest %s: %d captures from %d files (+ originals of %d duplicates"
        " from earlier jobs) -> %s",
        harvest_id,
        written,
        len(inputs),
        len(keys),
        out_path,
    )
    return out_path
