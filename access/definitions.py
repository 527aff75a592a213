"""One access collection per harvest definition: ``harvest-<id>`` replays only the captures of
that definition's jobs.

Why pywb's automatic collections: a definition created while replay runs gets its collection
without a restart. Each folder holds links to the per-file CDXJ files of the definition's jobs
(the job id that starts each name, looked up in the harvest database), a link to the one ACL
file and ``metadata.yaml``; what the big merge holds is served from the definition's ZipNum
(:mod:`access.definition_index`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from access import compact, definition_index
from access.config import DEFINITION_PREFIX, AccessConfig
from access.index import Lister, sync_links
from access.missing import fold_patches
from harvest.definitions import definition_labels
from harvest.jobs import definitions_of_jobs
from harvestflow.atomic import atomic_write_text
from harvestflow.db_reads import Bind, read

log = logging.getLogger(__name__)

PREFIX = DEFINITION_PREFIX


@dataclass(frozen=True)
class Definition:
    harvest_id: int
    name: str
    kind: str  # 'partial' (selective) or 'full' (broad)

    @property
    def collection(self) -> str:
        return f"{PREFIX}{self.harvest_id}"


def collections_root(cfg: AccessConfig) -> Path:
    """pywb's ``collections_root``: one folder per definition collection."""
    return cfg.root / "colls"


def acl_file(cfg: AccessConfig) -> Path:
    return cfg.root / "acl" / "rules.aclj"


def _definitions(
    bind: Bind, job_ids: set[int], more: set[int]
) -> tuple[dict[int, Definition], dict[int, int]]:
    """The definitions of these jobs (and ``more``), each job's definition (one query each)."""

    def query(conn: sa.Connection) -> tuple[dict[int, Definition], dict[int, int]]:
        # a patch harvest's captures join the collection of the job they patch
        jobs = fold_patches(conn, definitions_of_jobs(conn, job_ids))
        defs = {
            hid: Definition(hid, name, kind)
            for hid, (name, kind) in definition_labels(conn, set(jobs.values()) | more).items()
        }
        return defs, jobs

    return read(bind, ("definitions", frozenset(job_ids), frozenset(more)), query)


def _write_if_changed(path: Path, text: str) -> None:
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except FileNotFoundError:
        pass
    atomic_write_text(path, text)


def sync(
    cfg: AccessConfig,
    engine: Bind,
    found: list[tuple[int, str, Path]],
    lister: Lister | None = None,
) -> dict[str, int]:
    """Make each definition's collection folder link exactly its jobs' per-file CDXJ files
    (``found``: :func:`access.index.job_index_files`, the live files included).

    Cheap and idempotent (directory listings, two queries, symbolic links); returns the number of
    index files per collection. Definitions without captures get no collection yet.
    """
    lister = lister or Lister()
    indexed = definition_index.built_collections(cfg)
    defs, jobs = _definitions(engine, {job for job, _, _ in found}, set(indexed))
    want: dict[int, dict[str, Path]] = {hid: {} for hid in indexed if hid in defs}
    for job, name, target in found:
        hid = jobs.get(job)
        if hid is not None and hid in defs:
            want.setdefault(hid, {})[name] = target
    base = collections_root(cfg)
    base.mkdir(parents=True, exist_ok=True)
    acl = acl_file(cfg)
    result = {}
    for hid, files in sorted(want.items()):
        d = defs[hid]
        folder = base / d.collection
        files = definition_index.served(cfg, d.collection, files, lister)
        files = compact.apply(cfg, d.collection, files, folder / "indexes")
        added, removed = sync_links(folder / "indexes", files)
        (folder / "acl").mkdir(exist_ok=True)
        link = folder / "acl" / acl.name
        if not link.is_symlink():
            link.symlink_to(acl)
        kind = "broad crawl" if d.kind == "full" else "selective harvest"
        meta = {"title": f"{d.name} ({kind} {hid})", "definition": hid, "kind": d.kind}
        _write_if_changed(folder / "metadata.yaml", json.dumps(meta) + "\n")
        result[d.collection] = len(files)
        if added or removed:
            log.info(
                "access %s: %d index file(s) (+%d -%d)", d.collection, len(files), added, removed
            )
    return result
