"""A crawl job's lease: one crawler per job across the cluster, taken over when it goes silent.

Why not a PID file: with the CeleryExecutor the previous crawler of a job may run on another
machine. The crawl task takes the job's row in ``job_leases`` (crawler/leases.py) before it
starts a crawler and hands the crawler the token; the crawler renews it while it runs. If the
worker and its crawler are killed, the heartbeats stop; once the lease expires the task's retry
on another worker takes it and resumes the job in the same job directory (frontier state, closed
WARCs, the ``.open`` WARC repaired: crawler/state.py, crawler/warc/files.py), so nothing fetched is
captured twice. A worker that comes back while another crawler holds the lease refuses to start
a second one (:class:`crawler.leases.LeaseHeld`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from crawler.lease_switches import JOB_LEASE_ENV
from crawler.lease_tables import JobLeases, LeaseHeld, holder_name, job_lease_engine
from harvestflow.services.datadir import check_data_dir
from harvestflow.settings import get_settings

log = logging.getLogger(__name__)


def lease_wait_s() -> float:
    """How long a crawl task asks for a job's lease: 1.5 × the TTL (a dead holder's expires)."""
    return 1.5 * float(get_settings().get("crawler", "job_lease_ttl_s", 90))


def check_worker_can_crawl() -> None:
    """With the celery executor: refuse a crawl on a machine without the shared data dir."""
    settings = get_settings()
    if settings.executor == "celery":
        check_data_dir(settings.data_dir)


# asked again this long after the held lease's expiry (the database's clock moved past it), and
# never sooner than ASK_FLOOR_S after the last question
EXPIRY_MARGIN_S = 0.05
ASK_FLOOR_S = 0.1


def _acquire(leases: JobLeases, job_id: int, holder: str, wait_s: float) -> None:
    """Take the lease, asking again for up to ``wait_s`` while another holder has it.

    Why wait: a retry after a lost worker may come before the dead crawler's lease expired;
    a live holder keeps renewing, so after ``wait_s`` (more than one TTL) it is refused.
    Why ask again at the lease's expiry, not at a fixed pace: a dead holder's lease frees at
    that moment, and asking every TTL / 6 left the job idle up to that long after it (15 s
    with the default TTL); a live holder renews every TTL / 3, so its lease is then further
    off, and the next question waits for that.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            leases.acquire(job_id, holder)
            return
        except LeaseHeld as held:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            pause = held.expires_in_s if held.expires_in_s is not None else leases.ttl_s / 6.0
            log.info(
                "job %s: leased by another crawler for %.1f s more; asking again then",
                job_id,
                pause,
            )
            time.sleep(min(max(pause + EXPIRY_MARGIN_S, ASK_FLOOR_S), max(left, ASK_FLOOR_S)))


def _still_held(leases: JobLeases, job_id: int, holder: str) -> bool:
    """Whether ``holder`` still has the job; true when the database cannot say (the original
    failure is then the one to report, not a guess about the lease)."""
    try:
        return leases.heartbeat(job_id, holder)
    except Exception:
        log.warning("job %s: could not check the lease after a failed crawl", job_id, exc_info=True)
        return True


@contextmanager
def job_lease(job_id: int, ttl_s: float | None = None, wait_s: float = 0.0) -> Iterator[str]:
    """Hold the job's lease for the block; crawler subprocesses started inside renew it.

    Raises :class:`crawler.leases.LeaseHeld` when another live crawler holds the job (after
    asking again for ``wait_s``).
    """
    ttl = float(ttl_s or get_settings().get("crawler", "job_lease_ttl_s", 90))
    leases = JobLeases(job_lease_engine(), ttl_s=ttl)
    holder = holder_name()
    try:
        _acquire(leases, job_id, holder, wait_s)
        log.info("job %s: lease taken by %s (ttl %ss)", job_id, holder, ttl)
        saved = {k: os.environ.get(k) for k in (JOB_LEASE_ENV, JOB_LEASE_ENV + "_TTL")}
        os.environ[JOB_LEASE_ENV] = f"{job_id}={holder}"
        os.environ[JOB_LEASE_ENV + "_TTL"] = str(ttl)
        lost = f"job {job_id}: the lease was lost to another crawler mid-crawl"
        try:
            try:
                yield holder
            except Exception as exc:
                # the crawl ended unfinished or failed: when another worker took the job over
                # meanwhile, that is the reason to report (its crawler stopped for it)
                if not _still_held(leases, job_id, holder):
                    raise LeaseHeld(lost) from exc
                raise
            if not leases.heartbeat(job_id, holder):
                # another worker took the job over while this crawler ran (it stopped itself):
                # the job's outcome is the new crawler's, not this task's
                raise LeaseHeld(lost)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            leases.release(job_id, holder)
    finally:
        leases.engine.dispose()
