"""One replay view per crawl job (``job-<id>``): a curator's visual QC of exactly that job.

Why per job (NetarchiveSuite's ViewerProxy): a curator must see what *that* job captured, not
another job's capture filling a gap, as soon as its WARCs are indexed. Each view is a pywb
automatic collection like the per-definition ones (:mod:`access.definitions`), linking the
job's per-file CDXJ files and those of its patch harvests (:mod:`access.patches`); what it
cannot serve is recorded by the gateway (:mod:`access.missing`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import sqlalchemy as sa

from access import missing
from access.config import AccessConfig
from access.definitions import acl_file, collections_root
from access.index import sync_links
from harvest.jobs import definitions_of_jobs
from harvest.page_qa import jobs_qa
from harvestflow.atomic import atomic_write_text
from harvestflow.db_reads import Bind, engine_of, read, wrote

log = logging.getLogger(__name__)


def _job_files(found: list[tuple[int, str, Path]]) -> dict[int, dict[str, Path]]:
    """Job id → its per-file CDXJ files (link name → file)."""
    by_job: dict[int, dict[str, Path]] = {}
    for job, name, target in found:
        by_job.setdefault(job, {})[name] = target
    return by_job


def _views(bind: Bind, found: dict[int, dict[str, Path]]) -> dict[int, dict[str, Path]]:
    """Each known job's view: its own files plus those of the patch harvests sent for it."""

    def query(conn: sa.Connection) -> tuple[dict[int, int], dict[int, tuple[int, int]]]:
        defs = definitions_of_jobs(conn, found)
        return defs, missing.patch_origins(conn, set(defs.values()))

    defs, origins = read(bind, ("job_views", frozenset(found)), query)
    views: dict[int, dict[str, Path]] = {}
    for job, hid in defs.items():
        views.setdefault(job, {}).update(found[job])
        if hid in origins:
            patched = origins[hid][0]
            views.setdefault(patched, {}).update(found[job])
    return views


def sync(cfg: AccessConfig, engine: Bind, found: list[tuple[int, str, Path]]) -> dict[str, int]:
    """Make each job's view link exactly its (and its patches') per-file CDXJ files (``found``:
    :func:`access.index.job_index_files`, the live files included).

    Cheap and idempotent (two queries, symbolic links); returns the number of index files per
    view.
    """
    views = _views(engine, _job_files(found))
    base = collections_root(cfg)
    base.mkdir(parents=True, exist_ok=True)
    acl = acl_file(cfg)
    result = {}
    new_views = []
    for job, files in sorted(views.items()):
        coll = missing.job_collection(job)
        folder = base / coll
        added, removed = sync_links(folder / "indexes", files)
        (folder / "acl").mkdir(exist_ok=True)
        link = folder / "acl" / acl.name
        if not link.is_symlink():
            link.symlink_to(acl)
        meta = folder / "metadata.yaml"
        if not meta.exists():
            new_views.append(job)
            title = f"Job {job} (curator's view)"
            atomic_write_text(meta, json.dumps({"title": title, "job": job}) + "\n")
        result[coll] = len(files)
        if added or removed:
            log.info("access %s: %d index file(s) (+%d -%d)", coll, len(files), added, removed)
    _qa_misses(engine, new_views)
    return result


def _qa_misses(bind: Bind, jobs: list[int]) -> None:
    """A new view's job: the URLs its QA pass left missing join its missing-URL list (where
    the curator's patch harvest takes them from), as the gateway records a curator's misses."""
    if not jobs:
        return
    found = read(bind, ("jobs_qa", tuple(jobs)), lambda conn: jobs_qa(conn, jobs))
    for job, qa in sorted(found.items()):
        added = missing.record_found(
            engine_of(bind), job, [u for c in qa.checks for u in c.missing]
        )
        if added:
            wrote(bind)
            log.info("access job-%d: %d URL(s) its QA pass left missing listed", job, added)
