"""``harvestflow preservation``: ingest, the manual queue, fixity audits and reports.

The commands call the same library functions as the ``preservation_ingest`` DAG, so what a crawl
engineer runs by hand is what production runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any


def _print(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def cmd_ingest(args: argparse.Namespace) -> int:
    from preservation.errors import TransientError
    from preservation.ingest import ingest_job, jobs_ready_for_preservation
    from preservation.outcomes import outcome_of

    jobs = args.job or jobs_ready_for_preservation(include_unindexed=args.include_unindexed)
    if not jobs:
        print("no job ready for preservation")
        return 0
    failed = 0
    for job_id in jobs:
        try:
            result = ingest_job(job_id)
        except TransientError as exc:
            print(
                f"job {job_id}: object store unavailable, run again later: {exc}", file=sys.stderr
            )
            failed += 1
            continue
        _print(result)
        failed += outcome_of(result).failed
    return 1 if failed else 0


def cmd_stage(args: argparse.Namespace) -> int:
    from preservation.outcomes import Outcome, outcome_of
    from preservation.staging import stage_package

    result = stage_package(args.job)
    _print(result)
    return 0 if outcome_of(result) in (Outcome.STAGED, Outcome.PRESERVED) else 1


def cmd_queue(args: argparse.Namespace) -> int:
    from preservation.manual_queue import preservation_queue

    queue = preservation_queue()
    if args.json:
        _print(queue)
        return 0
    if not queue:
        print("manual queue is empty")
    for item in queue:
        print(
            f"job {item['job_id']}  harvest definition {item['harvest_id']}"
            f" ({item['harvest_name']})  since {item['since']}\n  reason: {item['error']}"
        )
        if item["files"]:
            print(f"  files: {item['files']}")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from preservation.manual_queue import release_job

    _print(release_job(args.job, restage=args.restage, note=args.note or ""))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from preservation.report import preservation_report

    day = args.day or datetime.now(UTC).date().isoformat()
    result = preservation_report(day)
    with open(result["text_path"], encoding="utf-8") as fh:
        sys.stdout.write(fh.read())
    print(f"\n(report files: {result['text_path']}, {result['json_path']})")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from preservation.fixity import audit, summary_lines

    result = audit(share=args.share)
    if args.json:
        _print(result)
    else:
        print("\n".join(summary_lines(result)))
    return 1 if result["status"] == "failed" else 0


def cmd_status(args: argparse.Namespace) -> int:
    from preservation.fixity import audit_status

    status = audit_status()
    if args.json:
        _print(status)
        return 0
    print(
        f"copies: {', '.join(status['copies'])}; audit period {status['period_days']} days\n"
        f"preserved files: {status['files']}, verified in every copy within the period:"
        f" {status['verified_in_period']}, never verified in some copy:"
        f" {status['never_verified']}\n"
        f"oldest last verification: {status['oldest_verified'] or '-'};"
        f" copies found bad and not repaired: {status['bad_copies']}"
    )
    for run in status["runs"][:5]:
        print(
            f"audit {run['audit_id']} started {run['started_at']}"
            f" {'finished ' + str(run['finished_at']) if run['finished_at'] else 'unfinished'}:"
            f" {run['files']} files, good {run['good']}, repaired {run['repaired']},"
            f" failed {run['failed']}"
        )
    return 0


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``preservation {ingest,stage,queue,release,audit,status,report}``."""
    pres = subparsers.add_parser("preservation", help="preservation ingest (SPAR-like)")
    sub = pres.add_subparsers(dest="preservation_command", required=True)
    p = sub.add_parser("ingest", help="ingest jobs (default: every job ready)")
    p.add_argument("--job", type=int, action="append", help="job id (repeatable)")
    p.add_argument(
        "--include-unindexed",
        action="store_true",
        help="also DONE jobs absent from the indexing manifest (from job_dir/warcs)",
    )
    p.set_defaults(func=cmd_ingest)
    p = sub.add_parser("stage", help="build a job's bag in the temporary zone")
    p.add_argument("--job", type=int, required=True)
    p.set_defaults(func=cmd_stage)
    p = sub.add_parser("queue", help="list the manual queue with reasons")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_queue)
    p = sub.add_parser("release", help="put a job of the manual queue back into the flow")
    p.add_argument("--job", type=int, required=True)
    p.add_argument(
        "--restage",
        action="store_true",
        help="rebuild the bag (checksums taken again from the repository files)",
    )
    p.add_argument("--note", help="why (kept in the events)")
    p.set_defaults(func=cmd_release)
    p = sub.add_parser(
        "audit", help="fixity audit: re-read the files due in every copy, repair bad copies"
    )
    p.add_argument(
        "--share",
        type=float,
        help="share of the preserved files to read at least (default [preservation]"
        " audit_share_per_day); files not verified within the period are read anyway",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_audit)
    p = sub.add_parser("status", help="fixity audits' progress and the copies' state")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("report", help="daily statistics (DB and object store)")
    p.add_argument("--day", help="YYYY-MM-DD (default: today, UTC)")
    p.set_defaults(func=cmd_report)
