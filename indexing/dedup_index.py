"""The deduplication index a job is given: the latest capture of every URL of its domains,
from every earlier job.

Why: the crawler writes a revisit record instead of a payload seen before, and needs the
original's URI, date, file and offset (pywb needs them to replay it), and its ETag and
Last-Modified for a conditional GET. The captures come from the merged CDX by the job's domains
(:mod:`indexing.dedup_merged`), the rest from the per-WARC ``.dedup`` sidecars. Its format,
read by :mod:`crawler.dedup_lookup`, is listed in docs/architecture.md ("The index folders").
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection

from harvest.spec_builder import job_domains
from harvestflow.atomic import atomic_open
from harvestflow.formats.cdx import warc_date
from harvestflow.formats.domains import registrable_domain
from harvestflow.settings import Settings, get_settings
from indexing import manifest, merge
from indexing.dedup_merged import DomainKeyError, host_key, parse_line, select
from indexing.layout import Layout, harvest_id_of
from indexing.record_model import Capture

log = logging.getLogger(__name__)

DEDUP_FILE = "dedup-index.txt"


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


def _sidecar_fields(
    layout: Layout, wanted: dict[str, set[int]]
) -> dict[tuple[str, int], list[str]]:
    """(file, offset) -> [record id, ETag, Last-Modified] from the sidecars of the files."""
    found: dict[tuple[str, int], list[str]] = {}
    for name, offsets in wanted.items():
        hid = harvest_id_of(name)
        if hid is None:
            continue
        sidecar = layout.dedup_dir(hid, layout.collection_of(hid)) / (name + ".dedup")
        if not sidecar.is_file():
            continue
        with open(sidecar, encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                f = line.rstrip("\n").split("\t")
                if len(f) >= 8 and f[4].isdigit() and int(f[4]) in offsets:
                    found[(name, int(f[4]))] = f[5:8]
    return found


def write_index(
    out: Path | str, domains: Iterable[str], settings: Settings | None = None, collection: str = ""
) -> int:
    """Write the dedup index of ``domains`` from the merged CDX of ``collection``'s index root;
    returns the number of captures in it (0: none known, the file is written empty)."""
    domains = list(domains)
    layout = Layout.from_settings(settings or get_settings())
    fmt = "cdx11" if "cdx11" in layout.formats else "cdxj"
    sources = merge.index_files(layout, fmt, collection)
    chosen = [c for c in map(parse_line, select(sources, domains)) if c is not None]
    wanted: dict[str, set[int]] = {}
    for c in chosen:
        wanted.setdefault(c.filename, set()).add(c.offset)
    extra = _sidecar_fields(layout, wanted)
    with atomic_open(Path(out), "wb") as fh:
        for c in chosen:
            rid, etag, lastmod = extra.get((c.filename, c.offset), ["-", "-", "-"])
            fields = (c.url, c.digest, warc_date(c.timestamp), c.filename, str(c.offset))
            line = "\t".join((*map(_clean, fields), rid, etag, lastmod))
            fh.write(line.encode("utf-8", "surrogateescape") + b"\n")
    log.info(
        "dedup index of %d domain(s) from %d index file(s): %d captures (%d with their record"
        " id, ETag and Last-Modified) -> %s",
        len(domains),
        len(sources),
        len(chosen),
        len(extra),
        out,
    )
    return len(chosen)


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


def _domains_of(conn: Connection, job: Any) -> list[str]:
    """The job's domains (its configurations') and those of its seeds, keyable ones only."""
    names = {d["domain"] for d in job_domains(conn, job)}
    for seed in (job.seedlist or "").splitlines():
        if seed.strip():
            try:
                names.add(registrable_domain(seed.strip()))
            except ValueError:
                log.warning(
                    "job %s: seed %r has no domain, left out of its dedup index", job.job_id, seed
                )
    keyable = []
    for name in sorted(names):
        try:
            host_key(name)
        except DomainKeyError as exc:
            log.warning("job %s: %s; left out of its dedup index", job.job_id, exc)
            continue
        keyable.append(name)
    return keyable


def dedup_index_for_job(conn: Connection, job: Any, job_dir: Path) -> str | None:
    """Path of the dedup index written for ``job`` in its directory, or None (nothing captured
    on its domains yet: the crawler then stores every payload).

    What :func:`harvest.jobs.prepare_job` is given as ``dedup_index`` (by the harvest DAG). A
    retried task finds the index already written and keeps it (the job's spec names it).
    """
    out = job_dir / DEDUP_FILE
    if out.exists() and out.stat().st_size > 0:
        return str(out)
    domains = _domains_of(conn, job)
    settings = get_settings()
    collection = Layout.from_settings(settings).collection_of(job.harvest_id)
    if not domains or write_index(out, domains, settings, collection) == 0:
        log.info(
            "job %s: no earlier capture on its %d domain(s): no dedup index",
            job.job_id,
            len(domains),
        )
        out.unlink(missing_ok=True)
        return None
    _with_warc_paths(conn, out)
    log.info("job %s: dedup index of its %d domain(s) -> %s", job.job_id, len(domains), out)
    return str(out)
