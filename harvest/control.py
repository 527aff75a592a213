"""Operators' requests to a running crawl job: pause, resume, stop, filter, limits.

Why here and not only in harvestflow/job_actions.py: a filter may also be saved as a crawler
trap of the domain or of the job's harvest definition (harvest/traps.py), so that the next run
starts with it — planning-stage data. The CLI (``harvestflow jobs``) and the curator pages
request through :func:`request`; the crawler applies (crawler/control.py).
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harvest.common import engine_or_default
from harvest.jobs import job_status
from harvest.traps import add_trap
from harvestflow.audit import record_audit
from harvestflow.formats.job_status import RUNNING
from harvestflow.job_actions import ActionError, check_arguments, insert_action

log = logging.getLogger(__name__)


def request(
    job_id: int,
    action: str,
    arguments: dict[str, Any] | None,
    user: str,
    engine: Engine | None = None,
) -> int:
    """Record the action for the job's crawler (and save a filter as asked); its id."""
    engine = engine_or_default(engine)
    args = check_arguments(action, arguments or {})
    if not user or not user.strip():
        raise ActionError("who asks must be named (a user name)")
    with engine.begin() as conn:
        # the job must be running (SUBMITTED or STARTED): an action on a finished job would
        # never be applied
        status = job_status(conn, job_id)
        if status is None:
            raise ActionError(f"job {job_id} does not exist")
        if status not in RUNNING:  # SUBMITTED, STARTED
            raise ActionError(f"job {job_id} is not running (status {status})")
        action_id = insert_action(conn, job_id, action, args, user)
        record_audit(conn, user, f"job.{action}", f"job {job_id}", {"action_id": action_id, **args})
    if action == "filter" and args.get("save"):
        try:
            if args["save"] == "domain":
                add_trap(args["pattern"], domain=str(args["domain"]), engine=engine)
            else:
                with engine.connect() as conn:
                    harvest_id = conn.execute(
                        sa.text("SELECT harvest_id FROM jobs WHERE job_id = :j"), {"j": job_id}
                    ).scalar_one()
                add_trap(args["pattern"], harvest_id=int(harvest_id), engine=engine)
        except (LookupError, ValueError) as exc:
            raise ActionError(
                f"action {action_id} requested, but the filter was not saved: {exc}"
            ) from None
    return action_id
