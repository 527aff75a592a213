"""``harvestflow worker``: an Airflow Celery worker with harvestflow's environment."""

from __future__ import annotations

import argparse
import sys


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``worker``."""
    p = subparsers.add_parser(
        "worker",
        help='an Airflow Celery worker ([airflow] executor = "celery") on this machine; needs '
        "PostgreSQL, the broker, S3 and the shared data directory",
    )
    p.add_argument(
        "--queues",
        help="comma-separated queues, e.g. crawl_high or crawl_low,default (default: all)",
    )
    p.add_argument("--name", help="worker name (Celery hostname and task hostname; default FQDN)")
    p.add_argument(
        "--concurrency", type=int, help="task instances at once ([airflow] worker_concurrency)"
    )
    p.add_argument(
        "--skip-serve-logs",
        action="store_true",
        help="do not serve task logs on the log port (when the api-server reads the log folder)",
    )
    p.set_defaults(func=cmd_worker)


def cmd_worker(args: argparse.Namespace) -> int:
    """An Airflow Celery worker with harvestflow's environment (executor "celery")."""
    from app.runtime.workers import parse_queues, run_worker
    from harvestflow.services.datadir import DataDirError
    from harvestflow.settings import get_settings

    settings = get_settings()
    try:
        queues = parse_queues(args.queues, settings)
        return run_worker(
            settings,
            queues,
            name=args.name,
            concurrency=args.concurrency,
            serve_logs=not args.skip_serve_logs,
        )
    except (DataDirError, ValueError) as exc:
        print(f"harvestflow worker: {exc}", file=sys.stderr)
        return 2
