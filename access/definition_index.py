"""ZipNum indexes of the per-definition collections (``harvest-<id>``), built with ``all``'s.

Why one ZipNum per definition: pywb cannot give a collection a fixed filter, and filtering at
query time would read every capture of a URL in the whole archive. One pass over the big CDXJ
files sends each line to its definition's builder (found from the job id of its WARC name),
under the big merge's lock and only when the big files changed; :func:`served` links each index
into its definition's pywb folder (:mod:`access.definitions`).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from access import zipnum
from access.config import DEFINITION_PREFIX as PREFIX
from access.config import AccessConfig
from access.index import Lister, _inputs, day_index_files, roots
from harvest.jobs import definitions_of_jobs
from harvestflow.atomic import atomic_write_text
from harvestflow.db import get_engine
from harvestflow.settings import Settings, get_settings
from indexing.files import Lock, single_instance
from indexing.layout import Layout, job_id_of

log = logging.getLogger(__name__)

_FILENAME = re.compile(rb'"filename": ?"([^"]+)"')
_MARKER = "definitions.state.json"


def collection_of(harvest_id: int) -> str:
    return f"{PREFIX}{harvest_id}"


class _JobDefinitions:
    """WARC name → definition id, through the job id in the name and the harvest DB."""

    def __init__(self, engine: sa.Engine, known_jobs: set[int]) -> None:
        self.engine = engine
        self.by_job: dict[int, int | None] = {}
        self.by_file: dict[bytes, int | None] = {}
        self._lookup(known_jobs)

    def _lookup(self, jobs: set[int]) -> None:
        if not jobs:
            return
        with self.engine.connect() as conn:
            found = definitions_of_jobs(conn, jobs)
        for job in jobs:
            self.by_job[job] = found.get(job)

    def of_line(self, line: bytes) -> int | None:
        match = _FILENAME.search(line)
        if match is None:
            return None
        name = match.group(1)
        if name in self.by_file:
            return self.by_file[name]
        job = job_id_of(name.decode("utf-8", "replace"))
        if job is not None and job not in self.by_job:
            self._lookup({job})  # a job with no per-file CDXJ left in the day folders
        hid = self.by_job.get(job) if job is not None else None
        self.by_file[name] = hid
        return hid


def _known_jobs(layout: Layout) -> set[int]:
    """Job ids of the per-file CDXJ files the day folders hold (one query for most jobs)."""
    return {job for job, _, _ in day_index_files(layout, Lister())}


def _marker(cfg: AccessConfig) -> Path:
    return cfg.root / "zipnum" / _MARKER


def _read_marker(cfg: AccessConfig) -> dict[str, Any]:
    try:
        data = json.loads(_marker(cfg).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def reindex(
    settings: Settings | None = None, engine: sa.Engine | None = None, *, force: bool = False
) -> dict[str, Any]:
    """Build the ZipNum index of every definition with captures in the big CDXJ files.

    Idempotent: nothing is rebuilt when the big files are those of the last build (and every
    index it made is there), unless ``force``. A build killed half way leaves the previous
    indexes served and is redone whole by the next run (the record is written last).
    """
    settings = settings or get_settings()
    engine = engine or get_engine(settings.harvest_db_url)
    layout = Layout.from_settings(settings)
    cfg = AccessConfig.from_settings(settings)
    with single_instance(layout.lock_dir(), Lock.BIGMERGE):
        inputs = _inputs(layout, {"definitions": roots(layout)})["definitions"]
        last = _read_marker(cfg)
        colls = [str(c) for c in last.get("collections", [])]
        if (
            not force
            and last.get("inputs") == inputs
            and all(cfg.summary(c).exists() for c in colls)
        ):
            return {"built": {}, "unchanged": colls}
        bigs = [Path(v["big"]) for v in inputs.values()]
        jobs = _JobDefinitions(engine, _known_jobs(layout))
        builders: dict[int, zipnum.Builder] = {}
        unassigned = 0
        try:
            for line in zipnum.merged_lines(bigs) if bigs else iter(()):
                hid = jobs.of_line(line)
                if hid is None:
                    unassigned += 1
                    continue
                builder = builders.get(hid)
                if builder is None:
                    coll = collection_of(hid)
                    builder = builders[hid] = zipnum.Builder(
                        cfg.zipnum_dir(coll),
                        coll,
                        block_lines=cfg.block_lines,
                        shard_blocks=cfg.shard_blocks,
                    )
                builder.add(line)
            built = {
                collection_of(hid): b.finish({"inputs": inputs}) for hid, b in builders.items()
            }
        except BaseException:
            for builder in builders.values():
                builder.discard()
            raise
        atomic_write_text(
            _marker(cfg), json.dumps({"inputs": inputs, "collections": sorted(built)})
        )
    if unassigned:
        log.warning(
            "access: %d capture(s) of the big CDXJ belong to no known job; only in 'all'",
            unassigned,
        )
    return {
        "built": {c: {"lines": r.lines, "blocks": r.blocks} for c, r in sorted(built.items())},
        "unchanged": [],
        "unassigned": unassigned,
    }


def built_collections(cfg: AccessConfig) -> list[int]:
    """Definition ids with a ZipNum index (from the last complete build)."""
    out = []
    for coll in _read_marker(cfg).get("collections", []):
        hid = str(coll).removeprefix(PREFIX)
        if hid.isdigit() and cfg.summary(str(coll)).exists():
            out.append(int(hid))
    return out


def served(cfg: AccessConfig, coll: str, files: dict[str, Path], lister: Lister) -> dict[str, Path]:
    """What the definition's pywb folder links: its ZipNum's summary and loc, and the per-file
    CDXJ files (``<root tag>--<day>--<name>``) that ZipNum does not hold."""
    state = lister.state(cfg, coll)
    want = zipnum.served_links(cfg.zipnum_dir(coll), coll, state, ".idx")
    if not want:
        return files
    covered = {
        f"{tag}--{day.removesuffix('.cdxj')}--{name}"
        for tag, root in (state.get("inputs") or {}).items()
        for day, names in (root.get("covered") or {}).items()
        for name in names
    }
    want.update((name, target) for name, target in files.items() if name not in covered)
    return want
