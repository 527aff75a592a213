"""``harvestflow jobs``: crawl jobs: list, generate, resubmit those of a dead worker; act on a
running crawl (pause, resume, stop, filter, limits); a job's QA status and comments (``qa``).

A control action is recorded in the harvest database (who: ``--user``, default ``$USER``); the
crawler picks it up within a few seconds, wherever it runs. With ``--wait N`` the command waits
up to N seconds and prints when and how the crawler applied it. Exit codes of the control
commands: 0 applied (or recorded, without --wait), 1 refused or bad request, 2 still pending;
of ``qa``: 1 refused, or stored with URLs that the next transfer will not add.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from typing import Any

from app.cli.domain import fmt_size


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``jobs`` and its subcommands."""
    p = subparsers.add_parser("jobs", help="crawl jobs")
    sub = p.add_subparsers(dest="jobs_command", required=True)
    ls = sub.add_parser("list", help="jobs with status, channel and counts, newest first")
    ls.add_argument("--harvest", type=int, default=None, help="only this harvest definition id")
    ls.add_argument("--status", default=None, help="NEW, SUBMITTED, STARTED, DONE, FAILED...")
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    ls.set_defaults(func=cmd_jobs_list)
    gen = sub.add_parser("generate", help="generate the jobs of a definition for a date")
    gen.add_argument("harvest_id", type=int)
    gen.add_argument("--date", default=None, help="logical date (ISO; default now)")
    gen.add_argument("--generator", choices=["default", "fixed"], default=None)
    gen.set_defaults(func=cmd_jobs_generate)
    dead = sub.add_parser("resubmit-dead", help="resubmit jobs left by a dead worker")
    dead.add_argument("--older-than", type=int, default=3600, help="seconds without progress")
    dead.set_defaults(func=cmd_jobs_resubmit_dead)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("job_id", type=int)
        p.add_argument("--user", default=None, help="who asks (default: $USER)")
        p.add_argument("--wait", type=float, default=0, help="seconds to wait for the crawler")
        p.set_defaults(func=cmd_control)

    for name, text in (
        ("pause", "pause a running crawl (in-flight fetches finish; frontier saved)"),
        ("resume", "resume a paused crawl"),
        ("stop", "stop a running crawl cleanly (stopped by operator; the job is indexed)"),
    ):
        common(sub.add_parser(name, help=text))
    f = sub.add_parser("filter", help="reject URLs of a running crawl from now on")
    common(f)
    which = f.add_mutually_exclusive_group(required=True)
    which.add_argument("--regex", help="RE2 regex searched in each URL")
    which.add_argument("--surt", help="SURT prefix, e.g. 'org,example)/calendar'")
    f.add_argument("--name", default=None, help="the filter's name in crawl.log (default opN)")
    f.add_argument(
        "--save",
        choices=["domain", "definition"],
        default=None,
        help="also save as a crawler trap of the domain or the harvest definition",
    )
    f.add_argument("--domain", default=None, help="the domain for --save domain")
    lim = sub.add_parser("limits", help="change the limits of a running crawl (-1: none)")
    common(lim)
    lim.add_argument("--max-objects", type=int, default=None, help="per domain")
    lim.add_argument("--max-bytes", type=int, default=None, help="per domain")
    lim.add_argument("--max-time", type=int, default=None, help="seconds from the crawl's start")
    qa = sub.add_parser(
        "qa", help="a job's QA status and comments; with options, write a QA comment"
    )
    qa.add_argument("job_id", type=int)
    qa.add_argument("--status", default=None, help="not_checked, passed, issues or failed")
    qa.add_argument("--comment", default="", help="the comment's text")
    qa.add_argument(
        "--add-url", action="append", default=[], metavar="URL", help="add to the next harvest"
    )
    qa.add_argument("--max-objects", type=int, default=None, help="raise the budget (-1: none)")
    qa.add_argument("--max-bytes", type=int, default=None, help="raise the budget (-1: none)")
    qa.add_argument("--record", type=int, default=None, help="the record the directives are for")
    qa.add_argument("--user", default=None, help="who writes (default: $USER)")
    qa.set_defaults(func=cmd_jobs_qa)


def _user(args: argparse.Namespace) -> str:
    return str(args.user or os.environ.get("USER") or getpass.getuser())


