"""``harvestflow qc ...``: the curators' visual QC loop from a terminal.

- ``qc missing JOB [--json]``: the URLs that browsing the job's replay view (``job-<id>``)
  found missing, with counts, first/last seen and the patch harvest each was sent to;
- ``qc patch JOB [--url URL ...] [--user NAME] [--no-trigger]``: send them (all those not sent
  yet, or the chosen ones) to a patch harvest — a one-off definition with the job's template —
  and queue the ``oneoff_harvest`` DAG for it, as the job page's button does; refused unless
  ``--user`` is a curator of the job's collections (a curator where they name nobody).

Here and not in access/: queuing a DAG run goes through Airflow's CLI (:func:`app.runtime.dagrun.trigger`),
which a stage library does not call.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys


def cmd_missing(args: argparse.Namespace) -> int:
    from access import missing
    from access.config import AccessConfig
    from harvestflow.db import get_engine

    engine = get_engine()
    with engine.connect() as conn:
        found = missing.for_job(conn, args.job)
        patches = missing.patches_of(conn, args.job)
    if args.json:
        rows = [
            {
                **m.__dict__,
                "first_seen": m.first_seen.isoformat(),
                "last_seen": m.last_seen.isoformat(),
            }
            for m in found
        ]
        print(json.dumps({"job": args.job, "missing": rows, "patches": patches}, default=str))
        return 0
    view = AccessConfig.from_settings().url + missing.job_collection(args.job) + "/"
    print(f"job {args.job}: {len(found)} missing URL(s); view {view}")
    for m in found:
        sent = f"  patch {m.patch_id} (definition {m.patch_harvest_id})" if m.patch_id else ""
        kind = "embed" if m.embed else "page "
        print(f"{kind} {m.hits:5d}  {m.last_seen:%Y-%m-%d %H:%M}  {m.url}{sent}")
    return 0


def cmd_patch(args: argparse.Namespace) -> int:
    from access.patches import PatchError, request_patch
    from app.runtime.dagrun import queue_run
    from harvest import rights
    from harvest.office.office_rights import job_write
    from harvestflow.db import get_engine

    user = args.user or os.environ.get("USER") or getpass.getuser()
    try:
        with get_engine().connect() as conn:  # a curator of the job's collections
            job_write(conn, args.job, "patch jobs").check(conn, user, rights.COMMAND_LINE)
        patch = request_patch(
            get_engine(),
            args.job,
            user,
            None if args.no_trigger else queue_run,
            urls=args.url or None,
        )
    except (PatchError, rights.RightsError) as exc:
        print(f"harvestflow: {exc}", file=sys.stderr)
        return 1
    started = f"; DAG run {patch.dag_run_id} queued" if patch.dag_run_id else " (not started)"
    print(
        f"patch {patch.patch_id} of job {patch.job_id}: {len(patch.urls)} URL(s),"
        f" one-off definition {patch.harvest_id}{started}"
    )
    return 0


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "qc", help="curators' visual QC: missing URLs of a job, patch harvest"
    )
    sub = p.add_subparsers(dest="qc_command", required=True)
    s = sub.add_parser("missing", help="URLs the job's replay view could not serve")
    s.add_argument("job", type=int)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_missing)
    s = sub.add_parser("patch", help="harvest the job's missing URLs in a one-off patch harvest")
    s.add_argument("job", type=int)
    s.add_argument("--url", action="append", help="only this missing URL (repeatable)")
    s.add_argument("--user", help="who asks (default $USER)")
    s.add_argument(
        "--no-trigger", action="store_true", help="create and record it; do not queue the DAG"
    )
    s.set_defaults(func=cmd_patch)
