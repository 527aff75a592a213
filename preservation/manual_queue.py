"""The manual queue: list what waits for a person, and release a job once the cause is fixed.

Why release is explicit: a serious error (checksum mismatch, missing file, invalid bag, storage
conflict) means someone has to look — restore the file from backup, or decide that the file as it
is now is the right one. ``release`` puts the job back in the automatic flow; with ``restage``
the temporary-zone bag is rebuilt, so the checksums are taken again from the repository files
(use it when the files themselves were repaired). Files already verified in storage stay so.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from harvestflow.db import get_engine
from harvestflow.settings import Settings, get_settings
from preservation import records

log = logging.getLogger(__name__)


def preservation_queue(settings: Settings | None = None) -> list[dict[str, Any]]:
    """Packages in the manual queue, oldest first, with their reason and failing files."""
    settings = settings or get_settings()
    with get_engine(settings.harvest_db_url).connect() as conn:
        return records.manual_queue(conn)


def release_job(
    job_id: int, settings: Settings | None = None, *, restage: bool = False, note: str = ""
) -> dict[str, Any]:
    """Take a job out of the manual queue so that the next ingest run retries it."""
    settings = settings or get_settings()
    engine = get_engine(settings.harvest_db_url)
    with engine.begin() as conn:
        package = records.get_package(conn, job_id)
        if package is None or package["status"] != "manual":
            status = package["status"] if package else "absent"
            raise ValueError(f"job {job_id} is not in the manual queue (package {status})")
        conn.execute(
            sa.text(
                "UPDATE preservation_files SET status = 'pending', error = NULL"
                " WHERE job_id = :j AND status <> 'verified'"
            ),
            {"j": job_id},
        )
        records.set_package_status(conn, job_id, "staged")
        records.add_event(
            conn, job_id, "released", f"{'restage; ' if restage else ''}{note}".strip("; ")
        )
    bag_path = package.get("bag_path") or ""
    if restage and bag_path and Path(bag_path).exists():
        shutil.rmtree(bag_path)
        log.info("job %s: staged bag %s removed, it will be rebuilt", job_id, bag_path)
    log.info("job %s released from the manual queue", job_id)
    return {"job_id": job_id, "status": "staged", "restaged": restage}