def cmd_jobs_list(args: argparse.Namespace) -> int:
    from harvest.jobs import list_jobs
    from harvestflow.formats.job_status import JobStatus

    status = None
    if args.status is not None:
        key = args.status.upper()
        status = JobStatus[key] if key in JobStatus.__members__ else int(args.status)
    rows = list_jobs(harvest_id=args.harvest, status=status, limit=args.limit)
    if args.json:
        for row in rows:
            print(json.dumps(row, default=str))
        return 0
    # the harvest column as wide as its longest name: a one-off's name ends in its run's
    # date and time, which tells two one-offs apart
    width = max([24, *(len(r["harvest_name"]) for r in rows)])
    header = f"{'job':>7} {'harvest':<{width}} {'run':>4} {'status':<12} {'channel':<8} "
    header += f"{'configs':>7} {'objects':>9} {'bytes':>10}  created"
    print(header)
    for r in rows:
        status_text = r["status_name"]
        if r["resubmitted_as_job"]:
            status_text += f"->{r['resubmitted_as_job']}"
        print(
            f"{r['job_id']:>7} {r['harvest_name']:<{width}} {r['harvest_num']:>4} "
            f"{status_text:<12} {r['channel']:<8} {r['num_configs']:>7} {r['objects']:>9} "
            f"{fmt_size(r['bytes']):>10}  {r['creationdate']:%Y-%m-%d %H:%M}"
        )
    return 0


def cmd_jobs_generate(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from harvest.planning import generate_jobs

    when = datetime.fromisoformat(args.date) if args.date else datetime.now(UTC)
    jobs = generate_jobs(args.harvest_id, when, generator=args.generator)
    print(f"definition {args.harvest_id} at {when.isoformat()}: jobs {jobs}")
    return 0


def cmd_jobs_resubmit_dead(args: argparse.Namespace) -> int:
    from harvest.recovery import resubmit_dead_jobs

    result = resubmit_dead_jobs(stale_after_s=args.older_than)
    print(json.dumps(result, indent=1, default=str))
    return 0


def _arguments(args: argparse.Namespace) -> dict[str, Any]:
    cmd = args.jobs_command
    if cmd == "filter":
        out: dict[str, Any] = {
            "kind": "regex" if args.regex is not None else "surt",
            "pattern": args.regex if args.regex is not None else args.surt,
        }
        for key in ("name", "save", "domain"):
            if getattr(args, key) is not None:
                out[key] = getattr(args, key)
        return out
    if cmd == "limits":
        given = {
            "max_objects": args.max_objects,
            "max_bytes": args.max_bytes,
            "max_time_s": args.max_time,
        }
        return {k: v for k, v in given.items() if v is not None}
    return {}


def cmd_control(args: argparse.Namespace) -> int:
    from harvest.control import request
    from harvestflow.job_actions import ActionError, wait_for

    user = _user(args)
    try:
        action_id = request(args.job_id, args.jobs_command, _arguments(args), user)
    except ActionError as exc:
        print(f"job {args.job_id}: {exc}", file=sys.stderr)
        return 1
    print(f"job {args.job_id}: {args.jobs_command} requested by {user} (action {action_id})")
    if args.wait <= 0:
        return 0
    row = wait_for(action_id, args.wait)
    if row is None or row.state == "pending":
        print(f"action {action_id}: still pending after {args.wait:g}s (is the crawl running?)")
        return 2
    print(f"action {action_id}: {row.state} by the crawler at {row.applied_at}: {row.message}")
    return 0 if row.state == "applied" else 1


def cmd_jobs_qa(args: argparse.Namespace) -> int:
    from harvest import rights
    from harvest.common import engine_or_default
    from harvest.office import office_rights
    from harvest.selection import qa_feedback

    writes = args.status or args.comment or args.add_url
    writes = writes or args.max_objects is not None or args.max_bytes is not None
    engine = engine_or_default(None)
    problems: list[tuple[str, str]] = []
    if writes:
        try:
            with engine.begin() as conn:
                needed = office_rights.job_write(
                    conn, args.job_id, "comment jobs", record_id=args.record,
                    directives=bool(args.add_url) or args.max_objects is not None
                    or args.max_bytes is not None,
                )  # fmt: skip
                needed.check(conn, _user(args), rights.COMMAND_LINE)
                comment = qa_feedback.write_comment(
                    conn,
                    args.job_id,
                    _user(args),
                    args.comment,
                    status=args.status,
                    record_id=args.record,
                    add_urls=args.add_url,
                    max_objects=args.max_objects,
                    max_bytes=args.max_bytes,
                )
        except (qa_feedback.FeedbackError, rights.RightsError) as exc:
            print(f"harvestflow jobs qa: {exc}", file=sys.stderr)
            return 1
        problems = comment.url_problems()
        for url, why in problems:
            print(f"harvestflow jobs qa: {url!r} will not be added: {why}", file=sys.stderr)
    with engine.connect() as conn:
        status = qa_feedback.job_status(conn, args.job_id)
        comments = qa_feedback.comments(conn, job_id=args.job_id)
    print(f"job {args.job_id}: QA {status}")
    for c in comments:
        print(f"  {json.dumps(c.as_feed(), ensure_ascii=False)}")
    return 1 if problems else 0
