"""``harvestflow up``: the services and Airflow on this machine, until Ctrl-C.

The CLI hands ``up`` the demo site's starter, so that app.runtime.up does not import the demo.
"""

from __future__ import annotations

import argparse


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``up``."""
    p = subparsers.add_parser(
        "up", help="start services and Airflow (UI); Ctrl-C stops what it started"
    )
    p.add_argument("--no-sample-site", action="store_true", help="do not serve the sample website")
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help='with [airflow] executor = "celery": also start N local Celery workers (all queues)',
    )
    p.set_defaults(func=cmd_up)


def cmd_up(args: argparse.Namespace) -> int:
    from app.demo.samplesite_service import start_demo_site
    from app.runtime.up import run_up

    site = None if args.no_sample_site else start_demo_site
    return run_up(sample_site=site, workers=args.workers)
