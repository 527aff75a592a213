"""Send a job's missing URLs to a patch harvest (the curators' visual QC loop's last step).

Why here: the curator pages' button and the CLI must do the same thing — pick the URLs (all
the job's missing URLs not sent yet, or a chosen subset of its missing URLs), create the
one-off definition that harvests them with the job's template (:func:`harvest.oneoff.create_patch_harvest`),
record which URLs went to it (:mod:`access.missing`), then start the ``oneoff_harvest`` DAG
for that definition through ``trigger`` (given by the caller: the DAG is Airflow's, and this
library never imports it). The patch's captures join the job's view and its definition's
collection (:mod:`access.jobviews`, :mod:`access.definitions`), and ``all`` like any capture.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from access import missing
from access.errors import AccessError
from harvest.oneoff import create_patch_harvest
from harvestflow.audit import record_audit

log = logging.getLogger(__name__)

DAG_ID = "oneoff_harvest"
# (dag_id, conf, run_id, logical_date) → the DAG run id Airflow gave
Trigger = Callable[[str, dict[str, Any], str, datetime], str]


class PatchError(AccessError, ValueError):
    """A patch that cannot be sent (no such job, nothing to send, a URL not missing there)."""


@dataclass(frozen=True)
class Patch:
    patch_id: int
    job_id: int
    harvest_id: int  # the one-off definition
    urls: tuple[str, ...]
    conf: dict[str, Any]  # the oneoff_harvest DAG's form
    run_id: str
    logical_date: datetime
    dag_run_id: str | None = None


def _chosen(engine: sa.Engine, job_id: int, urls: Iterable[str] | None) -> list[str]:
    with engine.connect() as conn:
        known = missing.for_job(conn, job_id, limit=100_000)
    if urls is None:
        chosen = [m.url for m in known if m.patch_id is None]
        if not chosen:
            raise PatchError(f"job {job_id}: no missing URL left to send to a patch harvest")
        return chosen
    wanted = list(dict.fromkeys(u.strip() for u in urls if u.strip()))
    recorded = {m.url for m in known}
    strangers = [u for u in wanted if u not in recorded]
    if strangers:
        raise PatchError(f"job {job_id}: not among its missing URLs: {', '.join(strangers[:5])}")
    if not wanted:
        raise PatchError(f"job {job_id}: no URL chosen")
    return wanted


def request_patch(
    engine: sa.Engine,
    job_id: int,
    user: str,
    trigger: Trigger | None,
    urls: Iterable[str] | None = None,
) -> Patch:
    """Create and start the patch harvest of a job's missing URLs (``urls`` None: all those not
    sent yet). ``trigger`` None creates and records it without starting the DAG."""
    chosen = _chosen(engine, job_id, urls)
    now = datetime.now(UTC).replace(microsecond=0)
    # unique: the one-off definition is named after it (the same name is the same definition)
    run_id = f"patch-job-{job_id}-{now:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    try:
        hid, origin = create_patch_harvest(job_id, chosen, run_id, engine)
    except ValueError as exc:  # OneOffError: the job or a URL, named
        raise PatchError(f"job {job_id}: {exc}") from None
    with engine.begin() as conn:
        patch_id = missing.add_patch(conn, job_id, origin.harvest_id, hid, chosen, user)
        record_audit(conn, user, "job.patch", f"job {job_id}",
                     {"patch_id": patch_id, "harvest_id": hid, "urls": chosen})  # fmt: skip
    patch = Patch(patch_id, job_id, hid, tuple(chosen), {"harvest_id": hid}, run_id, now)
    log.info("patch %s of job %s: %d URL(s), definition %s", patch_id, job_id, len(chosen), hid)
    if trigger is None:
        return patch
    try:
        dag_run_id = trigger(DAG_ID, patch.conf, run_id, now)
    except Exception as exc:  # recorded, not started: say how to start it
        raise PatchError(
            f"patch {patch_id} of job {job_id} recorded (definition {hid}) but {DAG_ID} could"
            f" not be started ({exc}); trigger {DAG_ID} with harvest_id {hid}"
        ) from exc
    missing.set_dag_run(engine, patch_id, dag_run_id)
    return replace(patch, dag_run_id=dag_run_id)
