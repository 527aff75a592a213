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
from typing import IO, Any

from sqlalchemy.engine import Connection

from harvest.jobs import job_dirs, previous_jobs
from harvestflow.atomic import atomic_open, atomic_write_bytes
from harvestflow.contracts.jobdir import JobDir
from harvestflow.db import get_engine
from harvestflow.formats.cdx import parse_cdx11, warc_date
from harvestflow.formats.crawllog import CrawlLogLine
from harvestflow.settings import Settings, get_settings
from indexing import manifest
from indexing.layout import Layout
from indexing.record_model import Capture

log = logging.getLogger(__name__)


def _clean(value: str | None) -> str:
    if not value:
        return "-"
    return value.replace("\t", " ").replace("\n", " ").replace("\r", " ")


def sidecar_lines(captures: Iterable[Capture], filename: str) -> list[str]:
    """Dedup-index lines for the response records of one WARC (POST/PUT answers left out),
    byte-order sorted."""
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
        # a POST/PUT answer (c.method) is never what a later GET of its URL can revisit
        if c.rec_type == "response" and c.url and c.digest and not c.method
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
            entry, why = CrawlLogLine.read(raw.decode("utf-8", "surrogateescape"))
            if entry is None:
                bad += 1
                first = first or f"line {lineno}: {why}"
                continue
            if (
                any("duplicate:" in note for note in entry.annotations)
                and entry.digest is not None
                and entry.digest.startswith("sha1:")
            ):
                keys.add((_raw(entry.url), _raw(entry.digest)))
    if bad:
        log.warning("%s: %d bad crawl.log line(s) skipped (first at %s)", crawl_log, bad, first)
    return keys


def _raw(field: str) -> bytes:
    return field.encode("utf-8", "surrogateescape")


def _job_crawl_logs(settings: Settings, job_ids: set[str]) -> list[Path]:
    with get_engine(settings.harvest_db_url).connect() as conn:
        dirs = job_dirs(conn, sorted(int(j) for j in job_ids))
        return [JobDir(d).crawl_log for d in dirs]


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


DEDUP_FILE = "dedup-index.txt"


def cdx_to_dedup_lines(cdx_path: Path) -> Iterator[str]:
    """Dedup-index lines from an 11-field CDX file (N b a m s k r M S V g).

    Revisit records and captures without a digest are left out (nothing to refer to); the
    record id, ETag and Last-Modified are not in a CDX and are written as "-".
    """
    with cdx_path.open(encoding="utf-8", errors="replace", newline="\n") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.startswith(" CDX") or not line.strip():
                continue
            rec = parse_cdx11(line)
            if rec is None:
                log.warning("%s line %d: not an 11-field CDX line, skipped", cdx_path, lineno)
                continue
            if rec.digest == "-" or rec.mime == "warc/revisit":
                continue
            digest = rec.digest if rec.digest.startswith("sha1:") else "sha1:" + rec.digest
            date = warc_date(rec.timestamp)
            yield "\t".join((rec.url, digest, date, rec.filename, str(rec.offset), "-", "-", "-"))


def _from_manifest_cdx(conn: Connection, job_ids: list[int], out: Path) -> bool:
    paths = manifest.cdx_paths_of_jobs(conn, job_ids)
    lines: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            log.warning("dedup: CDX file %s of a previous job is missing, skipped", path)
            continue
        lines.update(cdx_to_dedup_lines(path))
    if not lines:
        return False
    data = sorted(line.encode("utf-8") for line in lines)  # byte order
    atomic_write_bytes(out, b"".join(line + b"\n" for line in data))
    return True


def _with_warc_paths(conn: Connection, index: Path) -> int:
    """Name each earlier capture's WARC by the absolute path it is at now, where known.

    Why: the crawler reads a revisit's original back for a rendering browser
    (crawler/rendering/archive.py) and, as a crawl stage, cannot ask the indexing manifest where an
    earlier job's WARC went; a bare file name it cannot open makes the browser's request go to
    the server again, unrecorded. The manifest's final copy (else the job's own, while it is
    still there) is written in the file column when that file exists; otherwise the name stays.
    Returns the number of lines rewritten.
    """
    lines = index.read_bytes().splitlines()
    names = sorted(
        {ln.split(b"\t")[3].decode("utf-8", "replace") for ln in lines if ln.count(b"\t") >= 4}
    )
    if not names:
        return 0
    paths: dict[str, str] = {}
    for name, (final, source) in manifest.file_copies(conn, names).items():
        for candidate in (final, source):
            if candidate and Path(candidate).is_absolute() and Path(candidate).is_file():
                paths[name] = candidate
                break
    if not paths:
        return 0
    out, changed = [], 0
    for line in lines:
        fields = line.split(b"\t")
        if len(fields) > 4 and (path := paths.get(fields[3].decode("utf-8", "replace"))):
            fields[3] = path.encode("utf-8")
            changed += 1
        out.append(b"\t".join(fields) + b"\n")
    with atomic_open(index, "wb") as fh:
        fh.writelines(out)
    return changed


def dedup_index_for_job(conn: Connection, job: Any, job_dir: Path) -> str | None:
    """Path of the dedup index written for ``job`` in its directory, or None.

    What :func:`harvest.jobs.prepare_job` is given as ``dedup_index`` (by the harvest DAG): a
    selective job de-duplicates against the previous run of its definition (a snapshot second
    step against its first step; :func:`harvest.jobs.previous_jobs`). Built by
    :func:`build_dedup_index`; when that has nothing for those jobs, derived from the CDX files
    recorded in ``index_manifest`` for the previous run's WARCs. No previous capture known: no
    index (the crawler then stores every payload).
    """
    harvest_id, prev = previous_jobs(conn, job)
    if not prev:
        return None
    out = job_dir / DEDUP_FILE
    if out.exists() and out.stat().st_size > 0:
        return str(out)
    try:
        build_dedup_index(harvest_id, out, job_ids=prev)
        if out.exists() and out.stat().st_size > 0:
            _with_warc_paths(conn, out)
            log.info("job %s: dedup index of previous jobs %s", job.job_id, prev)
            return str(out)
    except Exception:
        log.exception("dedup: indexing.dedup_index.build_dedup_index failed, trying the CDX")
    if _from_manifest_cdx(conn, prev, out):
        _with_warc_paths(conn, out)
        log.info("job %s: dedup index from the CDX of previous jobs %s", job.job_id, prev)
        return str(out)
    log.info("job %s: previous jobs %s have no index yet: no dedup index", job.job_id, prev)
    out.unlink(missing_ok=True)  # an empty file written above: ours, holds nothing
    return None
