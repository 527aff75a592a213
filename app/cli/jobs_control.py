"""``harvestflow jobs pause|resume|stop|filter|limits JOB``: act on a running crawl.

The action is recorded in the harvest database (who: ``--user``, default ``$USER``); the
crawler picks it up within a few seconds, wherever it runs. With ``--wait N`` the command
waits up to N seconds and prints when and how the crawler applied it.
Exit codes: 0 applied (or recorded, without --wait), 1 refused or bad request, 2 still pending.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any


def _user() -> str:
    return os.environ.get("USER") or getpass.getuser()


def add_control_cli(jobs: argparse._SubParsersAction) -> None:
    """The control subcommands of ``harvestflow jobs``."""

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
        common(jobs.add_parser(name, help=text))
    f = jobs.add_parser("filter", help="reject URLs of a running crawl from now on")
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
    lim = jobs.add_parser("limits", help="change the limits of a running crawl (-1: none)")
    common(lim)
    lim.add_argument("--max-objects", type=int, default=None, help="per domain")
    lim.add_argument("--max-bytes", type=int, default=None, help="per domain")
    lim.add_argument("--max-time", type=int, default=None, help="seconds from the crawl's start")


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

    user = args.user or _user()
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
