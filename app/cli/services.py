"""``harvestflow services start|stop|status``: the embedded PostgreSQL, S3 and broker."""

from __future__ import annotations

import argparse


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``services``."""
    p = subparsers.add_parser(
        "services", help="start, stop or inspect the embedded PostgreSQL and S3"
    )
    p.add_argument("action", choices=["start", "stop", "status"])
    p.set_defaults(func=cmd_services)


def cmd_services(args: argparse.Namespace) -> int:
    from harvestflow import services
    from harvestflow.settings import get_settings

    settings = get_settings()
    if args.action == "start":
        started = services.start_all(settings)
        print("started: " + (", ".join(started) if started else "nothing (already running)"))
    elif args.action == "stop":
        stopped = services.stop_all(settings)
        print("stopped: " + (", ".join(stopped) if stopped else "nothing (not running)"))
    for status in services.status_all(settings):
        print(status.line())
    return 0
