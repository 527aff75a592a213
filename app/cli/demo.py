"""``harvestflow demo``: the whole cycle on the sample site, through the DAGs."""

from __future__ import annotations

import argparse


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``demo``."""
    p = subparsers.add_parser(
        "demo", help="run the whole cycle on the sample site through the DAGs"
    )
    p.add_argument("--keep-services", action="store_true", help="leave PostgreSQL/S3 running")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from app.demo.run import run_demo

    return run_demo(keep_services=args.keep_services)
