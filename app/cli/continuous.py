"""``harvestflow continuous ...``: launch an hour, crawl, report, noise rules, host policies.

Registered by app/cli/main.py through :func:`add_cli` (handlers import lazily). Here and not
in harvest/continuous: a crawl gives the continuous crawl the indexing package's live index,
and harvest sits below indexing in the layering.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from typing import Any


def add_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("continuous", help="continuous crawl with adaptive revisiting")
    sub = p.add_subparsers(dest="continuous_command", required=True)
    la = sub.add_parser("launch", help="inject the seeds due in an hour (idempotent)")
    la.add_argument("--hour", default=None, help="ISO hour, default: the coming hour (UTC)")
    la.add_argument("--keep-quotas", action="store_true", help="do not reset seed quotas")
    la.set_defaults(func=cmd_launch)
    cr = sub.add_parser("crawl", help="run bounded crawl batches for a while")
    cr.add_argument("--minutes", type=float, default=10.0)
    cr.add_argument("--batch-size", type=int, default=None)
    cr.set_defaults(func=cmd_crawl)
    rp = sub.add_parser("report", help="due / overdue / per-host intervals and change rates")
    rp.set_defaults(func=cmd_report)
    ru = sub.add_parser("rule", help="add a noise rule (regex on URL, regex removed from body)")
    ru.add_argument("url_pattern")
    ru.add_argument("remove_pattern")
    ru.add_argument("--comment", default="")
    ru.set_defaults(func=cmd_rule)
    hp = sub.add_parser("host-policy", help="override the revisit policy for one host")
    hp.add_argument("host")
    hp.add_argument("overrides", help='JSON of RevisitPolicy keys, e.g. {"max_wait_s": 3600}')
    hp.set_defaults(func=cmd_host_policy)


def _hour(value: str | None) -> dt.datetime:
    if value:
        parsed = dt.datetime.fromisoformat(value)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    now = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    return now + dt.timedelta(hours=1)


def cmd_launch(args: argparse.Namespace) -> int:
    from harvest.continuous.service import launch

    result = launch(_hour(args.hour), reset_quotas=not args.keep_quotas)
    print(json.dumps(result.__dict__, indent=1))
    return 0


def cmd_crawl(args: argparse.Namespace) -> int:
    from harvest.continuous.service import crawl_for
    from indexing.nrt import LiveWatcher

    result = crawl_for(args.minutes * 60, batch_size=args.batch_size, live_index=LiveWatcher)
    print(json.dumps(result, indent=1))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from harvest.continuous.service import report_text

    print(report_text())
    return 0


def cmd_rule(args: argparse.Namespace) -> int:
    from harvest.continuous.noise import add_rule
    from harvestflow.db import get_engine

    add_rule(get_engine(), args.url_pattern, args.remove_pattern, args.comment)
    return 0


def cmd_host_policy(args: argparse.Namespace) -> int:
    from harvest.continuous.store import set_host_policy
    from harvestflow.db import get_engine

    set_host_policy(get_engine(), args.host, json.loads(args.overrides))
    return 0
