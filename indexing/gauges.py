"""Indexing's readings for ``/metrics``: files waiting to be indexed and the index lag.

Why the oldest waiting WARC: a replay that cannot find last night's crawl is what people see
of a stuck chain; the lag is how long the longest-waiting closed WARC (a finished job's, not
yet in the manifest, or ingested and not indexed) has waited since it was written.
"""

from __future__ import annotations

import time
from pathlib import Path

from harvestflow.contracts.jobdir import JobDir
from harvestflow.db import get_engine
from harvestflow.monitoring.probes import Reading
from harvestflow.settings import Settings, get_settings
from indexing import manifest
from indexing.layout import is_warc_name

INDEX_LAG = "harvestflow_index_lag_seconds"
INDEX_PENDING = "harvestflow_index_pending_files"


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def backlog(settings: Settings | None = None) -> tuple[int, float | None]:
    """(WARCs waiting to be indexed, the epoch seconds since when the oldest waits, or None)."""
    settings = settings or get_settings()
    engine = get_engine(settings.harvest_db_url)
    waiting: dict[str, float | None] = {}
    finished = manifest.finished_jobs(engine)
    with engine.connect() as conn:  # ingest takes a job's WARCs together: list only new jobs'
        taken = manifest.jobs_in_manifest(conn, [job for job, _, _ in finished])
    for job, _hid, job_dir in finished:
        warcs = JobDir(job_dir).warcs
        if job not in taken and warcs.is_dir():
            for path in warcs.iterdir():
                if is_warc_name(path.name):
                    waiting[path.name] = _mtime(path)
    for name in manifest.known_names(engine, list(waiting)):
        del waiting[name]
    for entry in manifest.in_stages(engine, ("ingested",)):
        ingested = entry.ingested_at.timestamp() if entry.ingested_at else None
        waiting[entry.file_name] = _mtime(Path(entry.source_path)) or ingested
    times = [t for t in waiting.values() if t is not None]
    return len(waiting), (min(times) if times else None)


def readings(settings: Settings | None = None) -> list[Reading]:
    count, since = backlog(settings)
    lag = max(time.time() - since, 0.0) if since is not None else 0.0
    return [
        Reading(INDEX_PENDING, "Closed WARCs not indexed yet (queue of the indexing chain)", count),
        Reading(INDEX_LAG, "Seconds the oldest WARC not indexed yet has waited (0: none)", lag),
    ]
